"""A batch as Redis holds it, read for `Batch.status()`, `djqueue.api.Batch` and the Batches page.

The writes (create, add jobs, the counts kept by the same Lua steps that acknowledge or settle
a job, the callbacks, cancel) are `djqueue.store.batches`'; this module only reads their keys
(docs/design.md "Batches"): the hash ``djqueue:batch:BID``, the set of its jids not yet
succeeded, the hash of its failures and the listing ``djqueue:batches``. A read never
raises for a key of the wrong type or a field that does not parse: the value reads as
empty or 0 and the key is named in `BatchState.problems`, so a page shows the rest (the
inspection API raises `djqueue.BadKey` when the batch's own hash is the bad key).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import redis

from . import bad_keys
from .keys import Keys
from .replies import integer, number, text, text_hash, texts

#: Pending jids a `read_batch` returns at most (any of them when there are more: SRANDMEMBER,
#: whose cost does not grow with the batch).
PENDING_SHOWN = 100
#: Failures a `read_batch` returns at most (any of them when there are more: HRANDFIELD). A
#: page must not copy a 100,000-job batch's failures to show a hundred: measured here, an
#: HGETALL of 100,000 took 1.1 s, of 10,000 61 ms, of 1,000 4 ms.
FAILED_READ = 1000
#: Batches created after this one whose parent `child_batches` reads, at most.
CHILDREN_LOOKED_AT = 1000
#: The counters of the batch hash, in `BatchState`'s order.
COUNTS = ("total", "pending", "remaining", "failures", "dead", "children")
#: The times of the batch hash (epoch float seconds), written once each.
TIMES = ("complete_at", "success_at", "death_at", "cancelled_at")
#: The callbacks' kinds, in the order they may fire.
CALLBACK_KINDS = ("complete", "success", "death")

Problems = tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class BatchState:
    """One batch: its counts, callbacks and times, its failures and (up to `PENDING_SHOWN`)
    jids that have not succeeded yet. `list_batches` reads the hashes only: there ``failed``
    and ``pending_jids`` are empty."""

    bid: str
    description: str = ""
    created_at: float | None = None
    #: Jobs ever added.
    total: int = 0
    #: Jobs that have not succeeded yet.
    pending: int = 0
    #: Jobs that have not run once yet (success or first failure); 0: the batch is complete.
    remaining: int = 0
    #: Distinct jobs that failed at least once (a retry that then succeeds stays counted).
    failures: int = 0
    #: Jobs that died.
    dead: int = 0
    #: The parent batch's id; None for a top-level batch.
    parent: str | None = None
    #: Child batches that have not succeeded yet.
    children: int = 0
    #: ``{"complete": [item, ...], "success": [...], "death": [...]}``: the job items pushed
    #: when the batch gets there (only the kinds the batch has).
    callbacks: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    complete_at: float | None = None
    success_at: float | None = None
    death_at: float | None = None
    cancelled_at: float | None = None
    #: jid -> its latest failure (``class``, ``error_class``, ``error_message``, ``at``), for
    #: the jobs that failed and have not succeeded since (`FAILED_READ` of them at most).
    failed: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: Jids that have not succeeded yet, sorted; `PENDING_SHOWN` at most.
    pending_jids: list[str] = field(default_factory=list)
    #: Keys of this batch that could not be read as the layout says: (key, what is wrong),
    #: in `djqueue.store.bad_keys`' words. Their values read as empty.
    problems: Problems = ()
    #: Jobs that failed and have not succeeded since: how many ``failed`` would hold whole.
    failing: int = 0
    #: False when the batch's hash itself is of the wrong type: only ``bid`` and
    #: ``problems`` mean anything then.
    readable: bool = True

    @property
    def complete(self) -> bool:
        """Every job has run once (succeeded, or failed at least once)."""
        return self.complete_at is not None or (self.total > 0 and self.remaining <= 0)

    @property
    def successful(self) -> bool:
        """Every job has succeeded (retries included) and so has every child batch."""
        if self.success_at is not None:
            return True
        return self.total > 0 and self.pending <= 0 and self.children <= 0

    @property
    def cancelled(self) -> bool:
        return self.cancelled_at is not None

    @property
    def status(self) -> str:
        """One word for the batch: ``cancelled``, ``success``, ``dead`` (a job died, and the
        batch has not succeeded since: a dead job retried by hand may still succeed),
        ``complete`` or ``pending``."""
        if self.cancelled:
            return "cancelled"
        if self.successful:
            return "success"
        if self.dead > 0:
            return "dead"
        return "complete" if self.complete else "pending"

    @property
    def succeeded(self) -> int:
        """Jobs that have succeeded."""
        return max(0, self.total - self.pending)


def read_batch(client: redis.Redis, keys: Keys, bid: str) -> BatchState | None:
    """The batch ``bid``, or None when it does not exist (never made, or expired after its
    retention). One round trip."""
    hash_key, pending_key, failed_key = (
        keys.batch(bid),
        keys.batch_pending(bid),
        keys.batch_failed(bid),
    )
    pipe = client.pipeline(transaction=False)
    pipe.hgetall(hash_key)
    pipe.srandmember(pending_key, PENDING_SHOWN)
    pipe.hrandfield(failed_key, FAILED_READ, withvalues=True)
    pipe.hlen(failed_key)
    wanted = [(hash_key, "hash"), (pending_key, "set"), (failed_key, "hash"), (failed_key, "hash")]
    (fields, pending, failed, failing), found = bad_keys.checked(client, pipe, wanted)
    problems = list(dict.fromkeys(found))  # the failures' key is read twice
    if fields is None:  # the hash is of the wrong type: the batch is there, unreadable
        return BatchState(bid, problems=tuple(problems), readable=False)
    if not fields:
        return None
    flat = failed or []  # HRANDFIELD WITHVALUES: field, value, field, value...
    raw = text_hash(dict(zip(flat[::2], flat[1::2], strict=True)))
    failures, more = _failures(failed_key, raw)
    return _state(
        bid,
        hash_key,
        text_hash(fields),
        failed=failures,
        pending_jids=texts(pending),
        problems=(*problems, *more),
        failing=integer(failing),
    )


def list_batches(
    client: redis.Redis, keys: Keys, offset: int, count: int
) -> tuple[list[BatchState], int]:
    """Batches ``offset`` to ``offset + count``, newest first, and how many the listing holds.
    Two round trips. A listed batch whose hash has expired (the janitor trims the listing
    after the retention) is left out; one whose hash is of the wrong type is returned with
    only its id and its problem. A listing of the wrong type raises Redis's WRONGTYPE error
    (`djqueue.api.Batches` names the key)."""
    pipe = client.pipeline(transaction=False)
    pipe.zcard(keys.batches)
    pipe.zrevrange(keys.batches, offset, offset + max(count, 1) - 1)
    total, members = pipe.execute()
    bids = [text(m) for m in members] if count > 0 else []
    if not bids:
        return [], integer(total)
    pipe = client.pipeline(transaction=False)
    for bid in bids:
        pipe.hgetall(keys.batch(bid))
    replies, problems = bad_keys.checked(client, pipe, [(keys.batch(b), "hash") for b in bids])
    bad = dict(problems)
    found = []
    for bid, fields in zip(bids, replies, strict=True):
        key = keys.batch(bid)
        if key in bad:
            found.append(BatchState(bid, problems=((key, bad[key]),), readable=False))
        elif fields:
            found.append(_state(bid, key, text_hash(fields)))
    return found, integer(total)


def child_batches(client: redis.Redis, keys: Keys, state: BatchState) -> list[str]:
    """The ids of the batches whose parent is ``state``, oldest first, among the
    `CHILDREN_LOOKED_AT` batches created after it (the layout keeps a child's parent, not a
    parent's children: a child is always created after its parent). Two round trips."""
    if state.created_at is None:
        return []
    members = client.zrangebyscore(
        keys.batches, state.created_at, "+inf", start=0, num=CHILDREN_LOOKED_AT + 1
    )
    bids = [b for b in (text(m) for m in members) if b != state.bid][:CHILDREN_LOOKED_AT]
    if not bids:
        return []
    pipe = client.pipeline(transaction=False)
    for bid in bids:
        pipe.hget(keys.batch(bid), "parent")
    parents = pipe.execute(raise_on_error=False)
    return [
        bid
        for bid, parent in zip(bids, parents, strict=True)
        if not isinstance(parent, Exception) and text(parent) == state.bid
    ]


def _state(
    bid: str,
    key: str,
    fields: Mapping[str, str],
    failed: dict[str, dict[str, Any]] | None = None,
    pending_jids: list[str] | None = None,
    problems: Sequence[tuple[str, str]] = (),
    failing: int = 0,
) -> BatchState:
    """The hash's fields as a `BatchState`; each field that does not parse reads as 0 / None
    and is named among the problems."""
    found = list(problems)
    counts: dict[str, int] = {}
    for name in COUNTS:
        value = fields.get(name)
        if bad_keys.not_a_count(value):
            found.append((key, f"has {name} {bad_keys.quoted(value or '')}, not an integer"))
        counts[name] = integer(value)
    times: dict[str, float | None] = {}
    for name in ("created_at", *TIMES):
        value = fields.get(name)
        times[name] = number(value)
        if value is not None and times[name] is None:
            found.append((key, f"has {name} {bad_keys.quoted(value)}, not a time"))
    callbacks = _callbacks(fields.get("callbacks"))
    if callbacks is None:
        found.append((key, "has callbacks that are not a JSON object of job lists"))
    return BatchState(
        bid,
        description=fields.get("description", ""),
        created_at=times["created_at"],
        total=counts["total"],
        pending=counts["pending"],
        remaining=counts["remaining"],
        failures=counts["failures"],
        dead=counts["dead"],
        parent=fields.get("parent") or None,
        children=counts["children"],
        callbacks=callbacks or {},
        complete_at=times["complete_at"],
        success_at=times["success_at"],
        death_at=times["death_at"],
        cancelled_at=times["cancelled_at"],
        failed=failed or {},
        pending_jids=pending_jids or [],
        problems=tuple(found),
        failing=failing,
    )


def _callbacks(raw: str | None) -> dict[str, list[dict[str, Any]]] | None:
    """``{"complete": [item, ...], ...}`` from the hash's JSON; None when it does not read as
    that (absent: no callbacks)."""
    if not raw:
        return {}
    try:
        found = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(found, dict):
        return None
    callbacks: dict[str, list[dict[str, Any]]] = {}
    for kind, items in found.items():
        if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
            return None
        callbacks[str(kind)] = items
    return callbacks


def _failures(
    key: str, raw: Mapping[str, str]
) -> tuple[dict[str, dict[str, Any]], Sequence[tuple[str, str]]]:
    """The failures hash as jid -> failure; an entry that is not a JSON object reads as an
    empty failure and is named."""
    found: dict[str, dict[str, Any]] = {}
    problems = []
    for jid in sorted(raw):
        try:
            failure = json.loads(raw[jid])
        except ValueError:
            failure = None
        if not isinstance(failure, dict):
            problems.append((key, f"has {jid} {bad_keys.quoted(raw[jid])}, not a JSON object"))
            failure = {}
        found[jid] = failure
    return found, problems
