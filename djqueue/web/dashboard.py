"""The dashboard: the counters, the history chart, and the Redis server, once for both UIs.

`dashboard` formats the figures of `djqueue.api.figures` (two pipelined round trips), the
history in two MGETs and the server in one INFO. `Dashboard.live` is the same figures as a
JSON-ready dict, which the page polls to refresh itself without reloading.

The transactional outbox lives in the application's database, which only the framework can
read: a renderer passes its figures (`djqueue.outbox.OutboxStats`) when the outbox is in use,
and they show as two more figures, rows waiting and the oldest row's age in seconds.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..api import RedisInfo
from ..api.figures import figures
from ..config import Settings
from ..outbox import OutboxStats
from . import display
from .chart import history_svg
from .i18n import gettext_lazy as _
from .i18n import pgettext_lazy
from .problems import problem

#: Days of history the chart shows.
HISTORY_DAYS = 30
#: Refresh intervals a viewer may pick, in seconds (0: off), and the default.
POLL_CHOICES = (0, 2, 5, 10, 20)
DEFAULT_POLL = 5


@dataclass
class Figure:
    #: Stable name, used by the live view to find the figure on the page.
    name: str
    label: str
    value: int
    #: The page it links to: ``"queues"``, ``"scheduled"``, ``"retries"``, ``"dead"`` or
    #: ``"busy"``; empty for none.
    link: str = ""

    @property
    def text(self) -> str:
        return display.number(self.value)


@dataclass
class Dashboard:
    figures: list[Figure]
    latency: str
    days: list[str]
    processed: list[int]
    failed: list[int]
    chart: str
    redis: list[tuple[str, str]]
    #: The keys the figures could not read, one line each (`djqueue.web.problems`).
    problems: list[str]
    #: The paused queues' names: no worker takes jobs from them.
    paused: list[str] = field(default_factory=list)

    def linked(self, url: Callable[[str], str]) -> list[tuple[Figure, str]]:
        """Each figure with the URL of its page (``url("retries")``...), or "" for none."""
        return [(f, url(f.link) if f.link else "") for f in self.figures]

    def redis_rows(self) -> list[tuple[str, str, str]]:
        """The server's rows: the live view's key for the row, its label in the request's
        language, and its value."""
        return [(_key(name), str(REDIS_LABELS.get(name, name)), v) for name, v in self.redis]

    def live(self) -> dict[str, Any]:
        """What the page's live view replaces: each figure's text, the latency, the chart."""
        return {
            "figures": {f.name: f.text for f in self.figures},
            "latency": self.latency,
            "chart": self.chart,
            "redis": {_key(name): value for name, value in self.redis},
            "paused": self.paused_text,
        }

    @property
    def paused_text(self) -> str:
        """The paused queues, as the page's status line names them ("" for none)."""
        return ", ".join(self.paused)


def _key(label: str) -> str:
    """A row's key in the page and the live view: ``"Uptime (days)"`` -> ``"uptime-days"``
    (markup carries no words a reader sees in another language)."""
    return re.sub(r"[^a-z0-9]+", "-", label.lower()).strip("-")


#: The words for `djqueue.api.RedisInfo`'s rows (named in English there, for every caller).
REDIS_LABELS = {
    "Version": _("Version"),
    "Uptime (days)": _("Uptime (days)"),
    "Connections": _("Connections"),
    "Memory used": _("Memory used"),
    "Peak memory": _("Peak memory"),
    "Eviction policy": _("Eviction policy"),
    "URL": _("URL"),
}

#: The dashboard's words for `djqueue.api.figures`' figures, by name.
LABELS = {
    "processed": _("Processed"),
    "failed": _("Failed"),
    "expired": _("Expired"),
    "busy": _("Busy"),
    # A count here; "Enqueued" on a job's page is a time.
    "enqueued": pgettext_lazy("dashboard figure", "Enqueued"),
    "scheduled": _("Scheduled"),
    "retries": _("Retries"),
    "dead": _("Dead"),
    "processes": _("Processes"),
    "outbox": _("Outbox"),
    "outbox_age": _("Oldest outbox row (s)"),
}


def dashboard(
    settings: Settings | None = None,
    days: int = HISTORY_DAYS,
    outbox: OutboxStats | None = None,
) -> Dashboard:
    overview = figures(settings, outbox=outbox, with_queues=False)
    assert overview.stats is not None
    history = overview.stats.history(days)
    dates = list(reversed(history.dates))
    processed = [history.processed[d] for d in dates]
    failed = [history.failed[d] for d in dates]
    return Dashboard(
        figures=[
            Figure(f.name, LABELS.get(f.name, f.name), int(f.value), f.link)
            for f in overview.figures
            if f.value is not None
        ],
        latency=display.latency(overview.latency),
        days=dates,
        processed=processed,
        failed=failed,
        chart=history_svg(dates, processed, failed),
        redis=RedisInfo(settings=settings).fields(),
        problems=[problem(key, what) for key, what in overview.problems + history.problems],
        paused=overview.paused,
    )


def poll_interval(value: Any) -> int:
    """The refresh interval a viewer asked for (``?poll=2``), or the default."""
    try:
        seconds = int(value)
    except (TypeError, ValueError):
        return DEFAULT_POLL
    return seconds if seconds in POLL_CHOICES else DEFAULT_POLL
