"""The tally: this process's counters and busy-work table, kept in memory and written by the
heartbeat. (What the API reads back from Redis is `djqueue.api.Stats`, Sidekiq's name.)

Counting in memory keeps Redis out of the hot path: the heartbeat flushes the counts with
INCRBY once per beat (Sidekiq does the same), so ``stat:processed`` lags by one beat at most.
"""

from __future__ import annotations

import asyncio
import threading
import time
from asyncio import _get_running_loop
from collections.abc import Iterator
from typing import Any

from ..errors import OverLimit
from .fetch import Unit
from .log import tid
from .metrics import MetricsTally


class Tally:
    """Counts processed and failed jobs and records which thread runs which job.

    Used as a runtime step (`djqueue.pipeline`). Every job counts as processed when it ends,
    and as failed too when it raised, as Sidekiq counts them; with `metrics`, per class and
    queue as well (`djqueue.worker.metrics`), in the same step.
    """

    def __init__(self, metrics: MetricsTally | None = None) -> None:
        self._lock = threading.Lock()
        #: The per-job metrics, counted by this step and flushed with these counts; None: off.
        self.metrics = metrics
        self.processed = 0
        self.failed = 0
        #: Jobs taken after their deadline and not run (`djqueue.worker.expiry`); neither
        #: processed nor failed.
        self.expired = 0
        #: Jobs run since the process started (never reset: ``--max-jobs`` counts these).
        self.total = 0
        #: tid -> {"queue", "payload" (the job JSON as stored), "run_at" (int epoch s)}
        self.work: dict[str, dict[str, Any]] = {}

    def __call__(self, unit: Unit, payload: dict[str, Any]) -> Iterator[None]:
        # A processor thread's entry is keyed by its thread; on the event loop, which runs
        # many jobs at once, each job's by its task.
        key = tid() if _get_running_loop() is None else tid(id(asyncio.current_task()))
        self.work[key] = {"queue": unit.queue, "payload": unit.raw, "run_at": int(time.time())}
        metrics = self.metrics
        started = metrics.start(payload) if metrics is not None else None
        failed = False
        try:
            yield
        except OverLimit:
            raise  # put back by settling, not a failure: counted as processed only
        except BaseException:
            failed = True
            raise
        finally:
            del self.work[key]
            self.count(failed)
            if metrics is not None and started is not None:
                metrics.end(started, payload, unit.queue, failed)

    def count(self, failed: bool) -> None:
        with self._lock:
            self.processed += 1
            self.total += 1
            if failed:
                self.failed += 1

    def count_expired(self) -> None:
        with self._lock:
            self.expired += 1

    def take_expired(self) -> int:
        """The expired jobs since the last take, reset to zero (flushed with the beat)."""
        with self._lock:
            count, self.expired = self.expired, 0
        return count

    def take(self) -> tuple[int, int]:
        """The counts since the last take, reset to zero (the heartbeat flushes them)."""
        with self._lock:
            counts = (self.processed, self.failed)
            self.processed = self.failed = 0
        return counts

    def give_back(self, processed: int, failed: int, expired: int = 0) -> None:
        """Put counts back after a failed flush, so an outage loses none."""
        with self._lock:
            self.processed += processed
            self.failed += failed
            self.expired += expired

    def busy(self) -> dict[str, dict[str, Any]]:
        return self.work.copy()
