"""What every inspection object shares: the settings, the Redis client and the key names.

The API reads the same Redis as the client and the workers, through the process-wide pool
unless given a client, and turns connection failures into `djqueue.errors.RedisUnavailable`
like a push does, so an admin page can show one clear error.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import redis

from .. import config, connection
from ..config import Settings
from ..store import JobStore, Keys, ProcessStore

T = TypeVar("T")


class ApiObject:
    """Base of the inspection objects; ``settings`` and ``redis_client`` default to the process
    settings and pool."""

    def __init__(
        self, settings: Settings | None = None, redis_client: redis.Redis | None = None
    ) -> None:
        self.settings = settings or config.get_settings()
        self.redis = redis_client or connection.get_redis(self.settings)
        self.keys = Keys(self.settings.namespace)
        #: The store's transitions: every change the API makes goes through them.
        self.store = JobStore(
            self.redis, self.keys, self.settings.dead_max_jobs, self.settings.dead_timeout
        )
        self.process_store = ProcessStore(self.redis, self.keys)

    def _call(self, fn: Callable[[], T]) -> T:
        return connection.call(self.settings, fn)

    def _context(self) -> dict[str, Any]:
        """Keyword arguments that build a sibling object on the same settings and client."""
        return {"settings": self.settings, "redis_client": self.redis}


def text(value: Any) -> str:
    """A Redis reply as text; job JSON is UTF-8, anything else is shown with replacements."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return "" if value is None else str(value)


def integer(value: Any, default: int = 0) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        try:
            return int(float(value))
        except (TypeError, ValueError):
            return default
