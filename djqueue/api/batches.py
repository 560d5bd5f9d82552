"""Batches as the Batches page, a shell or a script reads them (`djqueue.store.batch_read`)::

    from djqueue.api import Batch, Batches

    states, total = Batches().page(0, 25)  # newest first
    Batch(bid).state().pending
    Batch(bid).cancel()

Reads raise `djqueue.RedisUnavailable` when Redis cannot be reached, and `djqueue.BadKey`
when the object's own key (the batch's hash, the listing) holds another type; keys of a
batch that are only part of it (its pending set, its failures) are named in
`BatchState.problems` instead.
"""

from __future__ import annotations

import redis

from ..config import Settings
from ..errors import BadKey
from ..store.batch_read import BatchState, child_batches, list_batches, read_batch
from ..store.batches import BatchStore
from .base import ApiObject


class Batches(ApiObject):
    """Every batch kept (for the batch retention), newest first."""

    key_type = "zset"

    def __init__(
        self, settings: Settings | None = None, redis_client: redis.Redis | None = None
    ) -> None:
        super().__init__(settings, redis_client)
        self.key = self.keys.batches

    def page(self, offset: int = 0, count: int = 25) -> tuple[list[BatchState], int]:
        """Batches ``offset`` to ``offset + count`` and how many there are."""
        return self._call(lambda: list_batches(self.redis, self.keys, offset, count))

    @property
    def size(self) -> int:
        return self.page(0, 0)[1]


class Batch(ApiObject):
    """One batch, by its id (the ``bid`` of its jobs' payloads)."""

    key_type = "hash"

    def __init__(
        self, bid: str, settings: Settings | None = None, redis_client: redis.Redis | None = None
    ) -> None:
        super().__init__(settings, redis_client)
        self.bid = bid
        self.key = self.keys.batch(bid)

    def state(self) -> BatchState | None:
        """The batch's counts, callbacks, times, failures and pending jids; None when there
        is no such batch (never made, or expired after the batch retention)."""
        found = self._call(lambda: read_batch(self.redis, self.keys, self.bid))
        if found is not None and not found.readable:
            raise BadKey(*found.problems[0], self._held())
        return found

    def children(self, state: BatchState) -> list[str]:
        """The ids of ``state``'s child batches (`child_batches`)."""
        return self._call(lambda: child_batches(self.redis, self.keys, state))

    def cancelled(self) -> bool:
        """Whether the batch was cancelled (one HEXISTS): what its running jobs look at."""
        return self._call(lambda: BatchStore(self.redis, self.keys).cancelled(self.bid))

    def cancel(self) -> int | None:
        """Cancel the batch: its waiting jobs are removed, running ones see it cancelled.
        Returns how many waiting jobs were removed, or None when the batch is unknown or
        expired (`djqueue.store.batches.BatchStore.cancel`)."""
        return self._call(lambda: BatchStore(self.redis, self.keys).cancel(self.bid))
