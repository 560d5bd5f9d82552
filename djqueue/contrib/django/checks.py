"""System checks: ``manage.py check`` names a bad ``DJQUEUE`` key, and warns when Redis does not
answer (a warning, not an error: a web process may start before Redis does) or when the outbox
is in use and nothing relays it."""

from __future__ import annotations

from typing import Any

from django.core import checks

from djqueue.config import Settings
from djqueue.connection import CONNECTION_ERRORS, make_redis
from djqueue.errors import ConfigurationError, RedisUnavailable

from . import conf


@checks.register("djqueue")
def check_settings(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    try:
        settings = conf.validate(conf.raw())
    except ConfigurationError as exc:
        return [
            checks.Error(
                f"DJQUEUE[{exc.setting.upper()!r}]: {str(exc).partition(': ')[2]}",
                hint="See docs/django.md for the keys DJQUEUE takes.",
                obj="settings.DJQUEUE",
                id="djqueue.E001",
            )
        ]
    return _check_queues(settings) + _check_redis(settings)


def used_queues() -> dict[str, str]:
    """Queue name -> what sends jobs there: the registered jobs' ``queue`` option, the
    ``django.tasks`` queues of djqueue backends, and the default queue."""
    from djqueue import get_settings, registry

    from .apps import task_queues

    used = {get_settings().default_queue: "the default queue"}
    for name in registry.names():
        queue = getattr(registry.get(name), "job_options", {}).get("queue")
        if isinstance(queue, str):
            used.setdefault(queue, f"job {name}")
    for queue, alias in task_queues().items():
        used.setdefault(queue, f"TASKS[{alias!r}]")
    return used


def _check_queues(settings: Settings) -> list[checks.CheckMessage]:
    """A queue jobs go to that no worker started with these settings listens to: its jobs would
    wait for ever, silently."""
    listened = {name for name, _ in settings.queues}
    return [
        checks.Warning(
            f"queue {queue!r} ({source}) is not in DJQUEUE['QUEUES'] {sorted(listened)}: "
            f"a worker started with these settings never runs its jobs",
            hint=f"Add it to DJQUEUE['QUEUES'], or start a worker with -q {queue} (then "
            f"silence this with SILENCED_SYSTEM_CHECKS = ['djqueue.W002']).",
            obj="settings.DJQUEUE",
            id="djqueue.W002",
        )
        for queue, source in sorted(used_queues().items())
        if queue not in listened
    ]


def _check_redis(settings: Settings) -> list[checks.CheckMessage]:
    client = make_redis(settings.replace(connect_timeout=1.0, socket_timeout=1.0))
    try:
        client.ping()
        return _check_relay(settings, client)
    except CONNECTION_ERRORS as exc:
        return [
            checks.Warning(
                f"Redis at {settings.safe_redis_url} is unreachable: {exc}",
                hint="Start Redis or set DJQUEUE['REDIS_URL']; jobs cannot be pushed until then.",
                obj="settings.DJQUEUE",
                id="djqueue.W001",
            )
        ]
    finally:
        client.close()


#: Seconds after which a row still in the outbox means nothing relays it (the grace period,
#: then a relay round every second, are far shorter).
STALE_OUTBOX_SECONDS = 60.0


def _outbox_in_use() -> bool:
    from .outbox import outbox_chosen

    return outbox_chosen()


def _check_relay(settings: Settings, client: Any) -> list[checks.CheckMessage]:
    """W004: the outbox is in use and Redis answers, but no live worker process says it relays
    (``"outbox"`` in the ``info["duties"]`` of a process whose heartbeat hash has not expired,
    i.e. that beat within the last minute): rows a commit leaves behind would stay there. A
    check runs before workers may have started, so this is a warning."""
    if not _outbox_in_use():
        return []
    from djqueue.api import ProcessSet
    from djqueue.outbox import DUTY

    try:  # read only: a check prunes nothing
        processes = ProcessSet(clean=False, settings=settings, redis_client=client).processes()
    except RedisUnavailable:
        return []
    if any(DUTY in (p.info.get("duties") or ()) for p in processes):
        return []
    return [
        checks.Warning(
            "the outbox is in use but no live djqueue worker relays it: jobs whose push after "
            "the commit failed stay in the outbox table",
            hint="Start a worker (manage.py runworker) with the same DJQUEUE settings; it "
            "relays when ENQUEUE_ON_COMMIT is 'outbox' or OUTBOX_RELAY is True.",
            obj="settings.DJQUEUE",
            id="djqueue.W004",
        )
    ]


@checks.register("djqueue", checks.Tags.database)
def check_outbox_age(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """W005 (database checks: ``check --database default``, ``migrate``): the oldest outbox
    row is older than `STALE_OUTBOX_SECONDS`, so whatever relays is not keeping up, or nothing
    does."""
    try:
        if not _outbox_in_use():
            return []
        from .outbox import stats

        found = stats()
    except Exception:  # a bad setting (E001 says so) or a database not migrated yet
        return []
    if found is None or found.oldest_age is None or found.oldest_age <= STALE_OUTBOX_SECONDS:
        return []
    return [
        checks.Warning(
            f"the outbox holds {found.size} job(s), the oldest {found.oldest_age:.0f} s old: "
            "no worker is relaying them, or Redis refuses them",
            hint="Start a worker (manage.py runworker) and read its log for 'duty outbox'.",
            obj="settings.DJQUEUE",
            id="djqueue.W005",
        )
    ]
