"""Contexts a worker enters around the whole of each job it processes.

Server middleware wraps the job itself; the retry decision, the log lines and the signals sit
outside it, and they call user code too (``retries_exhausted``, ``retry_in``, signal receivers).
A framework whose code needs a context of its own everywhere (Flask's app context: ``current_app``,
``db.session``) enters it here, outermost, as Sidekiq's reloader does for Rails::

    from djqueue.worker import around
    around.add(lambda payload: app.app_context())

Each entry is called with the job's payload and returns a context manager. The list is read when
a worker's manager is built, so entries are added before the worker starts (flask_djqueue adds
its own on `djqueue.signals.worker_preparing`); with none, the runtime pays nothing per job.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, ExitStack
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .aio import AsyncHandler, AsyncStep
    from .fetch import Unit
    from .processor import Handler, Step

Factory = Callable[[dict[str, Any]], AbstractContextManager[Any]]

_factories: tuple[Factory, ...] = ()


def add(factory: Factory) -> None:
    """Enter ``factory(payload)`` around each job (after those added before it); adding the
    same factory twice keeps one."""
    global _factories
    if factory not in _factories:
        _factories = (*_factories, factory)


def remove(factory: Factory) -> None:
    global _factories
    _factories = tuple(f for f in _factories if f is not factory)


def step() -> Step | None:
    """The processor step that enters the contexts, or None when there are none."""
    factories = _factories
    if not factories:
        return None

    def enter(unit: Unit, payload: dict[str, Any], inner: Handler) -> Any:
        if len(factories) == 1:
            with factories[0](payload):
                return inner(unit, payload)
        with ExitStack() as stack:
            for factory in factories:
                stack.enter_context(factory(payload))
            return inner(unit, payload)

    return enter


def astep() -> AsyncStep | None:
    """`step` for ``async def`` jobs: the same contexts, entered in the job's own task (Flask's
    app context lives in a context variable, so each task has its own)."""
    factories = _factories
    if not factories:
        return None

    async def enter(unit: Unit, payload: dict[str, Any], inner: AsyncHandler) -> Any:
        with ExitStack() as stack:
            for factory in factories:
                stack.enter_context(factory(payload))
            return await inner(unit, payload)

    return enter
