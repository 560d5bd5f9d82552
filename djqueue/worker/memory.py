"""The ``max_memory`` limit, looked at when each job ends as well as at each heartbeat.

A heartbeat comes every 5 s; a job that leaks fast ran again and again in between, and a
worker under a 120 MB limit reached 828 MB. Looking after every job must cost next to nothing
on the hot path: the peak resident size (one ``getrusage``, no file to read) is never below
the current one, so while the peak stays under the limit nothing else is read; past it,
the current size comes from ``/proc/self/status``, as the heartbeat reads it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from .fetch import Unit
from .heartbeat import rss_kb

try:
    import resource
except ImportError:  # not on this platform: the current size is read every time
    resource = None  # type: ignore[assignment]


def peak_kb() -> int | None:
    """The process's largest resident size so far, in KB (Linux's unit), or None."""
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) if resource else None


class MemoryLimit:
    """A processor step (outermost: it looks once the job's end is written) that calls
    ``exceeded`` with the reason when the process has grown over ``limit_mb``; `over` is the
    rule, which the launcher's heartbeat check applies too."""

    def __init__(self, limit_mb: int, exceeded: Callable[[str], None]) -> None:
        self.limit_mb = limit_mb
        self.limit_kb = limit_mb * 1024
        self.exceeded = exceeded

    def over(self) -> str | None:
        """Why the process is over its limit, or None."""
        peak = peak_kb()
        if peak is not None and peak <= self.limit_kb:
            return None
        kb = rss_kb()
        if kb > self.limit_kb:
            return f"{kb / 1024:.0f} MB resident (--max-memory {self.limit_mb})"
        return None

    def check(self) -> None:
        reason = self.over()
        if reason:
            self.exceeded(reason)

    def __call__(self, unit: Unit, payload: dict[str, Any]) -> Iterator[None]:
        try:
            yield
        finally:
            self.check()
