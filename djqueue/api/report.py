"""Plain-text reports of what the inspection API sees, for the command line.

``djqueue stats`` and ``djqueue queues`` print these; the framework commands (Django's, Flask's)
print the same text, so a figure reads alike wherever it is asked for.
"""

from __future__ import annotations

from ..config import Settings
from .queue import Queue
from .stats import Stats


def stats(settings: Settings | None = None) -> str:
    """The counters and set sizes of `Stats`, one figure per line."""
    figures = Stats(settings=settings)
    rows = [
        ("processed", figures.processed),
        ("failed", figures.failed),
        ("enqueued", figures.enqueued),
        ("scheduled", figures.scheduled_size),
        ("retries", figures.retry_size),
        ("dead", figures.dead_size),
        ("processes", figures.processes_size),
        ("busy", figures.busy),
        ("latency", f"{figures.default_queue_latency:.1f}s (default queue)"),
    ]
    return "\n".join(f"{label:<10} {value}" for label, value in rows)


def queues(settings: Settings | None = None) -> str:
    """Every queue of `Queue.all` with its size and latency, one per line."""
    found = Queue.all(settings=settings)
    if not found:
        return "no queues"
    width = max(5, *(len(q.name) for q in found))
    lines = [f"{'queue':<{width}}  {'size':>8}  {'latency':>10}"]
    lines += [f"{q.name:<{width}}  {q.size:>8}  {q.latency:>9.1f}s" for q in found]
    return "\n".join(lines)
