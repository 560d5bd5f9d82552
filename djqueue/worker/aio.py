"""Native ``async def`` jobs: one event loop per worker process, in a thread of its own.

A processor thread that takes an ``async def`` job does not run it: it hands it to the loop
(`AsyncRunner.submit`) and goes back for the next job. The loop runs up to
``async_concurrency`` such jobs at once (100 by default), so a thousand jobs awaiting the
network need a few threads, not a thousand. Everything else is shared with the thread
processors: the batched fetch and acknowledgements (a finished async job is acknowledged with
the next call any processor makes, or by the loop itself within `ACK_DELAY`, at once when it
is idle), the settle step, the log lines, the signals, the busy table, job tracking and crash
recovery, each the very step thread-run jobs go through (`djqueue.pipeline`); server
middleware wraps the job the same way (`djqueue.executor.run_async`).

When ``async_concurrency`` jobs are running, the processor holding the next one waits for a
slot: the backpressure that keeps a process from fetching more than it can run.

Shutdown: running async jobs get the same ``--timeout`` as the others; those still running
then are cancelled (``asyncio.CancelledError`` inside the job: ``finally`` blocks run) and,
never acknowledged, go back to their queues with everything else the process held.
"""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from .. import executor, pipeline
from . import job_logger
from .backoff import REDIS_ERRORS
from .fetch import Unit
from .log import logger

if TYPE_CHECKING:
    from .runtime import Runtime

#: Threads of the loop's pool beyond one per job (name lookups, ``run_in_executor``).
SPARE_THREADS = 8
#: Longest wait, seconds, between an async job's end and its acknowledgement while other
#: async jobs still run (their ends share the round trip); none once the loop is idle.
ACK_DELAY = 0.05


class AsyncRunner:
    """The loop of one process and the async jobs on it. The loop's thread starts with the
    first async job, so a process with none pays nothing."""

    def __init__(self, runtime: Runtime, limit: int) -> None:
        self.runtime = runtime
        self.limit = limit
        self.slots = threading.BoundedSemaphore(limit)
        self.loop: asyncio.AbstractEventLoop | None = None
        self.thread: threading.Thread | None = None
        #: The jobs on the loop now, with their futures (for `in_hand` and shutdown).
        self.running: dict[int, tuple[Unit, Any]] = {}
        #: Set by `cancel` (shutdown): a CancelledError then means "back to the queue".
        self.cancelling = False
        #: The acknowledgement due on the loop (`_acknowledge_soon`), if one is.
        self._ack_due: asyncio.TimerHandle | None = None
        self._lock = threading.Lock()

    # -- from processor threads ------------------------------------------------------------------

    def submit(self, unit: Unit, payload: dict[str, Any]) -> bool:
        """Start ``unit`` on the loop once a slot is free; False if the process went quiet
        while waiting (the caller gives the job back)."""
        while not self.slots.acquire(timeout=0.1):
            if self.runtime.quieting.is_set():
                return False
        loop = self._loop()
        with self._lock:
            future = asyncio.run_coroutine_threadsafe(self._run(unit, payload), loop)
            self.running[id(unit)] = (unit, future)
        return True

    def _loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self.loop is None:
                self.loop = asyncio.new_event_loop()
                # The loop's threads for blocking calls: a ``call_next`` middleware without
                # ``acall`` holds one per running job (`djqueue.pipeline.Wrapper`), and the
                # loop still needs some for name lookups and ``run_in_executor``: never fewer
                # than the jobs, plus spares.
                self.loop.set_default_executor(
                    ThreadPoolExecutor(self.limit + SPARE_THREADS, "djqueue-asyncio-sync")
                )
                self.thread = threading.Thread(
                    target=self._serve, args=(self.loop,), name="djqueue-asyncio", daemon=True
                )
                self.thread.start()
            return self.loop

    @staticmethod
    def _serve(loop: asyncio.AbstractEventLoop) -> None:
        job_logger.no_template()
        loop.run_forever()

    # -- on the loop -------------------------------------------------------------------------------

    async def _run(self, unit: Unit, payload: dict[str, Any]) -> None:
        started = time.monotonic()
        cancelled = False

        async def job() -> None:
            unit.result = await executor.run_async(payload, unit.queue)

        try:
            await pipeline.run_async(self.runtime.steps, (unit, payload), job)
        except asyncio.CancelledError as exc:
            if self.cancelling:
                cancelled = True  # shutdown: never acknowledged, it goes back to its queue
            else:  # the job's own code raised it (an awaited task was cancelled): it failed
                self.runtime.settle.crashed(unit, exc, f"async job {payload.get('jid')}")
        except BaseException as exc:  # noqa: BLE001 - past the settle step: settle it as failed
            logger.error("async job %s failed outside its steps", payload.get("jid"), exc_info=exc)
            self.runtime.settle.crashed(unit, exc, f"async job {payload.get('jid')}")
        finally:
            with self._lock:
                mine = self.running.pop(id(unit), None) is not None
            if mine:
                self.slots.release()
            if not cancelled:
                self.runtime.buffer.settled(unit, time.monotonic() - started)
                self._acknowledge_soon()

    def _acknowledge_soon(self) -> None:
        """Acknowledge settled jobs within `ACK_DELAY`, at once when no other async job runs.

        Thread processors acknowledge a job with their next fetch, which comes at once; an
        async job's end has no fetch of its own to ride on, and processors waiting in BLMOVE
        may not fetch for seconds: a kill -9 then ran finished jobs a second time. The write
        runs on the loop's pool, so the loop never waits for Redis."""
        loop = self.loop
        if loop is None:
            return
        if self._ack_due is not None:
            if self.busy():
                return  # already due within ACK_DELAY
            self._ack_due.cancel()
        self._ack_due = loop.call_later(ACK_DELAY if self.busy() else 0, self._acknowledge, loop)

    def _acknowledge(self, loop: asyncio.AbstractEventLoop) -> None:
        self._ack_due = None
        loop.run_in_executor(None, self._flush_acks)

    def _flush_acks(self) -> None:
        try:
            self.runtime.buffer.flush()
        except REDIS_ERRORS:
            pass  # kept for the next fetch or beat (processors report the outage)

    # -- shutdown ---------------------------------------------------------------------------------

    def busy(self) -> int:
        with self._lock:
            return len(self.running)

    def units(self) -> list[Unit]:
        with self._lock:
            return [unit for unit, _ in self.running.values()]

    def cancel(self, wait: float = 2.0) -> int:
        """Cancel the jobs still running; returns how many were. Waits up to ``wait`` seconds
        for them to unwind."""
        self.cancelling = True
        with self._lock:
            running = list(self.running.items())
        if not running or self.loop is None:
            return 0
        for _, (_, future) in running:
            future.cancel()
        deadline = time.monotonic() + wait
        while self.busy() and time.monotonic() < deadline:
            time.sleep(0.01)
        with self._lock:
            # Cancelled before their task began: `_run` never ran to free their slots.
            left, self.running = len(self.running), {}
        for _ in range(left):
            self.slots.release()
        return len(running)

    def stop(self) -> None:
        if self.loop is not None and self.thread is not None:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(5)
