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
from ..store import bad_keys
from ..store.replies import integer, text
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
        k = self.keys
        wanted = [(k.processed, "count"), (k.failed, "count"), (k.schedule, "zset")]
        wanted += [(k.retry, "zset"), (k.dead, "zset"), (k.processes, "set"), (k.queues, "set")]
        wanted.append((k.queue(self.settings.default_queue), "list"))
        pipe = self.redis.pipeline(transaction=False)
        pipe.get(k.processed)
        pipe.get(k.failed)
        pipe.zcard(k.schedule)
        pipe.zcard(k.retry)
        pipe.zcard(k.dead)
        pipe.smembers(k.processes)
        pipe.smembers(k.queues)
        pipe.lindex(k.queue(self.settings.default_queue), -1)
        replies, problems = self._read(pipe, wanted)
        processed, failed, scheduled, retries, dead, procs, queues, oldest = replies
        procs = sorted(text(p) for p in procs or ())
        queues = sorted(text(q) for q in queues or ())
        pipe = self.redis.pipeline(transaction=False)
        wanted = [(k.process(identity), "hash") for identity in procs]
        wanted += [(k.queue(name), "list") for name in queues]
        for identity in procs:
            pipe.hget(k.process(identity), "busy")
        for name in queues:
            pipe.llen(k.queue(name))
        replies, more = self._read(pipe, wanted) if wanted else ([], [])
        lengths = dict(zip(queues, (integer(n) for n in replies[len(procs) :]), strict=False))
        latency = 0.0
        if oldest is not None:
            enqueued = JobRecord(oldest).enqueued_at
            latency = max(0.0, time.time() - enqueued) if enqueued else 0.0
        return {
            "processed": integer(processed),
            "failed": integer(failed),
            "scheduled_size": integer(scheduled),
            "retry_size": integer(retries),
            "dead_size": integer(dead),
            "processes_size": len(procs),
            "busy": sum(integer(b) for b in replies[: len(procs)]),
            "enqueued": sum(lengths.values()),
            "queues": lengths,
            "default_queue_latency": latency,
            "problems": problems + more,
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
        first = start or dt.datetime.now(dt.timezone.utc).date()
        self.dates = [(first - dt.timedelta(days=n)).isoformat() for n in range(days)]
        self._processed: dict[str, int] | None = None
        self._failed: dict[str, int] | None = None
        #: Daily counters read so far that do not hold a number (each counts as 0).
        self.problems: Problems = []

    def _counts(self, stat: str) -> dict[str, int]:
        keys = [self.keys.daily(stat, day) for day in self.dates]
        values = self._call(lambda: self.redis.mget(keys))
        for key, value in zip(keys, values, strict=True):
            if problem := bad_keys.not_a_count(value):
                self.problems.append((key, problem))
        return {day: integer(value) for day, value in zip(self.dates, values, strict=False)}

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
