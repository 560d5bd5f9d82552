"""Prometheus exposition of the figures every other face shows, read from Redis.

Nothing here computes a figure of its own: the lifetime counters, set sizes, processes and busy
threads are `djqueue.api.Stats`'; queue sizes and latencies are `djqueue.api.Queue.summary`'s;
per-job and per-queue counts and execution-time histograms are
`djqueue.api.metrics.job_metrics`'; the outbox backlog is what the last relay round published
(`djqueue.outbox.published`). So ``djqueue stats``, the dashboard, the Metrics page and a scrape
agree, and a scrape is right however many worker processes and hosts there are: no
multiprocess files, every worker writes to Redis with its heartbeat.

The per-job figures cover a sliding window (``minutes``, default 60) of Sidekiq's one-minute
buckets, which expire; they are gauges (``djqueue_job_processed``), not counters, because a
sum over a window falls when an old bucket expires and ``rate()`` would read that as a reset.
The lifetime counters (``djqueue_processed_total``, ``djqueue_failed_total``) are real
counters. Retried, dead and discarded jobs are not counted per job class by the workers (the
layout has no field for them); the retry and dead sets' sizes are exposed instead.

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

from ..api import Queue, Stats  # noqa: E402
from ..api.metrics import job_metrics  # noqa: E402
from ..config import Settings  # noqa: E402
from ..outbox import published  # noqa: E402
from ..store.metrics import HISTOGRAM_BOUNDS  # noqa: E402

#: The exposition's content type (text format 0.0.4).
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class DjqueueCollector:
    """A custom collector: each scrape reads Redis once through the inspection API."""

    def __init__(self, settings: Settings | None = None, minutes: int = 60) -> None:
        self.settings = settings
        self.minutes = minutes

    def collect(self) -> Iterator[Metric]:
        stats = Stats(settings=self.settings)
        processed = CounterMetricFamily(
            "djqueue_processed", "Jobs processed since the counters were last reset."
        )
        processed.add_metric([], stats.processed)
        failed = CounterMetricFamily(
            "djqueue_failed", "Jobs failed since the counters were last reset."
        )
        failed.add_metric([], stats.failed)
        yield processed
        yield failed
        for name, value, text in (
            ("scheduled_size", stats.scheduled_size, "Jobs in the scheduled set."),
            ("retry_size", stats.retry_size, "Jobs in the retry set."),
            ("dead_size", stats.dead_size, "Jobs in the dead set."),
            ("processes", stats.processes_size, "Worker processes alive (heartbeat)."),
            ("busy", stats.busy, "Jobs running now, as each process last reported."),
        ):
            gauge = GaugeMetricFamily(f"djqueue_{name}", text)
            gauge.add_metric([], value)
            yield gauge
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
        for row in Queue.summary(settings=self.settings):
            size.add_metric([row.name], row.size)
            latency.add_metric([row.name], row.latency)
            paused.add_metric([row.name], int(row.paused))
        yield size
        yield latency
        yield paused
        outbox = GaugeMetricFamily(
            "djqueue_outbox_size",
            "Rows waiting in the transactional outbox, as the last relay round published.",
        )
        seen = published(self.settings)
        if seen is not None:
            outbox.add_metric([], seen[0].size)
        yield outbox
        yield from self._jobs()

    def _jobs(self) -> Iterator[Metric]:
        report = job_metrics(minutes=self.minutes, settings=self.settings)
        window = f" over the last {self.minutes} minutes"
        families = {
            (kind, stat): GaugeMetricFamily(
                f"djqueue_{kind}_{stat}",
                f"Jobs {stat} per {'job class' if kind == 'job' else 'queue'}{window}.",
                labels=[kind if kind == "queue" else "job"],
            )
            for kind in ("job", "queue")
            for stat in ("processed", "failed")
        }
        seconds = HistogramMetricFamily(
            "djqueue_job_execution_seconds",
            f"Execution time of the successful jobs per job class{window} "
            "(Sidekiq's histogram buckets).",
            labels=["job"],
        )
        for kind, rows in (("job", report.jobs), ("queue", report.queues)):
            for row in rows:
                families[kind, "processed"].add_metric([row.name], row.processed)
                families[kind, "failed"].add_metric([row.name], row.failed)
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
