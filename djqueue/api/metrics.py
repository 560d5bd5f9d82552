"""Per-job metrics over a time range: the one set of figures every face shows.

The workers write per-class and per-queue counts in Sidekiq 8's layout
(`djqueue.store.metrics`); `job_metrics` reads a range of them and computes what a page, a
Prometheus exposition or ``djqueue stats`` shows: counts, failure rate, mean time and
percentiles from Sidekiq's histogram, latency at pickup, and where the failures went
(retried, dead, discarded)::

    from djqueue.api.metrics import job_metrics

    report = job_metrics(minutes=60)
    for job in report.jobs:
        print(job.name, job.processed, job.failure_rate, job.mean_ms, job.p95_ms)
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import redis

from ..config import Settings
from ..store import metrics as store
from .base import ApiObject, Problems


@dataclass(frozen=True)
class Figures:
    """One job class's (or queue's) figures over the range."""

    name: str
    processed: int
    failed: int
    #: Where the failures went: retried later, moved to the dead set, kept nowhere (a
    #: ``retry_in`` hook's discard, ``retry: false``, ``dead: false``, cancelled while running).
    #: Counted when the failure is settled, so near a range's edge they may not add up to
    #: ``failed``; a job whose process died running it counts as dead, not failed.
    retried: int
    dead: int
    discarded: int
    #: Milliseconds spent in the jobs that succeeded.
    total_ms: int
    #: Queue latency at pickup, averaged over the jobs it was known for (None: none).
    latency_ms: float | None
    #: Successful jobs per `djqueue.store.metrics.HISTOGRAM_BOUNDS` bucket (empty for queues
    #: and for ranges in hours: Sidekiq keeps histograms per minute, for 8 hours).
    histogram: tuple[int, ...]
    #: (bucket start, epoch s, processed, failed, ms) per bucket that had jobs.
    series: tuple[tuple[int, int, int, int], ...]

    @property
    def succeeded(self) -> int:
        return self.processed - self.failed

    @property
    def failure_rate(self) -> float:
        """Failed / processed; 0 when nothing ran."""
        return self.failed / self.processed if self.processed else 0.0

    @property
    def mean_ms(self) -> float | None:
        """Mean time of a successful job (Sidekiq's ``total_avg``); None when none succeeded."""
        return self.total_ms / self.succeeded if self.succeeded > 0 else None

    def percentile_ms(self, fraction: float) -> float | None:
        """At most this many ms for ``fraction`` of the successful jobs: the upper bound of
        the histogram bucket holding that quantile (``inf`` past 335 s); None without one."""
        return store.percentile(list(self.histogram), fraction)

    @property
    def p50_ms(self) -> float | None:
        return self.percentile_ms(0.50)

    @property
    def p95_ms(self) -> float | None:
        return self.percentile_ms(0.95)

    @property
    def p99_ms(self) -> float | None:
        return self.percentile_ms(0.99)


@dataclass(frozen=True)
class MetricsReport:
    """`job_metrics`' answer: per class (busiest first) and per queue, and the range read."""

    jobs: tuple[Figures, ...]
    queues: tuple[Figures, ...]
    #: Start of the first bucket and end of the last, epoch seconds.
    starts_at: int
    ends_at: int
    #: Seconds per bucket: 60 (a range in minutes) or 600 (in hours).
    stride: int
    problems: Problems

    def job(self, name: str) -> Figures | None:
        return next((f for f in self.jobs if f.name == name), None)

    def queue(self, name: str) -> Figures | None:
        return next((f for f in self.queues if f.name == name), None)


class _Reader(ApiObject):
    pass


def job_metrics(
    minutes: int | None = None,
    hours: int | None = None,
    name: str | None = None,
    now: float | None = None,
    settings: Settings | None = None,
    redis_client: redis.Redis | None = None,
) -> MetricsReport:
    """The last ``minutes`` (default 60, at most 480: Sidekiq's one-minute buckets live 8 h)
    or ``hours`` (at most 72, in ten-minute buckets, without histograms) up to ``now``;
    ``name`` keeps the job classes whose name contains it (case-insensitive)."""
    if minutes is not None and hours is not None:
        raise ValueError("give minutes or hours, not both")
    for label, value in (("minutes", minutes), ("hours", hours)):
        if value is not None and value < 1:
            raise ValueError(f"{label} must be 1 or more, not {value!r}")
    reader = _Reader(settings, redis_client)
    when = time.time() if now is None else now
    found = reader._call(lambda: store.read(reader.redis, reader.keys, when, minutes, hours, name))
    jobs = sorted(
        (_figures(k, v) for k, v in found.classes.items()), key=lambda f: (-f.processed, f.name)
    )
    queues = sorted((_figures(k, v) for k, v in found.queues.items()), key=lambda f: f.name)
    return MetricsReport(
        jobs=tuple(jobs),
        queues=tuple(queues),
        starts_at=found.starts[0],
        ends_at=found.starts[-1] + found.stride,
        stride=found.stride,
        problems=found.problems,
    )


def _figures(name: str, read: store.Sums) -> Figures:
    return Figures(
        name=name,
        processed=read.processed,
        failed=read.failed,
        retried=read.retried,
        dead=read.dead,
        discarded=read.discarded,
        total_ms=read.ms,
        latency_ms=read.latency_ms / read.latency_n if read.latency_n else None,
        histogram=tuple(read.histogram),
        series=tuple((start, p, f, ms) for start, (p, f, ms) in sorted(read.series.items())),
    )
