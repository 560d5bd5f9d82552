"""Counters for a dashboard: totals, set sizes, busy threads, latency and daily history.

`Stats` reads everything in two pipelined round trips when first asked (one for the counters
and set sizes, one for the per-process busy counts and per-queue lengths), and keeps the
figures, so a page that shows ten of them asks Redis twice. Build a new one to refresh.
"""

from __future__ import annotations

import datetime as dt
import time
from typing import Any

import redis

from ..config import Settings
from ..store.figures import daily_counts, read_figures
from .base import ApiObject, Problems
from .record import JobRecord


class Stats(ApiObject):
    """A snapshot of the counters, as ``Sidekiq::Stats`` shows them."""

    def __init__(
        self, settings: Settings | None = None, redis_client: redis.Redis | None = None
    ) -> None:
        super().__init__(settings, redis_client)
        self._figures: dict[str, Any] | None = None

    def _load(self) -> dict[str, Any]:
        if self._figures is None:
            self._figures = self._call(self._fetch)
        return self._figures

    def _fetch(self) -> dict[str, Any]:
        found = read_figures(self.redis, self.keys, self.settings.default_queue)
        latency = 0.0
        if found.oldest is not None:
            enqueued = JobRecord(found.oldest).enqueued_at
            latency = max(0.0, time.time() - enqueued) if enqueued else 0.0
        return {
            "processed": found.processed,
            "failed": found.failed,
            "expired": found.expired,
            "scheduled_size": found.scheduled_size,
            "retry_size": found.retry_size,
            "dead_size": found.dead_size,
            "processes_size": len(found.processes),
            "busy": found.busy,
            "enqueued": sum(found.queues.values()),
            "queues": found.queues,
            "default_queue_latency": latency,
            "paused": found.paused,
            "problems": found.problems,
        }

    @property
    def problems(self) -> Problems:
        """The keys these figures could not read: (key, what is wrong with it); each counts
        as 0 (`djqueue.web` shows them on the dashboard)."""
        return list(self._load()["problems"])

    @property
    def processed(self) -> int:
        """Jobs finished since the counters were last reset (flushed by workers each beat)."""
        return int(self._load()["processed"])

    @property
    def failed(self) -> int:
        return int(self._load()["failed"])

    @property
    def expired(self) -> int:
        """Jobs taken after their deadline (``expires_in``) and not run, ever (flushed by
        workers each beat)."""
        return int(self._load()["expired"])

    @property
    def enqueued(self) -> int:
        """Jobs waiting in all queues."""
        return int(self._load()["enqueued"])

    @property
    def scheduled_size(self) -> int:
        return int(self._load()["scheduled_size"])

    @property
    def retry_size(self) -> int:
        return int(self._load()["retry_size"])

    @property
    def dead_size(self) -> int:
        return int(self._load()["dead_size"])

    @property
    def busy(self) -> int:
        """Jobs running now, as last reported by each process's heartbeat."""
        return int(self._load()["busy"])

    @property
    def processes_size(self) -> int:
        return int(self._load()["processes_size"])

    @property
    def default_queue_latency(self) -> float:
        """Seconds the oldest job in the default queue has waited (0 when it is empty)."""
        return float(self._load()["default_queue_latency"])

    @property
    def queues(self) -> dict[str, int]:
        """Queue name -> length, longest first."""
        lengths: dict[str, int] = self._load()["queues"]
        return dict(sorted(lengths.items(), key=lambda item: (-item[1], item[0])))

    @property
    def paused(self) -> list[str]:
        """The paused queues' names, sorted (`djqueue.api.Queue.pause`)."""
        return list(self._load()["paused"])

    def history(self, days: int = 30, start: dt.date | None = None) -> History:
        return History(days, start, **self._context())

    def reset(self, *stats: str) -> None:
        """Set the lifetime counters (``"processed"``, ``"failed"``; both by default) to 0."""
        unknown = set(stats) - {"processed", "failed"}
        if unknown:
            raise ValueError(f"unknown stat(s) {', '.join(sorted(unknown))}")
        names = stats or ("processed", "failed")
        self._call(lambda: self.process_store.reset_counters(names))
        self._figures = None


class History(ApiObject):
    """Daily processed and failed counts (UTC days), newest first, as ``{"YYYY-MM-DD": n}``.

    Workers write ``stat:processed:YYYY-MM-DD`` with a five-year expiry, so that is as far back
    as it goes. One MGET per counter.
    """

    def __init__(
        self,
        days: int = 30,
        start: dt.date | None = None,
        settings: Settings | None = None,
        redis_client: redis.Redis | None = None,
    ) -> None:
        super().__init__(settings, redis_client)
        if not 1 <= days <= 5 * 365:
            raise ValueError("days must be between 1 and 1825 (five years)")
        first = start or dt.datetime.now(dt.UTC).date()
        self.dates = [(first - dt.timedelta(days=n)).isoformat() for n in range(days)]
        self._processed: dict[str, int] | None = None
        self._failed: dict[str, int] | None = None
        #: Daily counters read so far that do not hold a number (each counts as 0).
        self.problems: Problems = []

    def _counts(self, stat: str) -> dict[str, int]:
        counts, problems = self._call(lambda: daily_counts(self.redis, self.keys, stat, self.dates))
        self.problems += problems
        return counts

    @property
    def processed(self) -> dict[str, int]:
        if self._processed is None:
            self._processed = self._counts("processed")
        return self._processed

    @property
    def failed(self) -> dict[str, int]:
        if self._failed is None:
            self._failed = self._counts("failed")
        return self._failed
