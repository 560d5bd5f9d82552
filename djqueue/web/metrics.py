"""The Metrics page: per job class what the workers counted over a range (Sidekiq's Metrics
tab), read through `djqueue.api.metrics.job_metrics`, the one place the figures are computed.

A viewer picks the range (``?range=1h`` ... ``72h``), filters classes by name (``?name=``)
and picks one class (``?job=``) whose per-bucket chart and time histogram show below the
table. Ranges up to 8 hours read one-minute buckets and have histograms; longer ones read
ten-minute buckets, which Sidekiq keeps without histograms, so the page says so instead.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from ..api.metrics import Figures, job_metrics
from ..config import Settings
from ..store.metrics import HISTOGRAM_BOUNDS
from . import display
from .chart import bars_svg, lines_svg
from .i18n import gettext, ngettext
from .problems import problem

#: The ranges a viewer may pick: label -> job_metrics' ``minutes`` and ``hours``.
RANGES: dict[str, tuple[int | None, int | None]] = {
    "1h": (60, None),
    "3h": (180, None),
    "8h": (480, None),
    "24h": (None, 24),
    "72h": (None, 72),
}
DEFAULT_RANGE = "1h"
#: Filter text longer than this is cut (it is matched against every class name).
MAX_NAME = 200


@dataclass
class MetricsRow:
    name: str
    processed: str
    failed: str
    #: Where the failures went.
    retried: str
    dead: str
    discarded: str
    failure_rate: str
    mean: str
    p50: str
    p95: str
    p99: str
    #: This page with the class chosen for the chart.
    chart_query: str
    chosen: bool


@dataclass
class MetricsPage:
    range: str
    ranges: list[tuple[str, str]]
    name: str
    rows: list[MetricsRow]
    chosen: str
    #: The chosen class's processed / failed per bucket, and its time histogram ("" when the
    #: range has none or nothing succeeded).
    chart: str = ""
    histogram: str = ""
    has_histograms: bool = True
    problems: list[str] = field(default_factory=list)


def _ms(value: float | None) -> str:
    """A mean: ``"0.4 ms"``, ``"1,234 ms"``; "–" when no job succeeded."""
    if value is None:
        return "–"
    return gettext("%(n)s ms") % {"n": f"{value:,.1f}" if value < 100 else f"{value:,.0f}"}


def _at_most(value: float | None) -> str:
    """A percentile, which Sidekiq's histogram knows as its bucket's upper bound."""
    if value is None:
        return "–"
    if math.isinf(value):
        return "> " + gettext("%(n)s ms") % {"n": f"{HISTOGRAM_BOUNDS[-1]:,}"}
    return "≤ " + gettext("%(n)s ms") % {"n": f"{value:,.0f}"}


def _query(**params: str) -> str:
    return "?" + urlencode({k: v for k, v in params.items() if v})


def metrics_page(params: Any, settings: Settings | None = None) -> MetricsPage:
    """The page for a query string (a mapping of names to strings, as both mounts give it)."""
    notes = []
    picked = str(params.get("range") or DEFAULT_RANGE)
    if picked not in RANGES:
        notes.append(
            gettext("Unknown range %(range)s: showing the last %(default)s.")
            % {"range": repr(picked), "default": DEFAULT_RANGE}
        )
        picked = DEFAULT_RANGE
    name = str(params.get("name") or "").strip()[:MAX_NAME]
    minutes, hours = RANGES[picked]
    report = job_metrics(minutes, hours, name=name or None, settings=settings)
    chosen = str(params.get("job") or "")
    figures = report.job(chosen) if chosen else (report.jobs[0] if report.jobs else None)
    chosen = figures.name if figures else chosen
    rows = [
        MetricsRow(
            name=f.name,
            processed=display.number(f.processed),
            failed=display.number(f.failed),
            retried=display.number(f.retried),
            dead=display.number(f.dead),
            discarded=display.number(f.discarded),
            failure_rate=f"{f.failure_rate:.1%}",
            mean=_ms(f.mean_ms),
            p50=_at_most(f.p50_ms),
            p95=_at_most(f.p95_ms),
            p99=_at_most(f.p99_ms),
            chart_query=_query(range=picked, name=name, job=f.name),
            chosen=f.name == chosen,
        )
        for f in report.jobs
    ]
    found = MetricsPage(
        range=picked,
        ranges=[(label, _query(range=label, name=name, job=chosen)) for label in RANGES],
        name=name,
        rows=rows,
        chosen=chosen,
        has_histograms=minutes is not None,
        problems=notes + [problem(key, what) for key, what in report.problems],
    )
    if figures is not None:
        found.chart = _series_chart(figures, report.starts_at, report.ends_at, report.stride)
        if found.has_histograms and any(figures.histogram):
            labels = [f"≤ {b:,}" for b in HISTOGRAM_BOUNDS] + [f"> {HISTOGRAM_BOUNDS[-1]:,}"]
            what = gettext("%(job)s: times in ms") % {"job": chosen}
            found.histogram = bars_svg(labels, figures.histogram, what)
    elif chosen:
        found.problems.append(
            gettext("No job %(job)s ran in the last %(range)s.")
            % {"job": repr(chosen), "range": picked}
        )
    return found


def _series_chart(figures: Figures, starts_at: int, ends_at: int, stride: int) -> str:
    """Every bucket of the range, the empty ones as zero, so the time axis is even."""
    counts = {start: (processed, failed) for start, processed, failed, _ in figures.series}
    starts = list(range(starts_at, ends_at, stride))
    points = [display.timestamp(start) for start in starts]
    processed = [counts.get(s, (0, 0))[0] for s in starts]
    failed = [counts.get(s, (0, 0))[1] for s in starts]
    minutes = max(1, stride // 60)
    label = ngettext(
        "Processed and failed jobs per minute",
        "Processed and failed jobs per %(n)s minutes",
        minutes,
    ) % {"n": minutes}
    return lines_svg(points, processed, failed, label, short=lambda point: point[11:16])
