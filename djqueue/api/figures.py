"""The figures every face shows, computed once: the dashboard, ``djqueue stats`` and the
Prometheus collector each call `figures` and only format what it returns.

Each face used to read `Stats`, the queue summary and the outbox on its own and pick its own
subset; a figure added to one was missing from the others, and the CLI's ``retries`` was the
dashboard's ``Retries`` and Prometheus' ``retry_size`` by three separate lists. Here each
figure has one stable ``name`` (the dashboard's element id and the CLI's label), the name it
is exported under (``djqueue_<metric>``) and one line saying what it counts, as django-rq's
``get_statistics()`` serves its dashboard, its JSON view and its Prometheus collector.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import redis

from ..config import Settings
from ..outbox import OutboxStats, published
from .queue import Queue
from .stats import Stats


@dataclass(frozen=True)
class Figure:
    """One number, as every face names and explains it."""

    #: Stable name: the dashboard's element, the CLI's label.
    name: str
    #: None: not known here (the outbox with no relay publishing); each face leaves it out,
    #: Prometheus keeps the family with no sample so a dashboard's query stays valid.
    value: float | None
    #: What it counts, in one line (Prometheus' HELP).
    meaning: str
    #: Exported as ``djqueue_<metric>``; empty: not exported (a derived figure).
    metric: str = ""
    #: Only grows (until the counters are reset): a Prometheus counter, else a gauge.
    counter: bool = False
    #: The dashboard page it opens (``"retries"``...), empty for none.
    link: str = ""


@dataclass
class QueueFigure:
    name: str
    size: int
    #: Seconds the oldest job has waited (0 when empty).
    latency: float
    #: What is wrong with the queue's key, empty when nothing.
    problem: str = ""
    #: No worker takes jobs from it (`djqueue.api.Queue.pause`).
    paused: bool = False


@dataclass
class Overview:
    """What `figures` read: the counters, each queue, the outbox and the keys it could not
    read. ``stats`` stays available for what only the dashboard draws (the daily history)."""

    figures: list[Figure]
    queues: list[QueueFigure]
    #: The default queue's latency in seconds.
    latency: float
    #: Rows waiting in the transactional outbox, when known.
    outbox: OutboxStats | None
    #: Seconds since a relay published ``outbox`` (None: the caller read the database).
    outbox_published_ago: float | None
    problems: list[tuple[str, str]] = field(default_factory=list)
    #: The paused queues' names, sorted.
    paused: list[str] = field(default_factory=list)
    stats: Stats | None = None

    def __getitem__(self, name: str) -> Figure:
        for figure in self.figures:
            if figure.name == name:
                return figure
        raise KeyError(name)


def figures(
    settings: Settings | None = None,
    outbox: OutboxStats | None = None,
    redis_client: redis.Redis | None = None,
    with_queues: bool = True,
) -> Overview:
    """The counters, set sizes, processes, busy threads and latency (two round trips),
    every queue's size and latency (two more, unless ``with_queues`` is false), and the
    outbox: ``outbox`` when the caller read its database, else what the last relay round
    published (nothing when no relay published for a minute)."""
    stats = Stats(settings=settings, redis_client=redis_client)
    found = [
        Figure(
            "processed",
            stats.processed,
            "Jobs processed since the counters were last reset.",
            "processed",
            counter=True,
        ),
        Figure(
            "failed",
            stats.failed,
            "Jobs failed since the counters were last reset.",
            "failed",
            counter=True,
        ),
        Figure(
            "expired",
            stats.expired,
            "Jobs taken after their deadline (expires_in) and not run.",
            "expired",
            counter=True,
        ),
        Figure(
            "busy",
            stats.busy,
            "Jobs running now, as each process last reported.",
            "busy",
            link="busy",
        ),
        Figure(
            "enqueued", stats.enqueued, "Jobs waiting in every queue.", "enqueued", link="queues"
        ),
        Figure(
            "scheduled",
            stats.scheduled_size,
            "Jobs in the scheduled set.",
            "scheduled_size",
            link="scheduled",
        ),
        Figure("retries", stats.retry_size, "Jobs in the retry set.", "retry_size", link="retries"),
        Figure("dead", stats.dead_size, "Jobs in the dead set.", "dead_size", link="dead"),
        Figure(
            "processes",
            stats.processes_size,
            "Worker processes alive (heartbeat).",
            "processes",
            link="busy",
        ),
    ]
    ago: float | None = None
    if outbox is None:
        seen = published(settings)
        if seen is not None:
            outbox, ago = seen
    found.append(
        Figure(
            "outbox",
            None if outbox is None else outbox.size,
            "Rows waiting in the transactional outbox.",
            "outbox_size",
        )
    )
    found.append(
        Figure(
            "outbox_age",
            None if outbox is None else round(outbox.oldest_age or 0.0),
            "Seconds the oldest outbox row has waited.",
            "outbox_oldest_seconds",
        )
    )
    queues = []
    if with_queues:
        queues = [
            QueueFigure(row.name, row.size, row.latency, row.problem, row.paused)
            for row in Queue.summary(settings, redis_client)
        ]
    return Overview(
        figures=found,
        queues=queues,
        latency=stats.default_queue_latency,
        outbox=outbox,
        outbox_published_ago=ago,
        problems=list(stats.problems),
        paused=stats.paused,
        stats=stats,
    )
