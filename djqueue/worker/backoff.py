"""Riding out Redis outages: retry with growing pauses, log once per outage, never die of it.

Every runtime thread talks to Redis through `keep_trying` or a `Backoff`, so a lost connection,
a restarting Redis or a failover costs time, not threads or jobs.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

import redis.exceptions

from ..connection import CONNECTION_ERRORS
from .log import logger

T = TypeVar("T")

#: What a runtime thread survives: connection trouble and error replies alike (a script
#: flushed, a replica turned read-only); the call is simply tried again later.
REDIS_ERRORS: tuple[type[BaseException], ...] = (redis.exceptions.RedisError, *CONNECTION_ERRORS)


class GaveUp(Exception):
    """The process is stopping and the call never got through."""


class Backoff:
    """Pauses of 0.05 s doubling up to ``cap`` seconds; `reset` after a success."""

    def __init__(self, what: str, stop: threading.Event | None = None, cap: float = 5.0) -> None:
        self.what = what
        self.stop = stop or threading.Event()
        self.cap = cap
        self.failures = 0

    def failed(self, exc: BaseException) -> None:
        """Log (first failure, then about once a minute) and sleep; returns early on stop."""
        self.failures += 1
        pause = min(0.05 * 2 ** min(self.failures, 10), self.cap)
        if self.failures == 1 or self.failures % max(1, int(60 / self.cap)) == 0:
            logger.warning(
                "%s: Redis error (%s: %s); retrying every %.1f s at most",
                self.what,
                type(exc).__name__,
                exc,
                self.cap,
            )
        self.stop.wait(pause)

    def reset(self) -> None:
        if self.failures:
            logger.info("%s: Redis reachable again after %d failed tries", self.what, self.failures)
        self.failures = 0


def keep_trying(fn: Callable[[], T], what: str, stop: threading.Event | None = None) -> T:
    """Call ``fn`` until it gets through; raise `GaveUp` if ``stop`` is set first."""
    backoff = Backoff(what, stop)
    while True:
        try:
            result = fn()
        except REDIS_ERRORS as exc:
            if backoff.stop.is_set():
                raise GaveUp(what) from exc
            backoff.failed(exc)
            if backoff.stop.is_set():
                raise GaveUp(what) from exc
            continue
        backoff.reset()
        return result
