"""Riding out Redis outages: retry with growing pauses, log once per outage, never die of it.

Every runtime thread talks to Redis through `keep_trying` or a `Backoff`, so a lost connection,
a restarting Redis or a failover costs time, not threads or jobs.
"""

from __future__ import annotations

import threading
import time
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


class _Outage:
    """Process-wide outage state, so ten processors losing Redis at once log two lines
    (lost, back), not twenty. Until Redis has been reached once (`connected`), a failure
    says so instead: a worker started against a Redis it never reached did not "lose" it."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.down_since: float | None = None
        self.last_report = 0.0
        #: The Redis URL (without password) while it has not been reached yet.
        self.waiting_for: str | None = None

    def connecting(self, url: str) -> None:
        """Start-up: Redis at ``url`` has not been reached yet."""
        self.waiting_for = url

    def connected(self) -> None:
        self.waiting_for = None

    def failed(self, what: str, exc: BaseException) -> None:
        now = time.monotonic()
        with self.lock:
            first = self.down_since is None
            if first:
                self.down_since = now
            elif now - self.last_report < 60:
                return
            self.last_report = now
        if self.waiting_for is not None:
            logger.warning(
                "cannot reach Redis at %s (%s: %s); waiting (Ctrl-C to quit)",
                self.waiting_for,
                type(exc).__name__,
                exc,
                extra={"source": what},
            )
            return
        logger.warning(
            "%s Redis (%s: %s); retrying with backoff",
            "lost" if first else "still no",
            type(exc).__name__,
            exc,
            extra={"source": what},
        )

    def recovered(self) -> None:
        with self.lock:
            since, self.down_since = self.down_since, None
        if since is not None:
            logger.info("Redis reachable again after %.1f s", time.monotonic() - since)


outage = _Outage()


class Backoff:
    """Pauses of 0.1 s doubling up to ``cap`` seconds; `reset` after a success."""

    def __init__(self, what: str, stop: threading.Event | None = None, cap: float = 5.0) -> None:
        self.what = what
        self.stop = stop or threading.Event()
        self.cap = cap
        self.failures = 0

    def failed(self, exc: BaseException) -> None:
        """Report the failure and sleep; returns early when ``stop`` is set."""
        self.failures += 1
        outage.failed(self.what, exc)
        self.stop.wait(min(0.05 * 2 ** min(self.failures, 10), self.cap))

    def reset(self) -> None:
        if self.failures:
            self.failures = 0
            outage.recovered()


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
