"""The poller: moves due jobs from ``schedule`` and ``retry`` into their queues.

Each job moves atomically (the store's move to queue: ZREM decides, then SADD + LPUSH), so two
processes polling at once never push one job twice. ``enqueued_at`` is set as the job moves.
Client middleware is not run again: it ran when the job was first pushed. An entry that is not
a job is buried in ``dead`` (`djqueue.retry_policy.malformed_entry`), so it cannot stall the poller.

**When to poll.** Time is cut into slots of ``poll_interval`` seconds (1 s), and the djqueue
processes (known from the heartbeat) take turns: process k of n polls at the start of every
slot s with s % n == k. The cluster as a whole looks once per slot, however many processes
there are. Each poll also reads the earliest due time; if it falls inside the poller's own slot
it sleeps until exactly then. So a job known in advance starts on time, a job scheduled at
short notice waits at most about one slot, and n idle processes cost Redis what one does.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

from ..config import Settings
from ..errors import MalformedJob
from ..payload import dumps, loads
from ..retry_policy import malformed_entry
from ..store import JobStore, Keys
from .component import Component
from .log import logger

#: Jobs moved per script call; big enough to drain a backlog fast, small enough to keep
#: Redis responsive for everyone else while it runs.
BATCH = 100

#: () -> (my index k, number of processes n), from the latest heartbeat.
Slot = Callable[[], tuple[int, int]]


class Poller(Component):
    """Moves due jobs from ``schedule`` and ``retry`` to their queues (a runtime thread)."""

    name = "djqueue-poller"
    what = "poller"
    halts_on_quiet = True

    def __init__(self, store: JobStore, keys: Keys, settings: Settings, slot: Slot) -> None:
        self.store = store
        self.keys = keys
        #: Where a due job without a queue goes (and a malformed one is said to come from).
        self.default_queue = settings.default_queue
        self.interval = settings.poll_interval
        self.slot = slot
        #: A bug waits a poll interval before the next look.
        self.after_bug = self.interval
        super().__init__()
        #: Due jobs could not move at the last look (reported once, until they can).
        self._stuck = False

    def tick(self) -> float:
        earliest = self.enqueue_due()
        now = time.time()
        return max(0.0, self.next_poll(now, earliest) - now)

    def next_poll(self, now: float, earliest: float | None) -> float:
        """When to look next: the start of this process's next slot, or the earliest due time
        if that comes first and falls in one of its own slots."""
        k, n = self.slot()
        slot = math.floor(now / self.interval)
        ahead = (k - slot) % n or n
        wake = (slot + ahead) * self.interval
        if earliest is not None and earliest < wake:
            if math.floor(earliest / self.interval) % n == k:
                wake = earliest
        return wake

    def enqueue_due(self) -> float | None:
        """Move every due job; return the earliest time still waiting (None if nothing, or if
        due jobs are stuck: then the next look is at this process's next slot)."""
        sets = (self.keys.retry, self.keys.schedule)
        while True:
            now = time.time()
            heads = self.store.earliest(sets)
            due = [key for key, head in zip(sets, heads, strict=True) if head and head <= now]
            if not due:
                waiting = [head for head in heads if head is not None]
                return min(waiting) if waiting else None
            stuck = sum(self._drain(key, now) for key in due)
            if stuck:
                if not self._stuck:
                    logger.error(
                        "%d due job(s) cannot move to their queue: its key is not a list "
                        "(delete or fix it); the other jobs are served",
                        stuck,
                    )
                self._stuck = True
                return None
            self._stuck = False

    def _drain(self, key: str, now: float) -> int:
        """Move the due members of ``key``; returns how many could not move (a queue key that
        is not a list), which are stepped over."""
        stuck = 0
        while not self.stop_event.is_set():
            members = self.store.due(key, now, BATCH, skip=stuck)
            if not members:
                break
            moves: list[tuple[bytes, str, str]] = []
            malformed: list[tuple[bytes, bytes | str]] = []
            for member in members:
                try:
                    payload = loads(member)
                except MalformedJob as exc:
                    logger.error(
                        "malformed job in %s moved to the dead set (%s): %r",
                        self.keys.strip(key),
                        exc,
                        member[:200],
                    )
                    entry = malformed_entry(member, self.default_queue, str(exc), now)
                    malformed.append((member, entry))
                    continue
                payload["enqueued_at"] = now
                queue = payload.get("queue")
                if not isinstance(queue, str) or not queue:
                    queue = payload["queue"] = self.default_queue
                moves.append((member, queue, dumps(payload)))
            stuck += self.store.move_to_queue(key, moves).stuck
            self.store.bury(malformed, now, source=key, kind="zset")
            if len(members) < BATCH:
                break
        return stuck
