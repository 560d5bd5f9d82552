"""The process's jobs between Redis and the processors: fetched but not started, and finished
but not yet acknowledged.

A round trip to Redis costs more than a short job, and a processor waiting for one is not
running a job. So jobs are fetched in batches and acknowledged in batches: a finished processor
takes its next job from the buffer without a round trip, and puts the finished one on a list of
pending acknowledgements that rides along with the next call any processor makes.

Crash safety is unchanged: a buffered job is already in the working list (the fetch moved it
there atomically), and a pending acknowledgement only means a finished job is still listed there,
so a crash can cause a second run, never a loss. Buffered jobs belong to the process, not to a
thread, so a slow job never holds up the jobs fetched with it: any free processor takes them.

The buffer is kept small, so a process does not hoard jobs another process could run. A batch
is sized for the processors that are free right now (not running a job, not waiting in BLMOVE)
plus, only while every processor is busy and recent jobs are short, a few spare jobs, so that
the next processor to finish finds one ready. When jobs are so short that the processors start
more of them during one fetch's round trip than that, the spare grows to cover the round trip
(counted: the jobs started, or waited for, while a top-up was under way), up to four times the
concurrency and no more than the processors run in a millisecond: the top-up then starts
while enough jobs are left to keep every processor busy until its batch lands.
When any processor waits in BLMOVE, the queues were just empty: batches are then for the free
processors only, and jobs beyond what they can take go straight back to the front of their
queue, where the waiting processors get them at once.
"""

from __future__ import annotations

import math
import threading
from collections import Counter, deque
from collections.abc import Callable

from .backoff import REDIS_ERRORS
from .fetch import Fetcher, Unit

#: Recent jobs shorter than this on average (seconds) make spare jobs worth buffering: for
#: them a round trip between two jobs is a visible share of a processor's time.
SHORT_JOB = 0.05
#: Weight of the newest job in the running average of job durations (and of the newest
#: fetch in that of the jobs started during a fetch).
SMOOTHING = 0.2
#: Round trips' worth of jobs the spare holds when a round trip outlasts the fixed spare: the
#: top-up starts at half of it (one and a half round trips left, a margin for a slow one).
ROUND_TRIPS = 3
#: The spare never exceeds this many times the concurrency, however short the jobs...
SPARE_LIMIT = 4
#: ...nor what the processors run in this long (seconds) at the average job's length, so the
#: last spare job starts at most about this much later than an idle peer would start it.
HOLD = 0.001


class JobBuffer:
    """Shared by the processors of one process; every method is thread-safe."""

    def __init__(self, fetcher: Fetcher, concurrency: int) -> None:
        self.fetcher = fetcher
        self.concurrency = max(1, concurrency)
        #: Fetched, not started; oldest first.
        self.jobs: deque[Unit] = deque()
        #: Finished, still in the working list until the next call acknowledges them.
        self.acks: list[Unit] = []
        self.running = 0
        self.blocking = 0
        #: True while a processor's fetch is under way.
        self.fetching = False
        #: Running average of job durations, seconds; None until a job has finished, so jobs
        #: count as long (no spare jobs held) until measured: a process must not hold jobs it
        #: cannot start while a peer is idle.
        self.average: float | None = None
        #: A recovered job runs alone (`run_alone`): no other job starts until it ends.
        self.alone = False
        #: Jobs started so far plus processors that found the buffer empty while a fetch was
        #: under way (each would have started one), and the running average of how many of
        #: those came while a top-up was under way (None until one was): what a round trip
        #: must be covered with.
        self.demand = 0
        self.during: float | None = None
        #: The spare for short jobs: the fixed one, or the round trips' worth of jobs when
        #: that is more (`_reach`); recomputed after each top-up.
        self.fixed_spare = max(2, self.concurrency // 2)
        self.reach = self.fixed_spare
        #: `demand` at the last beat's flush: unchanged at the next one, no buffered job was
        #: taken for a whole beat.
        self._beat_demand = -1
        self._lock = threading.Lock()
        self._ready = threading.Condition(self._lock)
        self._flushing = threading.Lock()

    def next(self) -> Unit | None:
        """The next job for a processor: buffered, else fetched (with the pending
        acknowledgements), else waited for in BLMOVE. None when nothing came in time.

        One fetch is in flight at a time: a processor that finds the buffer empty while
        another one's fetch is under way waits for that batch, which was sized for it too.
        Otherwise every processor would make its own call and batches would shrink to one.
        While every processor is busy with short jobs, the buffer is topped up before it runs
        dry, by the processor that takes one of the last jobs: it pays one round trip before
        its own job, and the others never queue up behind a fetch (if they did, they would
        start together, finish together and queue up again, round after round).
        A batch wakes one of the processors waiting for it; each one woken wakes the next
        once it has its job, while jobs are left (see `_fetch`).
        The caller must report the job's end with `finished` (or `give_back`).
        """
        with self._ready:
            waited = False
            while self.alone or (not self.jobs and self.fetching):
                if not waited and not self.jobs and self.fetching:
                    self.demand += 1  # a job it would have started: the buffer ran dry
                self._ready.wait()
                waited = True
            if self.jobs:
                self.running += 1
                self.demand += 1
                unit = self.jobs.popleft()
                if waited and self.jobs:
                    self._ready.notify()  # the next waiting processor, for the rest
                if self.fetching or len(self.jobs) >= self._spare() // 2:
                    if not self.jobs and not self.fetching:
                        # The last job of a batch smaller than its waiters, and nobody
                        # fetching: one still waiting fetches for itself (and so on), or it
                        # would wait for a running job to end, however long.
                        self._ready.notify()
                    return unit
                count = self._batch_size() - len(self.jobs)
            else:
                unit = None
                count = max(1, self._batch_size())
            self.fetching = True
            acks, self.acks = self.acks, []
            # Only a top-up (taken early, with jobs left) measures: a fetch from an empty
            # buffer (at start, after idling) says nothing about how short jobs are.
            began = None if unit is None else self.demand
        try:
            self._fetch(count, acks, began)
        except REDIS_ERRORS:
            if unit is None:
                raise
        surplus: list[Unit] = []
        with self._ready:
            while unit is None and self.alone:
                self._ready.wait()
            if unit is None and self.jobs:
                self.running += 1
                self.demand += 1
                unit = self.jobs.popleft()
            if unit is None:
                self.blocking += 1
            else:
                surplus = self._surplus()
        if unit is not None:
            if surplus:
                self._push_back(surplus)
            return unit
        try:
            unit = self.fetcher.block()
        finally:
            with self._ready:
                self.blocking -= 1
                if unit is not None:
                    while self.alone:  # in hand (in the working list), started afterwards
                        self._ready.wait()
                    self.running += 1
                    self.demand += 1
        return unit

    def run_alone(
        self, others: Callable[[], int], wait: bool = False, stop: threading.Event | None = None
    ) -> bool:
        """Let the calling job run alone in the process, so that a death of the process while
        it runs is evidence against it (`djqueue.worker.recovery`). True when no other job
        runs (``others()``, called under the buffer's lock); no job starts then until
        `end_alone`. Without ``wait``, False at once if others run; with it, no new job
        starts from now on and the call waits for the running ones to end (False if
        ``stop`` is set meanwhile)."""
        with self._ready:
            if others() <= 0:
                self.alone = True
                return True
            if not wait:
                return False
            self.alone = True
            while others() > 0:
                if stop is not None and stop.is_set():
                    self.alone = False
                    self._ready.notify_all()
                    return False
                self._ready.wait(0.05)
            return True

    def end_alone(self) -> None:
        with self._ready:
            self.alone = False
            self._ready.notify_all()

    def _fetch(self, count: int, acks: list[Unit], began: int | None = None) -> None:
        """The one fetch in flight: its jobs go to the buffer, for whoever is free. A fetch
        that tops the buffer up counts the demand meanwhile (``began``: `demand` when it
        was sent) for `_reach`."""
        units: list[Unit] = []
        try:
            units = self.fetcher.fetch(max(count, 0), acks)
        except BaseException:
            with self._ready:
                self.acks[:0] = acks
            raise
        finally:
            with self._ready:
                self.fetching = False
                if began is not None:
                    sample = self.demand - began
                    during = self.during
                    self.during = (
                        sample if during is None else during + (sample - during) * SMOOTHING
                    )
                    self._reach()
                self.jobs.extend(units)
                # One of those waiting for this batch, who wakes the next while jobs are
                # left (`next`): with short jobs the running processors take most of a batch
                # before a woken one gets the GIL, so waking one per job mostly woke
                # threads to find nothing, a futex call and thread switches each. When the
                # batch is empty, all of them: each then looks again or goes to BLMOVE.
                self._ready.notify(1 if units else self.concurrency)

    def _reach(self) -> None:
        """The spare for short jobs: at least ``max(2, concurrency // 2)``; more when the jobs
        started during a fetch call for it (`ROUND_TRIPS` fetches' worth), at most
        ``SPARE_LIMIT * concurrency`` and `HOLD`'s worth of jobs. Jobs of a few milliseconds
        or more at concurrency 10 start about one per fetch, so they keep the fixed spare: a
        process holds no more jobs a peer could run than before. When the buffer runs dry
        during a fetch, each processor that then waits counts once, so the spare grows until
        the round trip is covered (with pure-Python jobs the fetching thread gets the GIL back
        only when the others wait, so for them the limits set it)."""
        wanted = math.ceil(ROUND_TRIPS * (self.during or 0.0))
        limit = SPARE_LIMIT * self.concurrency
        if self.average:
            limit = min(limit, int(self.concurrency * HOLD / self.average))
        self.reach = max(self.fixed_spare, min(wanted, limit))

    def _spare(self) -> int:
        """Jobs to hold beyond the free processors: only while none waits in BLMOVE (the
        queues have work) and recent jobs are short (a round trip between two of them shows);
        then `reach`."""
        if self.blocking or self.average is None or self.average >= SHORT_JOB:
            return 0
        return self.reach

    def _batch_size(self) -> int:
        """Jobs for the free processors (the caller included when it has no job yet) and
        the spare ones, at most ``concurrency`` (the spare, when it grew past the fixed one
        to cover the round trip, and that is more). The spare is
        recomputed first, with the average job length as it is now: jobs that grew longer
        since the last top-up are not fetched for by the spare of shorter ones."""
        free = self.concurrency - self.running - self.blocking
        self._reach()
        spare = self._spare()
        grown = self.reach > self.fixed_spare
        return min(max(self.concurrency, spare) if grown else self.concurrency, free + spare)

    def _surplus(self) -> list[Unit]:
        """With processors waiting in BLMOVE, the buffered jobs no free processor will take
        (newest first), to go back to their queue where the waiting ones get them."""
        if not self.blocking:
            return []
        free = self.concurrency - self.running - self.blocking
        return [self.jobs.pop() for _ in range(len(self.jobs) - max(free, 0))]

    def _push_back(self, units: list[Unit]) -> None:
        with self._lock:
            acks, self.acks = self.acks, []
        try:
            self.fetcher.fetch(0, acks, units)
        except REDIS_ERRORS:
            # Still in the working list: keep them, a free processor or the shutdown gets them.
            with self._lock:
                self.acks[:0] = acks
                self.jobs.extend(reversed(units))

    def finished(self, unit: Unit, seconds: float) -> None:
        """``unit`` has run; it is acknowledged with the next call unless already settled."""
        with self._lock:
            self.running -= 1
            if not unit.acked:
                self.acks.append(unit)
            if self.average is None:
                self.average = seconds
            else:
                self.average += (seconds - self.average) * SMOOTHING

    def handed_off(self) -> None:
        """A processor passed its job to the event loop (`djqueue.worker.aio`) and is free
        for the next: the job no longer counts against the thread processors."""
        with self._lock:
            self.running -= 1

    def settled(self, unit: Unit, seconds: float) -> None:
        """An async job has run: acknowledged with the next call. Its duration is left out
        of the average, which sizes batches for the thread processors."""
        with self._lock:
            if not unit.acked:
                self.acks.append(unit)

    def give_back(self, unit: Unit) -> None:
        """An unstarted job back to the front of the buffer (taken while going quiet)."""
        with self._lock:
            self.running -= 1
            self.jobs.appendleft(unit)

    def forget(self) -> None:
        """A processor died holding a job: the manager settles the job itself."""
        with self._lock:
            self.running -= 1

    def flush(
        self, push_back: bool = False, queues: frozenset[str] = frozenset(), beat: bool = False
    ) -> None:
        """Acknowledge the finished jobs now and, when ``push_back``, send every buffered job
        back to the front of its queue (else those of ``queues``: paused), in one call.
        After a beat (``beat``), buffered jobs none of which was taken since the last beat go
        back too: the spare was fetched for short jobs, and when the jobs turn long (the
        average only learns it as they end) every processor is busy for a while, so they
        would wait here while a peer process is idle: they wait at most two beats.
        Called after each heartbeat (so an acknowledgement never waits longer than a beat),
        on quiet, at shutdown, and by the event loop when async jobs end. One at a time: the
        shutdown's flush, which comes right before the working lists are pushed back, waits
        for one under way, so no finished job is in flight then (it would be pushed back and
        run again)."""
        with self._flushing:
            with self._lock:
                acks, self.acks = self.acks, []
                if push_back:
                    back = list(reversed(self.jobs))
                    self.jobs.clear()
                elif queues:
                    back = [unit for unit in reversed(self.jobs) if unit.queue in queues]
                    if back:
                        self.jobs = deque(unit for unit in self.jobs if unit.queue not in queues)
                else:
                    back = []
                if beat and not push_back:
                    if self.jobs and self.demand == self._beat_demand:
                        back += reversed(self.jobs)
                        self.jobs.clear()
                    self._beat_demand = self.demand
            try:
                self.fetcher.fetch(0, acks, back)
            except BaseException:
                with self._lock:
                    self.acks[:0] = acks
                    self.jobs.extendleft(back)
                raise

    def held(self) -> Counter[tuple[str, bytes]]:
        """Buffered and pending jobs, by queue: not loose, whatever the janitor sees."""
        with self._lock:
            units = [*self.jobs, *self.acks]
        return Counter((unit.queue, unit.raw) for unit in units)
