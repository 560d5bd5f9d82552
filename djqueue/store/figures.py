"""The figures `djqueue.api.Stats` shows, read in two round trips, and the daily counters.

The lifetime counters, the job sets' sizes, the processes, the queues and the paused ones are
read in one
pipeline, then every process's ``busy`` and every queue's length in a second: whatever the
number of queues, a dashboard costs two round trips. A key of the wrong type, or a counter
that does not hold a number, counts as 0 and is returned among the problems, so one bad key
never hides the other figures (`bad_keys.checked`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import redis

from . import bad_keys
from .keys import Keys
from .replies import integer, texts


@dataclass
class StatsRead:
    """The counters and sizes as read; ``oldest`` is the default queue's next job as stored."""

    processed: int = 0
    failed: int = 0
    #: Jobs taken after their deadline and not run (`djqueue.store.expired`).
    expired: int = 0
    scheduled_size: int = 0
    retry_size: int = 0
    dead_size: int = 0
    processes: list[str] = field(default_factory=list)
    busy: int = 0
    queues: dict[str, int] = field(default_factory=dict)
    oldest: bytes | None = None
    #: The paused queues' names (`djqueue.store.paused`).
    paused: list[str] = field(default_factory=list)
    problems: list[tuple[str, str]] = field(default_factory=list)


def read_figures(client: redis.Redis, keys: Keys, default_queue: str) -> StatsRead:
    k = keys
    wanted = [(k.processed, "count"), (k.failed, "count"), (k.schedule, "zset")]
    wanted += [(k.retry, "zset"), (k.dead, "zset"), (k.processes, "set"), (k.queues, "set")]
    wanted += [(k.queue(default_queue), "list"), (k.paused, "set"), (k.expired, "count")]
    pipe = client.pipeline(transaction=False)
    pipe.get(k.processed)
    pipe.get(k.failed)
    pipe.zcard(k.schedule)
    pipe.zcard(k.retry)
    pipe.zcard(k.dead)
    pipe.smembers(k.processes)
    pipe.smembers(k.queues)
    pipe.lindex(k.queue(default_queue), -1)
    pipe.smembers(k.paused)
    pipe.get(k.expired)
    replies, problems = bad_keys.checked(client, pipe, wanted)
    processed, failed, scheduled, retries, dead, procs, queues, oldest, paused, expired = replies
    procs, queues = texts(procs), texts(queues)
    pipe = client.pipeline(transaction=False)
    wanted = [(k.process(identity), "hash") for identity in procs]
    wanted += [(k.queue(name), "list") for name in queues]
    for identity in procs:
        pipe.hget(k.process(identity), "busy")
    for name in queues:
        pipe.llen(k.queue(name))
    replies, more = bad_keys.checked(client, pipe, wanted)
    return StatsRead(
        processed=integer(processed),
        failed=integer(failed),
        expired=integer(expired),
        scheduled_size=integer(scheduled),
        retry_size=integer(retries),
        dead_size=integer(dead),
        processes=procs,
        busy=sum(integer(b) for b in replies[: len(procs)]),
        queues=dict(zip(queues, (integer(n) for n in replies[len(procs) :]), strict=False)),
        oldest=oldest,
        paused=texts(paused),
        problems=problems + more,
    )


def daily_counts(
    client: redis.Redis, keys: Keys, stat: str, days: Sequence[str]
) -> tuple[dict[str, int], list[tuple[str, str]]]:
    """``stat`` ("processed" or "failed") of each day (``YYYY-MM-DD``), one MGET, and the
    daily counters that do not hold a number (each counts as 0) as (key, problem)."""
    names = [keys.daily(stat, day) for day in days]
    values: Any = client.mget(names)
    problems = [
        (key, problem)
        for key, value in zip(names, values, strict=True)
        if (problem := bad_keys.not_a_count(value))
    ]
    return {day: integer(value) for day, value in zip(days, values, strict=False)}, problems
