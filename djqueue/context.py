"""Request context that follows a job from the web request that pushed it to the worker.

A web integration binds what it knows of the request (`bind`) while the request runs, stamps
it into the payload's ``request_context`` field with a client middleware (Sidekiq ignores
fields it does not know), and binds it again with a server middleware while the job runs (the
Django app's pair: `djqueue.contrib.django.stamping` and `.server`; flask_djqueue's in
``flask_djqueue.request_context``). The rules both share live here: which request ids are
accepted (`accept_request_id`), what is written (`stamp`) and what is read back (`carried`).
So inside a job::

    from djqueue import context

    context.request_id()   # the id of the request that pushed this job
    context.user_id()

and log records carry ``request_id`` when `RequestIdFilter` is on the handler. A framework adds
what it needs around this (Django activates the language), which is why the values live in a
`contextvars.ContextVar` and not in a framework's own request object.
"""

from __future__ import annotations

import contextvars
import logging
import re
import uuid
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from types import MappingProxyType
from typing import Any

#: The payload field that carries the context.
FIELD = "request_context"

#: The keys that travel with a job by default. Anything else bound (an email, a session key)
#: stays in the web process: a payload is stored in Redis and shown in UIs.
STANDARD_KEYS = ("request_id", "user_id", "language")

_travelling: tuple[str, ...] = STANDARD_KEYS


def allow(*keys: str) -> None:
    """Let ``keys`` travel with jobs too, besides `STANDARD_KEYS` (the Django setting
    ``DJQUEUE["CONTEXT_KEYS"]`` calls this); replaces what an earlier call allowed."""
    global _travelling
    if not all(isinstance(key, str) and key for key in keys):
        raise ValueError("context keys must be non-empty strings")
    _travelling = tuple(dict.fromkeys((*STANDARD_KEYS, *keys)))


def travelling(values: Mapping[str, Any], also: Iterable[str] = ()) -> dict[str, Any]:
    """The part of ``values`` that may travel with a job (or be bound from one): the allowed
    keys (and ``also``, an app's own list), with JSON scalar values only, since a payload from
    Redis may be hostile."""
    keys = _travelling if not also else dict.fromkeys((*_travelling, *also))
    return {key: values[key] for key in keys if type(values.get(key)) in (str, int, float, bool)}


def stamp(
    payload: dict[str, Any], extra: Mapping[str, Any] | None = None, also: Iterable[str] = ()
) -> None:
    """Write what may travel of the bound context, with ``extra`` on top (what the framework
    reads at push time: the user id, the language), into ``payload``. A payload that already
    has the field keeps it (a job re-pushed as it was), and nothing is written when nothing
    travels, so a push outside any request carries no field at all."""
    if FIELD in payload:
        return
    values = _context.get()
    if extra:
        values = {**values, **extra}
    stamped = travelling(values, also)
    if stamped:
        payload[FIELD] = stamped


def carried(payload: Mapping[str, Any], also: Iterable[str] = ()) -> dict[str, Any]:
    """The context a payload carries, as it may be bound while the job runs (only the allowed
    keys with scalar values: the payload may come from anyone who can write to Redis)."""
    found = payload.get(FIELD)
    return travelling(found, also) if isinstance(found, dict) else {}


# A client-supplied id is kept only if it is short and plain, since it ends up in logs.
_SAFE_ID = re.compile(r"[A-Za-z0-9._:/+=@-]{1,128}")


def accept_request_id(given: str | None) -> str:
    """The request id a client sent (a header's value) if it is up to 128 plain characters,
    else a new one (uuid4 hex): the id ends up in log lines and payloads."""
    return given if given and _SAFE_ID.fullmatch(given) else uuid.uuid4().hex


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


class RequestIdFilter(logging.Filter):
    """Add ``request_id`` (and ``user_id``) to every record, ``"-"`` when there is none.

    Put it on a handler and use ``%(request_id)s`` in its format; it never drops a record.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        values = _context.get()
        record.request_id = values.get("request_id") or "-"
        record.user_id = values.get("user_id") if values.get("user_id") is not None else "-"
        return True
