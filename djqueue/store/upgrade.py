"""The upgrade step: djqueue's own keys from layout 1's names to layout 2's.

Layout 1 (djqueue up to commit d869405) wrote its own keys without a prefix (``recoveries``,
``status:JID``, ``working:IDENTITY:QUEUE``, ...), beside the keys of any app sharing the
Redis; layout 2 puts them under ``djqueue:`` (`djqueue.store.keys.OWN_PREFIX`). A deployment
upgrades with that data in Redis, and nothing of it may be lost:

- ``recoveries`` is merged into the new hash (each jid keeps the larger count of starts), at
  every worker start: an old-version worker still running may have written it since.
- ``status:JID`` and ``status:JID:done`` are renamed, lifetimes kept, by one SCAN of the
  keyspace, until one pass has completed (`Keys.layout` then says so, and a start costs one
  GET). A status written by an old-version process after that is still read
  (`StatusStore.read` falls back to layout 1's name) until it expires.
- ``working:IDENTITY:QUEUE`` and ``working_lists`` are not moved: a live old process still
  uses them; the janitor's sweep reads layout 1's index too and pushes a dead old process's
  lists back (`requeue_process` with ``lists=keys.earlier``).
- ``working_sweep`` and ``outbox`` live a minute at most and are rewritten by the next round:
  they are left to expire.

The step runs under a lock (``djqueue:upgrade``), so two workers starting together do it once;
a worker that finds the lock taken goes on, since the holder is doing it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import redis

from .keys import LAYOUT, RECOVERY_TTL, UPGRADE_LOCK_TTL, Keys
from .replies import text
from .scripts import UPGRADE

#: Status keys looked at per SCAN call, and per script call.
BATCH = 500
#: The characters SCAN's MATCH reads as a pattern, escaped in a namespace.
GLOB = "\\*?[]"


@dataclass(frozen=True)
class Upgraded:
    """What one upgrade step did: recoveries entries merged (-1: a ``recoveries`` key was not
    a hash, so nothing was merged), statuses moved, statuses left under layout 1's name because
    the new name was taken, and whether the keyspace was scanned for statuses."""

    recoveries: int = 0
    statuses: int = 0
    statuses_left: int = 0
    scanned: bool = False


def upgrade(redis_client: redis.Redis, keys: Keys) -> Upgraded | None:
    """Move what layout 1 left to layout 2's names; None when another process holds the lock.
    Idempotent: a second run finds nothing left to move."""
    if not redis_client.set(keys.upgrade_lock, "1", nx=True, ex=UPGRADE_LOCK_TTL):
        return None
    try:
        recoveries, moved, left = _move(redis_client, keys, [])
        scanned = text(redis_client.get(keys.layout) or b"") != LAYOUT
        if scanned:
            for jids in _old_statuses(redis_client, keys.earlier.status_prefix):
                _, more, kept = _move(redis_client, keys, jids)
                moved, left = moved + more, left + kept
            redis_client.set(keys.layout, LAYOUT)
        return Upgraded(recoveries, moved, left, scanned)
    finally:
        redis_client.delete(keys.upgrade_lock)


def _old_statuses(redis_client: redis.Redis, prefix: str) -> Iterator[list[str]]:
    """The jids of the keys named ``PREFIX*`` (but the ``:done`` lists, which move with their
    hash), `BATCH` at a time: one SCAN of the keyspace. The prefix is matched as written (a
    namespace may hold characters SCAN reads as a pattern)."""
    pattern = "".join("\\" + c if c in GLOB else c for c in prefix) + "*"
    batch: list[str] = []
    for key in redis_client.scan_iter(match=pattern, count=BATCH):
        name = text(key)
        if not name.endswith(":done"):
            batch.append(name[len(prefix) :])
        if len(batch) >= BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


def _move(redis_client: redis.Redis, keys: Keys, jids: list[str]) -> tuple[int, int, int]:
    """One call of ``upgrade.lua``: the recoveries merge, and the statuses of ``jids``."""
    earlier = keys.earlier
    names: list[Any] = [earlier.recoveries, keys.recoveries]
    for jid in jids:
        names += (
            earlier.status(jid),
            keys.status(jid),
            earlier.status_done(jid),
            keys.status_done(jid),
        )
    merged, moved, left = UPGRADE(redis_client, names, [RECOVERY_TTL])
    return int(merged), int(moved), int(left)
