"""Request context for Flask: the request that pushed a job, known to the job.

The mechanism is djqueue's (`djqueue.context`, shared with the Django app); this module only
plugs Flask into it. A request binds its id (from the ``X-Request-ID`` header,
``DJQUEUE_REQUEST_ID_HEADER``, kept if plain, else a new one) before any other
``before_request`` function runs, and the response echoes it. A push during the request stamps
the bound context plus what the app's hooks return (``@djq.job_context``: the user id, say,
read at push time since a view may log the user in first) into the payload; the job, in the
worker, has it bound again: ``djqueue.context.request_id()``, ``user_id()``, and its log lines
carry ``request_id=...``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from typing import Any

from flask import Flask, Response, g, has_request_context, request

from djqueue import context

from .state import current_state

#: The attribute of ``g`` that holds the request's id and its binding.
_BOUND = "_djqueue_request"


def install(app: Flask) -> None:
    """Add the request hooks to ``app`` (once): binding goes first, so that jobs pushed by the
    app's other ``before_request`` functions carry the id too."""
    first = app.before_request_funcs.setdefault(None, [])
    if _begin in first:
        return
    first.insert(0, _begin)
    app.after_request(_echo)
    app.teardown_request(_end)


def _begin() -> None:
    state = current_state()
    if state is None:
        return
    rid = context.accept_request_id(request.headers.get(state.options.request_id_header))
    binding = ExitStack()
    binding.enter_context(context.bind(request_id=rid))
    setattr(g, _BOUND, (rid, binding))


def _echo(response: Response) -> Response:
    bound = g.get(_BOUND)
    state = current_state()
    if bound is not None and state is not None:
        header = state.options.request_id_header
        if header not in response.headers:
            response.headers[header] = bound[0]
    return response


def _end(exc: BaseException | None) -> None:
    bound = g.pop(_BOUND, None)
    if bound is not None:
        try:
            bound[1].close()
        except ValueError:  # the request ended in another context (a copied one): nothing to undo
            pass


class StampRequestContext:
    """Client middleware: stamp the request context into every payload pushed in an app that
    uses DjQueue (during a request, or from a job that carries one)."""

    def __call__(
        self, job: str, payload: dict[str, Any], queue: str, call_next: Callable[[], Any]
    ) -> Any:
        if context.FIELD not in payload:
            state = current_state()
            if state is not None:
                extra = state.extension.context_values() if has_request_context() else None
                context.stamp(payload, extra, state.options.context_keys)
        return call_next()


class RequestContext:
    """Server middleware: bind the context the payload carries while the job runs (the values
    live in a context variable: an ``async def`` job's task has its own)."""

    def __call__(self, job: Any, payload: dict[str, Any], queue: str) -> Iterator[None]:
        state = current_state()
        values = context.carried(payload, state.options.context_keys) if state else None
        if not values:
            yield
            return
        with context.bind(**values):
            yield
