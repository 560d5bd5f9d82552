"""The read model of a batch (`BatchState`): what `djqueue.Batch.status` returns and the pages
show. One HGETALL of the hash, one of the failures and a slice of the pending set, pipelined.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import redis

from .keys import Keys
from .replies import text

PENDING_SHOWN = 100


@dataclass(frozen=True)
class BatchState:
    """A batch as Redis holds it (fields: docs/design.md, "Batches")."""

    bid: str
    description: str = ""
    created_at: float | None = None
    total: int = 0
    pending: int = 0
    remaining: int = 0
    failures: int = 0
    dead: int = 0
    parent: str | None = None
    children: int = 0
    callbacks: dict[str, Any] = field(default_factory=dict)
    complete_at: float | None = None
    success_at: float | None = None
    death_at: float | None = None
    cancelled_at: float | None = None
    failed: dict[str, Any] = field(default_factory=dict)
    pending_jids: list[str] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return self.complete_at is not None

    @property
    def successful(self) -> bool:
        return self.success_at is not None

    @property
    def cancelled(self) -> bool:
        return self.cancelled_at is not None


def _number(value: str | None) -> float | None:
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def _count(value: str | None) -> int:
    try:
        return int(value) if value is not None else 0
    except ValueError:
        return 0


def _json(value: str | None) -> Any:
    try:
        return json.loads(value) if value else {}
    except ValueError:
        return {}


def read_batch(redis_client: redis.Redis, keys: Keys, bid: str) -> BatchState | None:
    """The state of batch ``bid``; None when unknown or expired."""
    pipe = redis_client.pipeline(transaction=False)
    pipe.hgetall(keys.batch(bid))
    pipe.hgetall(keys.batch_failed(bid))
    pipe.srandmember(keys.batch_pending(bid), PENDING_SHOWN)
    found, failed, pending = pipe.execute()
    if not found:
        return None
    h = {text(k): text(v) for k, v in found.items()}
    return BatchState(
        bid=bid,
        description=h.get("description", ""),
        created_at=_number(h.get("created_at")),
        total=_count(h.get("total")),
        pending=_count(h.get("pending")),
        remaining=_count(h.get("remaining")),
        failures=_count(h.get("failures")),
        dead=_count(h.get("dead")),
        parent=h.get("parent"),
        children=_count(h.get("children")),
        callbacks=_json(h.get("callbacks")),
        complete_at=_number(h.get("complete_at")),
        success_at=_number(h.get("success_at")),
        death_at=_number(h.get("death_at")),
        cancelled_at=_number(h.get("cancelled_at")),
        failed={text(k): _json(text(v)) for k, v in failed.items()},
        pending_jids=sorted(text(j) for j in pending or ()),
    )


def list_batches(
    redis_client: redis.Redis, keys: Keys, offset: int, count: int
) -> tuple[list[BatchState], int]:
    """Batches newest first, ``count`` from ``offset``, and how many the listing holds."""
    total = int(redis_client.zcard(keys.batches))
    bids = redis_client.zrevrange(keys.batches, offset, offset + count - 1)
    states = [read_batch(redis_client, keys, text(bid)) for bid in bids]
    return [state for state in states if state is not None], total
