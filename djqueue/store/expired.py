"""The expired-jobs counters: how many jobs were taken after their deadline and not run.

Counted in each worker's memory (`djqueue.worker.tally`) and flushed with its heartbeat, in
the same round trip (`ProcessStore.beat`), as the processed and failed counts are: a lifetime
total and one counter per UTC day, both under djqueue's own prefix (Sidekiq has no such
counter; Sidekiq Pro does not count expired jobs in Redis either).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

import redis
import redis.exceptions

from . import bad_keys
from .keys import DAILY_STATS_TTL, Keys


def add_writes(pipe: Any, keys: Keys, count: int, now: float) -> list[str]:
    """Queue the INCRBYs of ``count`` expired jobs (flushed at ``now``) on ``pipe``; returns
    the key each queued command writes, in order, for `report`."""
    if not count:
        return []
    daily = keys.expired_daily(time.strftime("%Y-%m-%d", time.gmtime(now)))
    pipe.incrby(keys.expired, count)
    pipe.incrby(daily, count)
    pipe.expire(daily, DAILY_STATS_TTL)
    return [keys.expired, daily, daily]


def report(replies: Iterable[Any], written: list[str]) -> None:
    """Name a counter the writes could not change (not an integer, another type: once, by
    `bad_keys`; anything else as an error line): those counts are lost, the beat goes on."""
    found: list[tuple[str, str]] = []
    for key, reply in zip(written, replies, strict=False):
        if not isinstance(reply, redis.exceptions.ResponseError):
            continue
        if bad_keys.is_wrong_type(reply) or "not an integer" in str(reply):
            found.append((key, "is not a counter; expired jobs not counted there"))
        else:
            bad_keys.logger.error("expired jobs not counted in %s: %s", key, reply)
    bad_keys.report(found)


def write(client: redis.Redis, keys: Keys, count: int) -> None:
    """The last expired count of a process that leaves."""
    pipe = client.pipeline(transaction=False)
    written = add_writes(pipe, keys, count, time.time())
    if written:
        report(pipe.execute(raise_on_error=False), written)
