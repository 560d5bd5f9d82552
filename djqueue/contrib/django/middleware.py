"""`RequestContextMiddleware`: the Django middleware that lets jobs know which request pushed
them. Add it to ``MIDDLEWARE`` after ``AuthenticationMiddleware`` (and ``LocaleMiddleware``)::

    MIDDLEWARE = [..., "djqueue.contrib.django.middleware.RequestContextMiddleware"]

It takes the request id from the ``X-Request-ID`` header (``DJQUEUE["REQUEST_ID_HEADER"]``) or
makes one, sets ``request.request_id``, echoes it on the response, and binds it (see
`djqueue.context`) for the duration of the request. The user id and the language are read when a
job is pushed, since a view may log the user in or switch language before it pushes.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from typing import Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.http import HttpRequest, HttpResponseBase

from djqueue import context

from . import conf

#: The request being served in this thread or task, for the client middleware.
current_request: contextvars.ContextVar[HttpRequest | None] = contextvars.ContextVar(
    "djqueue_django_request", default=None
)


def request_id_for(request: HttpRequest) -> str:
    return context.accept_request_id(request.headers.get(conf.option("REQUEST_ID_HEADER")))


class RequestContextMiddleware:
    sync_capable = True
    async_capable = True

    def __init__(self, get_response: Callable[[HttpRequest], Any]) -> None:
        self.get_response = get_response
        if iscoroutinefunction(get_response):
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest) -> Any:
        if iscoroutinefunction(self):
            return self._acall(request)
        rid = self._start(request)
        token = current_request.set(request)
        try:
            with context.bind(request_id=rid):
                response = self.get_response(request)
        finally:
            current_request.reset(token)
        return self._finish(response, rid)

    async def _acall(self, request: HttpRequest) -> HttpResponseBase:
        rid = self._start(request)
        token = current_request.set(request)
        try:
            with context.bind(request_id=rid):
                response = await self.get_response(request)
        finally:
            current_request.reset(token)
        return self._finish(response, rid)

    def _start(self, request: HttpRequest) -> str:
        rid = request_id_for(request)
        request.request_id = rid
        return rid

    def _finish(self, response: HttpResponseBase, rid: str) -> HttpResponseBase:
        header = conf.option("REQUEST_ID_HEADER")
        if header not in response:
            response[header] = rid
        return response
