"""Jobs run inside an app context, so ``current_app``, ``g`` and ``db.session`` work in a job as
they do in a view.

Which app: in a worker, the worker's app (``flask djqueue worker``, ``djqueue worker --app``),
whose context `job_context` enters around the whole of each job, retries and signals included
(`djqueue.worker.around`); elsewhere (``perform_now``, inline testing, draining recorded jobs)
the current app. Either way the job gets a fresh app context of its own, as a request does:
its own, empty ``g`` and its own Flask-SQLAlchemy session, which is what a job run by a worker gets
and what a job run at commit time needs (the committing session cannot be used then).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from flask import Flask, current_app, has_app_context

from .state import state_of

#: The payload whose app context `job_context` entered here. A context variable, as Flask's
#: app context is one, and not an attribute of ``g``: a job finds ``g`` empty.
_entered_for: ContextVar[dict[str, Any] | None] = ContextVar("djqueue_job_context", default=None)

_worker_app: Flask | None = None


def set_worker_app(app: Flask | None) -> None:
    """The app every job of this worker process runs in (set when the worker prepares)."""
    global _worker_app
    _worker_app = app


def worker_app() -> Flask | None:
    return _worker_app


def job_app() -> Flask | None:
    """The app a job started here runs in: the current app if it uses DjQueue, else the
    worker's app, else none."""
    if has_app_context() and state_of(current_app) is not None:
        app: Flask = current_app._get_current_object()  # type: ignore[attr-defined]
        return app
    return _worker_app


@contextmanager
def job_context(app: Flask, payload: dict[str, Any]) -> Iterator[None]:
    """A fresh app context for the job with ``payload``."""
    with app.app_context():
        token = _entered_for.set(payload)
        try:
            yield
        finally:
            _entered_for.reset(token)


def _entered(payload: dict[str, Any]) -> bool:
    """Whether the app context here is the one entered for ``payload`` (by the worker)."""
    return has_app_context() and _entered_for.get() is payload


class AppContext:
    """Server middleware, outermost: run the job in a fresh app context (unless the worker
    already entered one for this very job). Flask keeps its app context in a context
    variable, so an ``async def`` job's task has its own."""

    def __call__(self, job: Any, payload: dict[str, Any], queue: str) -> Iterator[None]:
        app = None if _entered(payload) else job_app()
        if app is None:
            yield
            return
        with job_context(app, payload):
            yield
