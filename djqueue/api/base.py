"""What every inspection object shares: the settings, the Redis client and the key names.

The API reads the same Redis as the client and the workers, through the process-wide pool
unless given a client, and turns connection failures into `djqueue.errors.RedisUnavailable`
like a push does, so an admin page can show one clear error.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import redis
import redis.exceptions

from .. import config, connection
from ..config import Settings
from ..errors import BadKey
from ..store import JobStore, Keys, ProcessStore, bad_keys
from ..store.limits import LimitStore

T = TypeVar("T")
#: Keys a read found bad: (key, what is wrong with it), as `djqueue.store.bad_keys` words it.
Problems = list[tuple[str, str]]


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
        #: The limiters (`djqueue.limits`): their figures, the jobs parked for their slots.
        self.limits = LimitStore(self.redis, self.keys, self.settings.default_queue)

    #: The key this object reads and the Redis type it must hold (a queue's list, a job
    #: set's zset), so a WRONGTYPE reply becomes `BadKey` naming it; empty for none.
    key: str = ""
    key_type: str = ""

    @classmethod
    def of_key(
        cls,
        name: str,
        key_type: str,
        settings: Settings | None = None,
        redis_client: redis.Redis | None = None,
    ) -> ApiObject:
        """An object reading the key `Keys` calls ``name`` (``"queues"``), of ``key_type``."""
        found = cls(settings, redis_client)
        found.key, found.key_type = getattr(found.keys, name), key_type
        return found

    def _call(self, fn: Callable[[], T]) -> T:
        try:
            return connection.call(self.settings, fn)
        except redis.exceptions.ResponseError as exc:
            held = self.key_type and bad_keys.is_wrong_type(exc) and self._held()
            problem = held and bad_keys.kind_problem(held, self.key_type)
            if held and problem:
                raise BadKey(self.key, problem, held) from exc
            raise

    def _held(self) -> str:
        return connection.call(self.settings, lambda: bad_keys.held(self.redis, self.key))

    def _context(self) -> dict[str, Any]:
        """Keyword arguments that build a sibling object on the same settings and client."""
        return {"settings": self.settings, "redis_client": self.redis}
