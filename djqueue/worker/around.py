"""Runtime steps of one's own: code a worker runs around the whole of each job it processes.

Server middleware wraps the job itself; the retry decision, the log lines and the signals sit
outside it, and they call user code too (``retries_exhausted``, ``retry_in``, signal receivers).
A step added here goes around all of that, outermost, and runs exactly once per job, whether
the job runs in a processor thread or, ``async def``, on the worker's event loop. A framework
whose code needs a context of its own everywhere (Flask's app context: ``current_app``,
``db.session``) enters it here, as Sidekiq's reloader does for Rails::

    from djqueue.worker import around
    around.add(lambda payload: app.app_context())

A step is called with the job's payload and returns a context manager, or is a generator
function that yields once where the job runs, or returns None to stay out of this job
(`djqueue.pipeline`: one shape for both worlds). The list is read when a worker's manager is
built, so steps are added before the worker starts (flask_djqueue adds its own on
`djqueue.signals.worker_preparing`); with none, the runtime pays nothing per job.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .fetch import Unit

Factory = Callable[[dict[str, Any]], Any]

_factories: tuple[Factory, ...] = ()


def add(factory: Factory) -> None:
    """Run ``factory(payload)`` around each job (inside those added before it); adding the
    same factory twice keeps one. An ``offload`` attribute on it is honoured on the event
    loop (`djqueue.pipeline`)."""
    global _factories
    if factory not in _factories:
        _factories = (*_factories, factory)


def remove(factory: Factory) -> None:
    global _factories
    _factories = tuple(f for f in _factories if f is not factory)


class _Step:
    """A user's step as a runtime step, which the runtime calls with the unit too."""

    __slots__ = ("factory", "offload")

    def __init__(self, factory: Factory) -> None:
        self.factory = factory
        self.offload = getattr(factory, "offload", None)

    def __call__(self, unit: Unit, payload: dict[str, Any]) -> Any:
        return self.factory(payload)


def steps() -> list[_Step]:
    """The runtime steps for the factories added so far, outermost first."""
    return [_Step(factory) for factory in _factories]
