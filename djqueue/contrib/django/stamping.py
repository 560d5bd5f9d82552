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


class StampRequestContext:
    def __call__(
        self, job: str, payload: dict[str, Any], queue: str, call_next: Callable[[], Any]
    ) -> Any:
        values = context.current()
        request = current_request.get()
        if (values or request is not None) and context.FIELD not in payload:
            if request is not None:
                values["user_id"] = user_id_of(request)
            values["language"] = translation.get_language()
            stamped = context.travelling(values)
            if stamped:
                payload[context.FIELD] = stamped
        return call_next()
