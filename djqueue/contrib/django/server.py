"""Server middleware the app adds around every job (worker, ``perform_now``, inline testing).

`DatabaseConnections` does for a job what Django does for a request: close connections that
are broken or older than ``CONN_MAX_AGE`` before and after it, so a database restart never
leaves a worker thread holding a dead connection. Django's connections are per thread, so the
processor threads never share one.

`RequestContext` binds the pushing request's id and user id (`djqueue.context`) and activates
its language while the job runs.

Both are written once, as generators (`djqueue.pipeline`), for thread-run and ``async def``
jobs alike.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from asgiref.sync import sync_to_async
from django.db import connections
from django.utils import translation

from djqueue import context


def close_old_connections() -> None:
    """`django.db.close_old_connections`, minus connections inside an atomic block.

    A job run with ``perform_now`` or in inline test mode may run inside the caller's
    transaction (a ``TestCase`` always does); closing that connection would break it.
    """
    for conn in connections.all(initialized_only=True):
        if not conn.in_atomic_block:
            conn.close_if_unusable_or_obsolete()


class DatabaseConnections:
    #: For ``async def`` jobs, the before and after run where the async ORM runs its queries:
    #: asgiref's one thread for sync code, whose connections are the ones to close.
    offload = staticmethod(lambda function, *args: sync_to_async(function)(*args))

    def __call__(self, job: Any, payload: dict[str, Any], queue: str) -> Iterator[None]:
        close_old_connections()
        try:
            yield
        finally:
            close_old_connections()


class RequestContext:
    """The values and the language live in context variables (Django's translation state is
    asgiref's context-aware Local), so an ``async def`` job's task has its own."""

    def __call__(self, job: Any, payload: dict[str, Any], queue: str) -> Iterator[None]:
        values = context.carried(payload)
        if not values:
            yield
            return
        with context.bind(**values):
            language = values.get("language")
            if isinstance(language, str) and language:
                with translation.override(language):
                    yield
            else:
                yield
