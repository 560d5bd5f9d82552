"""The limiters of the cluster as the Limits page and scripts read them (`djqueue.limits`)."""

from __future__ import annotations

import redis

from ..config import Settings
from ..store.limits import LimiterFigures
from .base import ApiObject


class _Reader(ApiObject):
    pass


def limiters(
    settings: Settings | None = None, redis_client: redis.Redis | None = None
) -> list[LimiterFigures]:
    """Every limiter entered in the last week, by name: its kind, limit, use now and how
    often it refused a job. Redis unreachable raises `djqueue.RedisUnavailable`."""
    reader = _Reader(settings, redis_client)
    return reader._call(reader.limits.figures)
