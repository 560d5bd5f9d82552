"""A starting worker writes its periodic declarations to Redis and removes retired ones.

Each declared job is saved in sidekiq-cron's layout (`djqueue.store.periodic.PeriodicStore.save`):
its schedule, job and arguments follow the code, while its status (an operator may have
disabled it) and its last run stay as Redis has them.

**Removal.** An entry that djqueue declared (``source`` = djqueue) and that this process no
longer declares is deleted only if no live worker declares it either: every worker lists its
declarations in its heartbeat's ``info`` (``periodic``). So during a rolling deploy, while a
worker of the older release still runs and declares the job, the entry stays and keeps firing;
the first worker to start after the last such worker has stopped removes it. Entries written
by Ruby's sidekiq-cron or by hand (no ``source``) are never removed by djqueue.

**Repair.** A declared entry whose keys hold the wrong type (a string where the hash should
be) is written again in place of them, with one log line naming each key replaced: the entry
is djqueue's own and the code says what it holds. The current tick is taken from Redis's
clock, so a host whose clock runs ahead never claims a tick that has not come.
"""

from __future__ import annotations

import redis

from ..api.process import ProcessSet
from ..config import Settings
from ..periodic_cron import iso, parse
from ..periodic_declaration import Periodic, is_declared
from ..store import Keys, ProcessStore
from ..store.periodic import PeriodicStore
from .log import logger


def sync(
    declarations: list[Periodic], settings: Settings, redis_client: redis.Redis
) -> tuple[list[str], list[str]]:
    """Save ``declarations``, remove retired entries; returns (created, removed) names.
    Raises `djqueue.store.periodic.BadPeriodicSet` when ``cron_jobs`` is not a set."""
    keys = Keys(settings.namespace)
    store = PeriodicStore(redis_client, keys)
    now = ProcessStore(redis_client, keys).server_time()
    created: list[str] = []
    for entry in declarations:
        tick = parse(entry.cron).previous(now)
        new, replaced = store.save(entry.name, entry.fields(), (tick, iso(tick)), entry.enabled)
        for what in replaced:
            logger.warning("periodic %s: %s; written again as declared", entry.name, what)
        if new:
            created.append(entry.name)
            logger.info("periodic %s added: %s -> %s", entry.name, entry.cron, entry.job)
    mine = {entry.name for entry in declarations}
    retired = [
        name
        for name, stored in store.read_all().items()
        if is_declared(stored.fields) and name not in mine
    ]
    if not retired:
        return created, []
    elsewhere = declared_by_live_workers(settings, redis_client)
    removed = []
    for name in retired:
        if name in elsewhere:
            logger.info("periodic %s: not declared here, kept (a running worker declares it)", name)
            continue
        store.delete(name)
        removed.append(name)
        logger.info("periodic %s removed: no running worker declares it", name)
    return created, removed


def declared_by_live_workers(settings: Settings, redis_client: redis.Redis) -> set[str]:
    """The names every live process lists in its ``info`` (``periodic``)."""
    names: set[str] = set()
    for process in ProcessSet(settings=settings, redis_client=redis_client):
        listed = process.info.get("periodic")
        if isinstance(listed, list):
            names.update(name for name in listed if isinstance(name, str))
    return names
