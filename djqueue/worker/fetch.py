"""Crash-safe fetch, as the runtime uses it: which queue to try first, and batches.

The moves themselves are the store's (`djqueue.store.WorkingLists`): a job goes from its queue
into this process's working list in one atomic step and leaves it only when acknowledged. This
module decides the order the queues are tried in (Sidekiq's strict or weighted order), and
spreads idle processors over the queues: when every queue is empty, an idle processor blocks
with BLMOVE on the queue the fewest idle processors watch, so a newly pushed job is picked up
within milliseconds without polling.

Paused queues (`djqueue.store.paused`) are left out of every order: the heartbeat hands the
paused set it read with each beat to `Fetcher.pause`, so a pause costs the fetch nothing and
reaches it within one beat. A job a blocking wait catches on a queue paused meanwhile goes
straight back to the front of its queue, unstarted.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Sequence
from typing import Any

import redis
import redis.exceptions

from ..store import Keys, WorkingLists
from .log import logger


class Unit:
    """A fetched job: its queue, its JSON exactly as stored, and the working list holding it."""

    __slots__ = ("queue", "raw", "working", "acked", "recovered", "ending", "result")

    def __init__(self, queue: str, raw: bytes, working: str, recovered: bool = False) -> None:
        self.queue = queue
        self.raw = raw
        self.working = working
        #: Set once the job has left the working list another way (retry or dead write).
        self.acked = False
        #: The job was pushed back after a process died holding it (`djqueue.worker.recovery`).
        self.recovered = recovered
        #: A tracked job that ran: its end, written with its acknowledgement
        #: (`djqueue.worker.lifecycle`).
        self.ending: tuple[str, str, str, str] | None = None
        #: What the job returned, for the steps after it (`djqueue.worker.lifecycle`).
        self.result: Any = None

    def __repr__(self) -> str:
        return f"<Unit {self.queue} {self.raw[:60]!r}>"


class Fetcher:
    """Takes jobs for one process. Queue order follows Sidekiq: with any weight given, each
    name is repeated by its weight, shuffled and de-duplicated on every fetch; otherwise the
    order is fixed (strict priority)."""

    def __init__(
        self,
        redis_client: redis.Redis,
        keys: Keys,
        identity: str,
        queues: tuple[tuple[str, int], ...],
        block_timeout: float = 2.0,
    ) -> None:
        self.identity = identity
        self.block_timeout = block_timeout
        self.lists = WorkingLists(redis_client, keys, identity, [name for name, _ in queues])
        self.names = self.lists.names
        self.working = self.lists.working
        self.strict = all(weight == 0 for _, weight in queues)
        self.expanded = [name for name, weight in queues for _ in range(max(weight, 1))]
        self._blockers = dict.fromkeys(self.names, 0)
        self._lock = threading.Lock()
        #: This process's queues that are paused, as the last beat read them.
        self.paused: frozenset[str] = frozenset()
        #: The queues a fetch tries (all of them but the paused ones), in their given order.
        self.serving: list[str] = self.names
        self._expanded = self.expanded

    def pause(self, paused: frozenset[str] | set[str]) -> frozenset[str]:
        """Take the paused queues' names as the last beat read them (every queue's, this
        process's or not); returns this process's queues paused since the last call. A change
        is logged, once per queue."""
        mine = frozenset(paused) & frozenset(self.names)
        if mine == self.paused:
            return frozenset()
        newly, resumed = mine - self.paused, self.paused - mine
        with self._lock:
            self.paused = mine
            self.serving = [name for name in self.names if name not in mine]
            self._expanded = [name for name in self.expanded if name not in mine]
        for name in sorted(newly):
            logger.info("queue %s is paused: taking no job from it until it is resumed", name)
        for name in sorted(resumed):
            logger.info("queue %s is resumed: taking jobs from it again", name)
        return newly

    @property
    def index_value(self) -> str:
        return self.lists.index_value

    def order(self) -> list[str]:
        """The queue names in the order this fetch tries them (the paused ones left out)."""
        if self.strict:
            return self.serving
        names = self._expanded[:]
        random.shuffle(names)
        return list(dict.fromkeys(names))

    def fetch(self, count: int, acks: Sequence[Unit] = (), back: Sequence[Unit] = ()) -> list[Unit]:
        """One round trip: acknowledge ``acks``, push ``back`` (unstarted jobs, newest first)
        to the front of their queues, then take up to ``count`` jobs in this fetch's order."""
        if not (count or acks or back):
            return []
        plain = self.strict and not self.paused
        taken = self.lists.take(count, None if plain else self.order(), acks, back)
        working = self.working
        return [Unit(name, raw, working[name], recovered) for name, raw, recovered in taken]

    def block(self) -> Unit | None:
        """Wait up to ``block_timeout`` for a job on the queue fewest idle processors watch."""
        usable = [name for name in self.order() if name not in self.lists.broken]
        if not usable:
            time.sleep(self.block_timeout)
            return None
        with self._lock:
            name = min(usable, key=self._blockers.__getitem__)
            self._blockers[name] += 1
            # With more queues than idle processors some queue has no watcher: look around
            # more often, so a job there waits well under the full block timeout.
            uncovered = 0 in self._blockers.values()
        timeout = min(self.block_timeout, 0.5) if uncovered else self.block_timeout
        try:
            taken = self.lists.block_take(name, timeout)
        except redis.exceptions.ResponseError as exc:
            if not str(exc).startswith("WRONGTYPE"):
                raise
            self.lists.mark_broken(name)
            return None
        finally:
            with self._lock:
                self._blockers[name] -= 1
        if taken is None:
            return None
        raw, recovered = taken
        unit = Unit(name, raw, self.working[name], recovered)
        if name in self.paused:
            # Paused while this wait was under way: the job goes back unstarted.
            self.lists.requeue(unit)
            return None
        return unit

    def requeue(self, unit: Unit) -> bool:
        """Push one job back to the front of its queue; False if it had already left."""
        return self.lists.requeue(unit)

    def queued(self) -> int:
        """How many jobs wait in the queues this process serves (paused ones left out)."""
        return self.lists.queued(self.serving)

    def requeue_all(self, drop_index: bool = True) -> int:
        """Push every job in this process's working lists back to the front of its queue."""
        return self.lists.requeue_all(drop_index)

    def working_jobs(self) -> dict[str, list[bytes]]:
        """What the working lists hold now, by queue name."""
        return self.lists.contents()
