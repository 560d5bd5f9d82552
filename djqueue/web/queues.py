"""The queues page: every queue with its size, its jobs parked for a limiter's slots, latency
and whether it is paused (clearing one is `forms.clear_queue`, pausing and resuming one
`forms.pause_queue`)."""

from __future__ import annotations

from dataclasses import dataclass

from ..api import Queue
from ..config import Settings
from . import display


@dataclass
class QueueRow:
    name: str
    size: int
    latency: float
    #: What is wrong with the queue's key (not a list), or empty.
    problem: str = ""
    #: Workers take no job from it (`djqueue.api.Queue.pause`).
    paused: bool = False
    #: Jobs of the queue parked for a limiter's slots: out of it, not in its size.
    parked: int = 0
    #: ``parked`` is a floor (a parked list too long to read whole for a page).
    parked_floor: bool = False

    @property
    def size_text(self) -> str:
        return display.number(self.size)

    @property
    def parked_text(self) -> str:
        return display.number(self.parked) + ("+" if self.parked_floor else "")

    @property
    def latency_text(self) -> str:
        return display.latency(self.latency)


def queues_page(settings: Settings | None = None) -> list[QueueRow]:
    """Every queue in the ``queues`` set (or with parked jobs), by name (`Queue.summary`)."""
    return [QueueRow(*found) for found in Queue.summary(settings=settings)]
