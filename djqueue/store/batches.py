"""Batch writes. Only `BatchStore.cancel` here, the smallest form the Batches page needs: the
batch's creation, the counts kept with each job's acknowledgement, the callbacks and the
full cancellation belong to the batch runtime (docs/design.md "Batches"), which replaces this
module whole with the same signature.
"""

from __future__ import annotations

import json
import time
from typing import Any

import redis

from .jobs import JobStore
from .keys import Keys
from .replies import texts
from .status import StatusStore


class BatchStore:
    """The batches of one Redis and namespace."""

    def __init__(self, redis_client: redis.Redis, keys: Keys) -> None:
        self.redis = redis_client
        self.keys = keys

    def cancel(self, bid: str) -> int:
        """Mark the batch cancelled (``cancelled_at``, kept from the first cancel) and take its
        jobs out of the queues, the schedule and the retry set, each as `djqueue.cancel`
        would (a tracked job's status says cancelled). Returns the jobs taken out; 0 also
        when the batch does not exist."""
        key = self.keys.batch(bid)
        if not self.redis.exists(key):
            return 0
        self.redis.hsetnx(key, "cancelled_at", repr(time.time()))
        jobs, statuses = JobStore(self.redis, self.keys), StatusStore(self.redis, self.keys)
        queues = texts(self.redis.smembers(self.keys.queues))
        places = [(self.keys.queue(q), "list") for q in queues]
        places += [(self.keys.schedule, "zset"), (self.keys.retry, "zset")]
        removed = 0
        for where, kind in places:
            found = [m for m, _ in jobs.candidates(where, bid, kind) if _bid(m) == bid]
            removed += sum(statuses.remove(where, kind, member) for member in found)
        return removed


def _bid(member: Any) -> str | None:
    try:
        found = json.loads(member)
    except ValueError:
        return None
    return found.get("bid") if isinstance(found, dict) else None
