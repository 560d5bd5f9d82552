"""Request context that follows a job from the web request that pushed it to the worker.

A web integration binds what it knows of the request (`bind`) while the request runs.
`StampContext`, a client middleware, copies what is bound into the payload's
``request_context`` field (Sidekiq ignores fields it does not know); `RestoreContext`, a server
middleware, binds it again while the job runs. They are not installed by default: add them to
the chains by hand where nothing else stamps the context. The Django app installs its own pair
instead (`djqueue.contrib.django.stamping` and `.server`): its middleware binds only the
request id, and the user id and language are read when a job is pushed. So inside a job::

    djqueue.context.request_id()   # the id of the request that pushed this job
    djqueue.context.user_id()

and log records carry ``request_id`` when `RequestIdFilter` is on the handler. A framework adds
what it needs around this (Django activates the language), which is why the values live in a
`contextvars.ContextVar` and not in a framework's own request object.
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from types import MappingProxyType
from typing import Any

#: The payload field that carries the context.
FIELD = "request_context"

_EMPTY: Mapping[str, Any] = MappingProxyType({})
_context: contextvars.ContextVar[Mapping[str, Any]] = contextvars.ContextVar(
    "djqueue_request_context", default=_EMPTY
)


def current() -> dict[str, Any]:
    """A copy of everything bound in this thread or task (empty outside a request or job)."""
    return dict(_context.get())


def get(key: str, default: Any = None) -> Any:
    return _context.get().get(key, default)


def request_id() -> str | None:
    """The id of the request being served, or of the request that pushed the running job."""
    return _context.get().get("request_id")


def user_id() -> Any:
    """The id of the user of that request (None for anonymous users and outside requests)."""
    return _context.get().get("user_id")


def language() -> str | None:
    return _context.get().get("language")


@contextmanager
def bind(**values: Any) -> Iterator[dict[str, Any]]:
    """Bind ``values`` (on top of what is bound) for the duration of the block.

    None values are dropped, so a job pushed outside any request carries no context at all.
    """
    merged = {**_context.get(), **{k: v for k, v in values.items() if v is not None}}
    token = _context.set(merged)
    try:
        yield merged
    finally:
        _context.reset(token)


class StampContext:
    """Client middleware: write what is bound into the payload, unless the caller set it."""

    def __call__(
        self, job: str, payload: dict[str, Any], queue: str, call_next: Callable[[], Any]
    ) -> Any:
        values = _context.get()
        if values and FIELD not in payload:
            payload[FIELD] = dict(values)
        return call_next()


class RestoreContext:
    """Server middleware: bind the payload's context while the job runs."""

    def __call__(
        self, job: Any, payload: dict[str, Any], queue: str, call_next: Callable[[], Any]
    ) -> Any:
        values = payload.get(FIELD)
        if not isinstance(values, dict):
            return call_next()
        token = _context.set(dict(values))
        try:
            return call_next()
        finally:
            _context.reset(token)


class RequestIdFilter(logging.Filter):
    """Add ``request_id`` (and ``user_id``) to every record, ``"-"`` when there is none.

    Put it on a handler and use ``%(request_id)s`` in its format; it never drops a record.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        values = _context.get()
        record.request_id = values.get("request_id") or "-"
        record.user_id = values.get("user_id") if values.get("user_id") is not None else "-"
        return True
