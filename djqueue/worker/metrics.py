"""Per-job metrics, counted in memory as jobs run and handed to the heartbeat to write.

Counted in the tally's runtime step (`djqueue.worker.tally`, one step for all counting): for
each job, under the name a person knows it by
(`djqueue.api.record.display_name`: ``display_class``, an ActiveJob's wrapped class, else
``class``) and its queue, it counts the job as processed, and as failed when it raised; a job
that succeeded adds its milliseconds and a tick in Sidekiq's histogram; the queue latency at
pickup (now minus ``enqueued_at``) is summed. Where a failed job went (retried, dead,
discarded) is counted in the same row by `djqueue.worker.settle`, through `settled`, once it
is written there. Nothing touches Redis here: the heartbeat takes
the counts once a beat and writes them with the beat (`djqueue.store.metrics`, Sidekiq 8's
layout), as Sidekiq's ``ExecutionTracker`` flushes on its ``:beat`` event.
"""

from __future__ import annotations

import threading
import time
from bisect import bisect_right
from typing import Any

from ..api.record import display_name
from ..payload import to_seconds
from ..store.metrics import (
    FAILED,
    HISTOGRAM,
    HISTOGRAM_BOUNDS,
    LATENCY_MS,
    LATENCY_N,
    MS,
    PROCESSED,
    ROW_SIZE,
    Counts,
)


class MetricsTally:
    """The counts since the last beat, per (class, queue); the `djqueue.worker.tally.Tally`
    holds one when the ``metrics`` setting is on."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: Counts = {}

    def start(self, payload: dict[str, Any]) -> tuple[int, int | None]:
        """A job starts: the monotonic clock, and its latency at pickup in ms (None without
        an ``enqueued_at``)."""
        enqueued = payload.get("enqueued_at")
        if type(enqueued) is not float:  # float seconds as a rule; Sidekiq 8 writes ms
            enqueued = to_seconds(enqueued)
        latency = None if enqueued is None else max(0, int((time.time() - enqueued) * 1000))
        return time.monotonic_ns(), latency

    def end(
        self, started: tuple[int, int | None], payload: dict[str, Any], queue: str, failed: bool
    ) -> None:
        """The job that `start` returned ``started`` for has ended (raised: ``failed``)."""
        ms = (time.monotonic_ns() - started[0]) // 1_000_000
        latency = started[1]
        key = (display_name(payload), queue)
        with self._lock:
            row = self._counts.get(key) or self._new_row(key)
            row[PROCESSED] += 1
            if failed:
                row[FAILED] += 1
            else:
                # As Sidekiq: only successful jobs are timed (a failure's time says little).
                row[MS] += ms
                row[HISTOGRAM + bisect_right(HISTOGRAM_BOUNDS, ms)] += 1
            if latency is not None:
                row[LATENCY_MS] += latency
                row[LATENCY_N] += 1

    def settled(self, payload: dict[str, Any], queue: str, fate: int) -> None:
        """A failed job went where ``fate`` says: ``RETRIED``, ``DEAD`` or ``DISCARDED``
        (`djqueue.store.metrics`' row indexes)."""
        key = (display_name(payload), queue)
        with self._lock:
            (self._counts.get(key) or self._new_row(key))[fate] += 1

    def _new_row(self, key: tuple[str, str]) -> list[int]:
        """A row of zeros for ``key``, kept (the caller holds the lock)."""
        row = self._counts[key] = [0] * ROW_SIZE
        return row

    def take(self) -> Counts:
        """The counts since the last take, reset (the heartbeat writes them)."""
        with self._lock:
            counts, self._counts = self._counts, {}
        return counts

    def give_back(self, counts: Counts) -> None:
        """Put counts back after a failed write, so an outage loses none."""
        with self._lock:
            for key, row in counts.items():
                mine = self._counts.setdefault(key, [0] * ROW_SIZE)
                for i, value in enumerate(row):
                    mine[i] += value
