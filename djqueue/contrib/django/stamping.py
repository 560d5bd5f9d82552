"""Client middleware: stamp the request context into every payload pushed during a request
(or from inside a job that has one), in the ``request_context`` field of `djqueue.context`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.utils import translation

from djqueue import context

from .middleware import current_request


def user_id_of(request: Any) -> Any:
    """The logged-in user's primary key as a JSON value (str unless it is an int)."""
    user = getattr(request, "user", None)
    if user is None or not getattr(user, "is_authenticated", False):
        return None
    pk = user.pk
    return pk if isinstance(pk, int) or pk is None else str(pk)


async def user_ready() -> None:
    """Before a push from async code (`djqueue.client.before_async_push`): fetch the request's
    user with ``request.auser()`` (the async ORM) and keep it where the lazy ``request.user``
    of Django's ``AuthenticationMiddleware`` looks first (``_cached_user``), so that
    `StampRequestContext`, which runs on the event loop, reads the user id without a query:
    Django refuses a sync query there (``SynchronousOnlyOperation``). Nothing is fetched when
    the user was read already, or outside a request."""
    request = current_request.get()
    auser = getattr(request, "auser", None)
    if request is None or auser is None or hasattr(request, "_cached_user"):
        return
    request._cached_user = await auser()


class StampRequestContext:
    def __call__(
        self, job: str, payload: dict[str, Any], queue: str, call_next: Callable[[], Any]
    ) -> Any:
        request = current_request.get()
        if (request is not None or context.current()) and context.FIELD not in payload:
            extra = {"language": translation.get_language()}
            if request is not None:
                extra["user_id"] = user_id_of(request)
            context.stamp(payload, extra)
        return call_next()
