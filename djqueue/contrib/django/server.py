"""Server middleware the app adds around every job (worker, ``perform_now``, inline testing).

`DatabaseConnections` does for a job what Django does for a request: close connections that
are broken or older than ``CONN_MAX_AGE`` before and after it, so a database restart never
leaves a worker thread holding a dead connection. Django's connections are per thread, so the
processor threads never share one.

`RequestContext` binds the pushing request's id and user id (`djqueue.context`) and activates
its language while the job runs.
"""

from __future__ import annotations

from collections.abc import Callable
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
    def __call__(
        self, job: Any, payload: dict[str, Any], queue: str, call_next: Callable[[], Any]
    ) -> Any:
        close_old_connections()
        try:
            return call_next()
        finally:
            close_old_connections()

    async def acall(
        self, job: Any, payload: dict[str, Any], queue: str, call_next: Callable[[], Any]
    ) -> Any:
        """For ``async def`` jobs: the async ORM runs its queries in asgiref's one thread for
        sync code, so the connections to close are that thread's."""
        await sync_to_async(close_old_connections)()
        try:
            return await call_next()
        finally:
            await sync_to_async(close_old_connections)()


class RequestContext:
    def __call__(
        self, job: Any, payload: dict[str, Any], queue: str, call_next: Callable[[], Any]
    ) -> Any:
        values = context.carried(payload)
        if not values:
            return call_next()
        with context.bind(**values):
            language = values.get("language")
            if isinstance(language, str) and language:
                with translation.override(language):
                    return call_next()
            return call_next()

    async def acall(
        self, job: Any, payload: dict[str, Any], queue: str, call_next: Callable[[], Any]
    ) -> Any:
        """For ``async def`` jobs; the values and the language live in context variables
        (Django's translation state is asgiref's context-aware Local), so per job task."""
        values = context.carried(payload)
        if not values:
            return await call_next()
        with context.bind(**values):
            language = values.get("language")
            if isinstance(language, str) and language:
                with translation.override(language):
                    return await call_next()
            return await call_next()
