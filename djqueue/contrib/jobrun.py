"""What the integrations with tracing and error tools (`djqueue.contrib.sentry`,
`djqueue.contrib.opentelemetry`) share: trace headers carried in a job's payload from the push
to the run, and what became of the job running in this context.

A job's failure does not reach a runtime step as an exception: the retry step, inside it,
settles it (the job is retried or dead). The ``job_failed`` and ``job_retry_scheduled``
signals say what happened; `watch` hands a step the `Run` they fill in for its job.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from .. import signals


def carry(
    payload: dict[str, Any], headers: Mapping[str, str | None], under: str | None = None
) -> None:
    """Put ``headers`` (the empty ones left out) in ``payload``, under the key ``under`` as one
    object, or each at the top level. What is there already stays: a job pushed again (a
    retry, a bulk push of one payload) keeps the trace it started in."""
    found = {name: value for name, value in headers.items() if value}
    if not found:
        return
    if under is not None:
        payload.setdefault(under, found)
        return
    for name, value in found.items():
        payload.setdefault(name, value)


def carried(
    payload: Mapping[str, Any], names: Iterable[str] = (), under: str | None = None
) -> dict[str, str]:
    """The headers `carry` put in ``payload``: the object under ``under``, or ``names`` from the
    top level; only string values (a payload pushed by other code may hold anything)."""
    source = payload.get(under) if under is not None else {n: payload.get(n) for n in names}
    if not isinstance(source, Mapping):
        return {}
    return {str(name): value for name, value in source.items() if isinstance(value, str)}


class Run:
    """What the signals said about the job running in this context."""

    __slots__ = ("error", "retried")

    def __init__(self) -> None:
        self.error: BaseException | None = None
        self.retried = False


_current: contextvars.ContextVar[Run | None] = contextvars.ContextVar(
    "djqueue_contrib_run", default=None
)


def _failed(sender: Any, exception: BaseException, **_: Any) -> None:
    run = _current.get()
    if run is not None:
        run.error = exception


def _retried(sender: Any, **_: Any) -> None:
    run = _current.get()
    if run is not None:
        run.retried = True


def connect() -> None:
    """Listen to the signals (again: connecting twice keeps one receiver)."""
    signals.job_failed.connect(_failed, weak=False)
    signals.job_retry_scheduled.connect(_retried, weak=False)


@contextmanager
def watch() -> Iterator[Run]:
    """The `Run` of the job that runs inside this block (`connect` first)."""
    run = Run()
    token = _current.set(run)
    try:
        yield run
    finally:
        _current.reset(token)
