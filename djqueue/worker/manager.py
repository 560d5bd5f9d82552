"""The manager: starts ``concurrency`` processors, replaces any that dies, and runs shutdown.

Shutdown follows Sidekiq: go quiet (no new fetches), give running jobs until the deadline to
finish, then push whatever is still unfinished back to the front of its queue. Python cannot
stop a thread from outside, so jobs still running at that point are abandoned with the process
(their threads are daemons); their jobs are already back in the queue and will run again.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from typing import Any

from .. import limits
from ..config import Settings
from ..store import JobStore
from . import around
from .aio import AsyncRunner
from .backoff import REDIS_ERRORS
from .buffer import JobBuffer
from .expiry import Expiry
from .fetch import Fetcher
from .job_logger import JobLogger, JobSignals
from .lifecycle import Lifecycle
from .limit_step import LimitStep
from .log import logger
from .memory import MemoryLimit
from .processor import Processor
from .recovery import RecoveryGuard
from .runtime import Runtime
from .settle import Settle
from .settle_step import SettleStep
from .tally import Tally
from .time_limit import TimeLimit


class Manager:
    """A `djqueue.worker.component.Part`: started first and stopped first by the launcher, its
    stop is the shutdown's wait for running jobs."""

    def __init__(
        self,
        settings: Settings,
        jobs: JobStore,
        fetcher: Fetcher,
        tally: Tally,
        memory: MemoryLimit | None = None,
        forced: threading.Event | None = None,
    ) -> None:
        self.settings = settings
        self.fetcher = fetcher
        self.buffer = JobBuffer(fetcher, settings.concurrency)
        self.tally = tally
        #: Set by quiet(): processors finish their job and fetch nothing more.
        self.quieting = threading.Event()
        #: Set when shutdown has pushed unfinished jobs back: stop retrying Redis writes.
        self.hard_stop = threading.Event()
        #: Set (by a second TERM) to stop waiting for running jobs.
        self.forced = forced or threading.Event()
        #: What `stop` pushed back: a count, or None when it could not or was cut short.
        self.pushed: int | None = None
        #: Where every failed job is settled (retry, drop, dead set).
        self.settle = Settle(jobs, fetcher, settings, tally, self.hard_stop)
        #: Interrupts jobs past their ``time_limit``; its watchdog thread is a launcher part.
        self.time_limit = TimeLimit(settings.timeout)
        #: Every job's steps, the same for thread-run and ``async def`` jobs.
        self.steps: list[Any] = self._steps(memory)
        #: What processors and the async runner are given (not the manager itself).
        self.runtime = Runtime(self.buffer, self.steps, self.settle, self.quieting, self.hard_stop)
        self.aio = AsyncRunner(self.runtime, settings.async_concurrency)
        self.processors: set[Processor] = set()
        self._lock = threading.Lock()
        self._count = 0

    def _steps(self, memory: MemoryLimit | None) -> list[Any]:
        """The steps around every job, outermost first: the user's and a framework's
        (`djqueue.worker.around`), the recovery guard (which passes jobs that were not pushed
        back after a crash), the memory limit, the deadline of expiring jobs (a late job ends
        there, unstarted), then settling (it sees what the inner steps already reported; it
        puts back a job its limiters refused), the limiters, the log lines, the signals, the
        tally (with the per-job metrics, `djqueue.worker.metrics`), the job's status, and
        innermost the time limit, so that what it raises is the job's failure to every step
        around."""
        guard = RecoveryGuard(self.settle, self.buffer, self.jobs_running)
        return [
            *around.steps(),
            guard,
            *([memory] if memory is not None else []),
            Expiry(self.tally),
            SettleStep(self.settle),
            LimitStep(self.settle.limits, limits.lease_seconds(self.settings.heartbeat_interval)),
            JobLogger(),
            JobSignals(),
            self.tally,
            Lifecycle(),
            self.time_limit,
        ]

    def start(self) -> None:
        for _ in range(self.settings.concurrency):
            self._spawn()

    def _spawn(self) -> None:
        with self._lock:
            self._count += 1
            processor = Processor(self.runtime, self._count, self.aio.submit, self.processor_ended)
            self.processors.add(processor)
        processor.start()

    def processor_ended(self, processor: Processor, exc: BaseException | None) -> None:
        """A processor left (``exc`` None), or died: then log, settle the job it held, and
        start a replacement (unless shutting down)."""
        if exc is None:
            with self._lock:
                self.processors.discard(processor)
            return
        logger.error("processor %d died; starting another", processor.number, exc_info=exc)
        with self._lock:
            self.processors.discard(processor)
        unit = processor.unit
        if unit is not None:
            self.buffer.forget()
        self.settle.crashed(unit, exc, f"the job of processor {processor.number}")
        if not self.quieting.is_set():
            self._spawn()

    def quiet(self) -> None:
        """Fetch no more, and send buffered jobs back to their queues at once (processors
        busy with long jobs would not reach them for a while)."""
        self.quieting.set()
        self.tidy()

    def tidy(self, paused: frozenset[str] = frozenset()) -> None:
        """Acknowledge finished jobs; when quiet, push back buffered ones, else those of the
        ``paused`` queues (they wait there for the resume; after an outage that made a
        push-back fail, the next beat's tidy sends them) and those no processor took for a
        whole beat (`JobBuffer.flush`). After each beat."""
        try:
            self.buffer.flush(push_back=self.quieting.is_set(), queues=paused, beat=True)
        except REDIS_ERRORS:
            pass  # kept for the next try; they are in the working list meanwhile

    def jobs_running(self) -> int:
        """Jobs started and not ended: thread processors holding one, and the event loop's."""
        return self.buffer.running + self.aio.busy()

    def in_hand(self) -> Counter[tuple[str, bytes]]:
        """Jobs this process holds (running, buffered, or waiting for their ack), by queue."""
        held = self.buffer.held()
        running = [p.unit for p in list(self.processors)] + self.aio.units()
        for unit in running:
            if unit is not None and not unit.acked:
                held[(unit.queue, unit.raw)] += 1
        return held

    def stop(self, deadline: float) -> None:
        """Quiet, wait for running jobs until ``deadline`` (monotonic) or until `forced` is
        set, push back what is unfinished, then end the event loop. `pushed` says how many
        jobs went back: None when Redis could not be reached (the working lists are then left
        for a live worker to take back) or when the stop was forced (the entry stays for a
        sweep)."""
        self.pushed = self._drain(deadline, self.forced)
        self.aio.stop()

    def _drain(self, deadline: float, forced: threading.Event) -> int | None:
        self.quiet()
        self._wait(deadline, lambda p: True, forced)
        while self.aio.busy() and time.monotonic() < deadline and not forced.is_set():
            forced.wait(0.05)
        cancelled = self.aio.cancel()
        if cancelled:
            logger.warning("cancelled %d async job(s) still running; they go back", cancelled)
        # A processor between jobs (fetching, or waiting in BLMOVE) returns within the block
        # timeout, possibly with a job; let it put that back before the final push-back, which
        # must come after every move into our working lists.
        self._wait(
            time.monotonic() + self.fetcher.block_timeout + 1, lambda p: p.unit is None, forced
        )
        self.hard_stop.set()
        cut_short = forced.is_set()
        if cut_short:
            # Idle processors may still wait in BLMOVE and would take a job pushed back now:
            # cancel their waits. Should one still catch a job, it lands in our working list,
            # whose index entry then stays, so the next sweep (ours at the next start, or a
            # live peer's) pushes it back.
            self.fetcher.lists.cancel_waits()
        try:
            # Acknowledge first: a job that completed must not be pushed back and run again.
            self.buffer.flush(push_back=True)
            pushed = self.fetcher.requeue_all(drop_index=not cut_short)
        except REDIS_ERRORS as exc:
            logger.error("could not push unfinished jobs back (%s); a live worker will", exc)
            return None
        if pushed:
            logger.warning("pushed %d unfinished job(s) back to their queues", pushed)
        return None if cut_short else pushed

    def _wait(self, deadline: float, which: Any, forced: threading.Event) -> None:
        while True:
            with self._lock:
                waiting = [p for p in self.processors if which(p)]
            if not waiting or time.monotonic() >= deadline or forced.is_set():
                return
            forced.wait(max(0.0, min(0.05, deadline - time.monotonic())))
