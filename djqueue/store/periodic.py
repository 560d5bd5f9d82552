"""Periodic jobs in sidekiq-cron's layout: the schedule, its claims, its history.

Written here in 1.8's key names; sidekiq-cron 2's add its namespace (``cron_jobs:default``,
``cron_job:default:NAME``...), and which of the two is in use is read from Redis at each step
(`djqueue.store.periodic_layout`).

- ``cron_jobs``: a set of ``cron_job:NAME`` members, one per periodic job.
- ``cron_job:NAME``: a hash with sidekiq-cron's fields (``name``, ``cron``, ``klass``, ``args``,
  ``message``, ``status``, ``description``, ``last_enqueue_time``...) and two of djqueue's own,
  which sidekiq-cron ignores: ``source`` and ``catch_up``. A time zone has no field: it ends
  the ``cron`` text (``0 9 * * * Europe/Paris``), where sidekiq-cron's parser reads it too.
- ``cron_job:NAME:enqueued``: a sorted set of the ticks claimed, the tick's ISO 8601 UTC time
  scored by its epoch. ZADD returning 1 is the claim: whichever poller adds a tick first, Ruby
  or Python, pushes it, and every other one sees 0.
- ``cron_job:NAME:jid_history``: the last jids pushed, newest first.

The store decides nothing: which tick is due, and whether to catch one up, is the worker's
periodic poller's business (`djqueue.worker.periodic_poller`). It does say when a key holds the
wrong type (`StoredEntry.problem`, `BadPeriodicSet`), so that one bad entry is shown and skipped
instead of failing every read of the schedule; the scripts check the types before their first
write.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import redis

from .bad_keys import type_name
from .keys import CRON_HISTORY_SIZE, CRON_REMEMBER, Keys
from .periodic_layout import PeriodicLayout, detect, layouts
from .replies import text
from .scripts import PERIODIC_FIRE, PERIODIC_SAVE, PERIODIC_STATUS

#: What `PeriodicStore.fire` answers (`NOT_UNIQUE`: the tick is claimed, the job not pushed,
#: as another job holds its unique lock).
FIRED, CLAIMED_BEFORE, DISABLED, GONE, NOT_UNIQUE = 1, 0, -1, -2, 2
#: The script's answer when it was given 1.8's layout but sidekiq-cron 2's set exists.
_MOVED = -3
#: The type each key of an entry must have (or be absent), as ``TYPE`` names it.
HASH, ZSET, LIST = "hash", "zset", "list"


class BadPeriodicSet(Exception):
    """``cron_jobs`` is not a set: no periodic job can be read or declared until it is
    deleted. Not a `redis.RedisError`, so that callers never take it for an outage."""


@dataclass
class StoredEntry:
    """One entry as Redis holds it: its hash (empty when the key is not a hash) and why its
    keys cannot be used, or ``""``."""

    fields: dict[str, str]
    problem: str = ""
    #: What ``cron_job:NAME`` holds, as ``TYPE`` names it.
    held: str = HASH
    #: The hash's key (``cron_job:NAME``, or ``cron_job:default:NAME`` in sidekiq-cron 2's layout).
    key: str = ""


def wrong_type(key: str, kind: str, expected: str) -> str:
    """What a key of the wrong type is told as: ``cron_job:x is a string, not a hash``."""
    return f"{key} is {type_name(kind)}, not {type_name(expected)}"


class PeriodicStore:
    def __init__(self, client: redis.Redis, keys: Keys) -> None:
        self.redis = client
        self.keys = keys

    def layout(self) -> PeriodicLayout:
        """The layout in use now (sidekiq-cron 1.8's or 2's), read from Redis."""
        return detect(self.redis, self.keys.prefix)

    def names(self, layout: PeriodicLayout | None = None) -> list[str]:
        """Every periodic job's name, sorted (members that are not ``cron_job:NAME`` skipped).
        Raises `BadPeriodicSet` when ``cron_jobs`` is not a set."""
        at = layout or self.layout()
        try:
            found = self.redis.smembers(at.jobs)
        except redis.ResponseError as exc:
            if not str(exc).startswith("WRONGTYPE"):
                raise
            kind = text(self.redis.type(at.jobs))
            raise BadPeriodicSet(
                f"{wrong_type(at.jobs, kind, 'set')}: no periodic job can be read "
                f"or declared until it is deleted"
            ) from None
        names = (at.name_of(text(m)) for m in found)
        return sorted(name for name in names if name is not None)

    def size(self) -> int:
        """Members of ``cron_jobs``: the periodic jobs in Redis."""
        return int(self.redis.scard(self.layout().jobs))

    def read_all(self) -> dict[str, StoredEntry]:
        """name -> the entry, in two round trips; members without a hash are left out
        (sidekiq-cron's ``Job.all`` does the same). An entry whose keys hold the wrong type
        is returned with its `StoredEntry.problem`, never raised: one bad entry must not hide
        the others."""
        at = self.layout()
        names = self.names(at)
        pipe = self.redis.pipeline(transaction=False)
        for name in names:
            self._read(pipe, at, name)
        replies = _replies(pipe)
        found: dict[str, StoredEntry] = {}
        for i, name in enumerate(names):
            entry = self._entry(at, name, replies[4 * i : 4 * i + 4])
            if entry is not None:
                found[name] = entry
        return found

    def read(self, name: str) -> StoredEntry | None:
        at = self.layout()
        pipe = self.redis.pipeline(transaction=False)
        self._read(pipe, at, name)
        return self._entry(at, name, _replies(pipe))

    def _read(self, pipe: Any, at: PeriodicLayout, name: str) -> None:
        pipe.type(at.job(name))
        pipe.hgetall(at.job(name))
        pipe.type(at.enqueued(name))
        pipe.type(at.history(name))

    def _entry(self, at: PeriodicLayout, name: str, replies: list[Any]) -> StoredEntry | None:
        kind, raw, claims, history = text(replies[0]), replies[1], *map(text, replies[2:])
        if kind == "none":
            return None
        problems = [
            wrong_type(key, found, expected)
            for key, found, expected in (
                (at.job(name), kind, HASH),
                (at.enqueued(name), claims, ZSET),
                (at.history(name), history, LIST),
            )
            if found not in (expected, "none")
        ]
        fields = {text(f): text(v) for f, v in raw.items()} if isinstance(raw, dict) else {}
        return StoredEntry(fields, "; ".join(problems), kind, at.job(name))

    def history(self, name: str) -> list[dict[str, Any]]:
        """The jid history, newest first; entries that are not JSON objects are skipped, and
        a history key of the wrong type reads as empty (the entry's problem says why)."""
        entries = []
        try:
            raws = self.redis.lrange(self.layout().history(name), 0, -1)
        except redis.ResponseError as exc:
            if not str(exc).startswith("WRONGTYPE"):
                raise
            return []
        for raw in raws:
            try:
                entry = json.loads(raw)
            except ValueError:
                continue
            if isinstance(entry, dict):
                entries.append(entry)
        return entries

    def last_claim(self, name: str) -> float | None:
        """The epoch of the latest tick claimed (fired, or skipped on declaration)."""
        top = self.redis.zrange(self.layout().enqueued(name), -1, -1, withscores=True)
        return float(top[0][1]) if top else None

    def save(
        self, name: str, fields: dict[str, str], tick: tuple[float, str], enabled: bool = True
    ) -> tuple[bool, list[str]]:
        """Write a declared job; ``tick`` (epoch, ISO) is claimed if the job is new or its cron
        changed. Its keys that held the wrong type are replaced: the entry is djqueue's own,
        written again from the code. Returns (whether the job is new, what was replaced: "KEY
        was a TYPE"). See ``lua/periodic_save.lua``; raises `BadPeriodicSet` when ``cron_jobs``
        is not a set."""
        at = self.layout()
        if at.namespace is not None:
            fields = {**fields, "namespace": at.namespace}
        pairs: list[str] = []
        for key, value in fields.items():
            pairs += [key, value]
        try:
            reply = PERIODIC_SAVE(
                self.redis,
                [at.jobs, at.job(name), at.enqueued(name), at.history(name)],
                [
                    at.member(name),
                    repr(tick[0]),
                    tick[1],
                    "enabled" if enabled else "disabled",
                    *pairs,
                ],
            )
        except redis.ResponseError as exc:
            if not str(exc).startswith("WRONGTYPE"):
                raise
            self.names(at)  # raises BadPeriodicSet, the one key the script does not replace
            raise
        created, *replaced = reply
        return bool(created), [text(r) for r in replaced]

    def set_status(self, name: str, enabled: bool) -> bool:
        """Enable or disable; False if the job no longer exists."""
        status = "enabled" if enabled else "disabled"
        return bool(PERIODIC_STATUS(self.redis, [self.layout().job(name)], [status]))

    def fire(
        self,
        name: str,
        queue: str,
        job: str,
        jid: str,
        enqueued: str,
        tick: tuple[float, str] | None,
    ) -> int:
        """Push ``job`` (its JSON) to ``queue`` for the tick ``tick`` (epoch, ISO), unless the
        tick was claimed before or the job is disabled; ``tick=None`` runs it now, unclaimed.
        ``enqueued`` is the run's time as sidekiq-cron writes it. Returns `FIRED`,
        `CLAIMED_BEFORE`, `DISABLED`, `GONE` or `NOT_UNIQUE`."""
        entry = json.dumps({"jid": jid, "enqueued": enqueued}, separators=(",", ":"))
        # The layout is read again inside the script: a sidekiq-cron 2 server may move the
        # entries between this read and the fire, and a tick claimed in 1.8's keys while its
        # poller claims ticks in 2's would be pushed by both.
        for _attempt in range(3):
            k, at = self.keys, self.layout()
            newest = layouts(k.prefix)[1]
            found = int(
                PERIODIC_FIRE(
                    self.redis,
                    [
                        at.job(name),
                        at.enqueued(name),
                        at.history(name),
                        k.queues,
                        k.queue(queue),
                        at.jobs,
                        newest.jobs,
                    ],
                    [
                        "" if tick is None else repr(tick[0]),
                        "" if tick is None else tick[1],
                        queue,
                        job,
                        enqueued,
                        entry,
                        CRON_HISTORY_SIZE,
                        CRON_REMEMBER,
                        at.member(name),
                        k.status_prefix,
                    ],
                )
            )
            if found != _MOVED:
                return found
        return GONE

    def skip(self, name: str, tick: tuple[float, str]) -> int:
        """Claim ``tick`` as skipped if the job is disabled (`DISABLED`); else nothing."""
        return self.fire(name, "default", "", "", "", tick)

    def delete(self, name: str) -> bool:
        """Remove the job and its claims and history (sidekiq-cron's ``destroy``)."""
        at = self.layout()
        pipe = self.redis.pipeline(transaction=True)
        pipe.srem(at.jobs, at.member(name))
        pipe.delete(at.job(name), at.enqueued(name), at.history(name))
        removed, _ = pipe.execute()
        return bool(removed)


def _replies(pipe: Any) -> list[Any]:
    """The pipeline's replies, a WRONGTYPE error left in place of its reply (the entry's
    ``TYPE`` replies say which key); any other error is raised, as without the pipeline."""
    replies = pipe.execute(raise_on_error=False)
    for reply in replies:
        if isinstance(reply, Exception) and not str(reply).startswith("WRONGTYPE"):
            raise reply
    return list(replies)
