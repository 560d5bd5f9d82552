"""Batches' writes outside the job transitions: cancel, and the listing's retention.

A batch is created, and its jobs are counted, inside the job transitions themselves
(lua/batch.lua, included by push, take, retry_later, bury and finish), so each count moves in
the same step as the job it counts. What is left here happens to a batch as a whole.
"""

from __future__ import annotations

import json
from typing import Any

import redis

from .jobs import JobStore
from .keys import Keys
from .scripts import BATCH_CANCEL, CANCEL


class BatchStore:
    """The batch operations for one Redis and namespace."""

    def __init__(self, redis_client: redis.Redis, keys: Keys) -> None:
        self.redis = redis_client
        self.keys = keys

    def cancel(self, bid: str) -> int | None:
        """Cancel batch ``bid``: marked cancelled (no callback is pushed any more, no job
        may join it), then its jobs waiting in a queue, the schedule or the retry set are
        taken out (a tracked one's status says ``cancelled``). Returns how many were taken
        out, or None when the batch is unknown or expired. Running jobs are not stopped:
        they see ``Batch(bid).cancelled``."""
        if not BATCH_CANCEL(self.redis, [self.keys.batch(bid)], [self.keys.status_prefix]):
            return None
        jobs = JobStore(self.redis, self.keys)
        removed = 0
        for key, kind in jobs.places(""):
            for member, _position in jobs.candidates(key, bid, kind):
                if _bid_of(member) == bid and CANCEL(
                    self.redis, [key], [kind, member, self.keys.tally(key), self.keys.status_prefix]
                ):
                    removed += 1
        return removed

    def cancelled(self, bid: str) -> bool:
        """Whether batch ``bid`` was cancelled (one HEXISTS)."""
        return bool(self.redis.hexists(self.keys.batch(bid), "cancelled_at"))

    def trim(self, now: float, retention: float) -> int:
        """Drop from the ``batches`` listing the batches created more than ``retention``
        seconds before ``now`` (their own keys expire by themselves); returns how many."""
        return int(self.redis.zremrangebyscore(self.keys.batches, "-inf", now - retention))


def _bid_of(member: Any) -> str | None:
    try:
        found = json.loads(member)
    except (ValueError, TypeError, RecursionError):
        return None
    return found.get("bid") if isinstance(found, dict) else None
