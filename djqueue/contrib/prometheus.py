"""Prometheus exposition of the figures every other face shows, read from Redis.

Nothing here computes a figure of its own: the lifetime counters, set sizes, processes, busy
threads, queue sizes and latencies and the outbox backlog are `djqueue.api.figures.figures`'
(each exported under the name and HELP line it gives), per-job and per-queue counts and
execution-time histograms are `djqueue.api.metrics.job_metrics`'. So ``djqueue stats``, the
dashboard, the Metrics page and a scrape agree, and a scrape is right however many worker
processes and hosts there are: no multiprocess files, every worker writes to Redis with its
heartbeat.

The per-job figures cover a sliding window (``minutes``, default 60) of Sidekiq's one-minute
buckets, which expire; they are gauges (``djqueue_job_processed``), not counters, because a
sum over a window falls when an old bucket expires and ``rate()`` would read that as a reset.
The lifetime counters (``djqueue_processed_total``, ``djqueue_failed_total``) are real
counters. Where the failures went is in the same window: ``djqueue_job_retried``,
``djqueue_job_dead`` (moved to the dead set) and ``djqueue_job_discarded`` (kept nowhere), and
their ``djqueue_queue_`` twins.

Needs the ``prometheus`` extra (``pip install djqueue[prometheus]``).
"""

from __future__ import annotations

import hmac
from collections.abc import Iterator

from ..errors import ConfigurationError

try:
    import prometheus_client  # noqa: F401
except ImportError as exc:  # pragma: no cover - the extra's absence
    raise ConfigurationError(
        "prometheus", "the Prometheus exposition needs the extra: pip install 'djqueue[prometheus]'"
    ) from exc

from prometheus_client.core import (  # noqa: E402
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.exposition import generate_latest  # noqa: E402
from prometheus_client.registry import CollectorRegistry  # noqa: E402

from ..api.figures import figures  # noqa: E402
from ..api.metrics import job_metrics  # noqa: E402
from ..config import Settings  # noqa: E402
from ..store.metrics import HISTOGRAM_BOUNDS  # noqa: E402

#: The per-job and per-queue counts exported (`djqueue.api.metrics.Figures`' fields), with
#: what each counts.
COUNTS = {
    "processed": "Jobs processed",
    "failed": "Jobs failed",
    "retried": "Failed jobs scheduled for a retry",
    "dead": "Failed jobs moved to the dead set",
    "discarded": "Failed jobs kept nowhere (discarded, retry: false, dead: false, cancelled)",
}

#: The exposition's content type (text format 0.0.4).
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class DjqueueCollector:
    """A custom collector: each scrape reads Redis once through the inspection API."""

    def __init__(self, settings: Settings | None = None, minutes: int = 60) -> None:
        self.settings = settings
        self.minutes = minutes

    def collect(self) -> Iterator[Metric]:
        overview = figures(self.settings)
        for figure in overview.figures:
            if not figure.metric:
                continue
            kind = CounterMetricFamily if figure.counter else GaugeMetricFamily
            family = kind(f"djqueue_{figure.metric}", figure.meaning)
            if figure.value is not None:
                family.add_metric([], figure.value)
            yield family
        size = GaugeMetricFamily(
            "djqueue_queue_size", "Jobs waiting in the queue.", labels=["queue"]
        )
        latency = GaugeMetricFamily(
            "djqueue_queue_latency_seconds",
            "Seconds the oldest job in the queue has waited (0 when empty).",
            labels=["queue"],
        )
        paused = GaugeMetricFamily(
            "djqueue_queue_paused",
            "1 when no worker takes jobs from the queue (paused), else 0.",
            labels=["queue"],
        )
        for queue in overview.queues:
            size.add_metric([queue.name], queue.size)
            latency.add_metric([queue.name], queue.latency)
            paused.add_metric([queue.name], int(queue.paused))
        yield size
        yield latency
        yield paused
        yield from self._jobs()

    def _jobs(self) -> Iterator[Metric]:
        report = job_metrics(minutes=self.minutes, settings=self.settings)
        window = f" over the last {self.minutes} minutes"
        families = {
            (kind, stat): GaugeMetricFamily(
                f"djqueue_{kind}_{stat}",
                f"{meaning} per {'job class' if kind == 'job' else 'queue'}{window}.",
                labels=[kind if kind == "queue" else "job"],
            )
            for kind in ("job", "queue")
            for stat, meaning in COUNTS.items()
        }
        seconds = HistogramMetricFamily(
            "djqueue_job_execution_seconds",
            f"Execution time of the successful jobs per job class{window} "
            "(Sidekiq's histogram buckets).",
            labels=["job"],
        )
        for kind, rows in (("job", report.jobs), ("queue", report.queues)):
            for row in rows:
                for stat in COUNTS:
                    families[kind, stat].add_metric([row.name], getattr(row, stat))
        for row in report.jobs:
            counts = list(row.histogram) or [0] * (len(HISTOGRAM_BOUNDS) + 1)
            buckets, total = [], 0
            for bound, count in zip(HISTOGRAM_BOUNDS, counts, strict=False):
                total += count
                buckets.append((_le(bound / 1000), total))
            buckets.append(("+Inf", total + sum(counts[len(HISTOGRAM_BOUNDS) :])))
            seconds.add_metric([row.name], buckets, row.total_ms / 1000)
        yield from families.values()
        yield seconds


def _le(seconds: float) -> str:
    return repr(seconds)


def exposition(settings: Settings | None = None, minutes: int = 60) -> str:
    """The text a scrape answers (``djqueue metrics`` prints it)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(DjqueueCollector(settings, minutes))
    return generate_latest(registry).decode()


def bearer_check(header: str | None, token: str | None) -> bool | None:
    """What an ``Authorization`` header says about a scrape, given the ``METRICS_TOKEN``
    setting: True (the token, compared in constant time), False (a bearer token, but not this
    one, or no token is set: answer 401), None (no bearer token: the user's session decides)."""
    if not header or not header.startswith("Bearer "):
        return None
    if not token:
        return False
    sent = header.removeprefix("Bearer ").strip().encode()
    return hmac.compare_digest(sent, token.encode())
