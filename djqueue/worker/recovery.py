"""Poison jobs: a job that kills the process running it (``os._exit``, a segfault in a C
extension, the kernel's OOM killer) must not kill every worker that takes it after.

A job pushed back after a crash is entered in the ``recoveries`` hash (``requeue_process.lua``),
and the fetch says so (`djqueue.worker.fetch.Unit.recovered`). Each start of such a job is counted
in Redis before it runs, and its entry is dropped once it has run to its end, failing or not.
A job counted `DEATHS` times died with its process each time: it is buried in ``dead`` with
`djqueue.errors.ProcessDied` instead of running again, as Sidekiq Pro's super_fetch does.

Only jobs that really started are counted, so the jobs a crashed process had fetched but not
started come back innocent. Recovered jobs run one at a time in a process, so a poison job
takes no innocent recovered job down with it.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from typing import Any

from ..store import WorkingLists
from .backoff import keep_trying
from .fetch import Unit
from .job_retry import JobRetry
from .log import logger
from .stats import Stats

#: Deaths of its process a job may cause before it is buried.
DEATHS = 3


class RecoveryGuard:
    """Processor step, outermost, for recovered jobs only (`Manager.recovered_handler`):
    counts their starts and buries poison ones."""

    def __init__(
        self, lists: WorkingLists, retry: JobRetry, stats: Stats, stop: threading.Event
    ) -> None:
        self.lists = lists
        self.retry = retry
        self.stats = stats
        self.stop = stop
        self._one_at_a_time = threading.Lock()
        self._async_lock: asyncio.Lock | None = None

    def __call__(self, unit: Unit, payload: dict[str, Any], inner: Callable[..., Any]) -> Any:
        jid = payload.get("jid")
        if not unit.recovered or not isinstance(jid, str):
            return inner(unit, payload)
        with self._one_at_a_time:
            starts = self.count_start(jid)
            try:
                if starts < DEATHS:
                    return inner(unit, payload)
                self.bury(unit, payload, starts)
                return None
            finally:
                self.forget_start(jid)

    async def acall(
        self, unit: Unit, payload: dict[str, Any], inner: Callable[..., Awaitable[Any]]
    ) -> Any:
        """`__call__` for an ``async def`` job. Recovered async jobs run one at a time too,
        each waiting its turn on the loop rather than blocking it."""
        jid = payload.get("jid")
        if not unit.recovered or not isinstance(jid, str):
            return await inner(unit, payload)
        async with self._async_turn():
            starts = self.count_start(jid)
            try:
                if starts < DEATHS:
                    return await inner(unit, payload)
                self.bury(unit, payload, starts)
                return None
            finally:
                self.forget_start(jid)

    def _async_turn(self) -> asyncio.Lock:
        if self._async_lock is None:
            self._async_lock = asyncio.Lock()
        return self._async_lock

    def count_start(self, jid: str) -> int:
        return keep_trying(lambda: self.lists.count_start(jid), "counting a start", self.stop)

    def forget_start(self, jid: str) -> None:
        keep_trying(lambda: self.lists.forget_start(jid), "ending a recovery", self.stop)

    def bury(self, unit: Unit, payload: dict[str, Any], starts: int) -> None:
        logger.error(
            "%s %s: its process died while running it %d times; moved to the dead set",
            payload.get("class"),
            payload.get("jid"),
            starts,
        )
        self.stats.count(failed=True)
        self.retry.died(unit, payload, starts)
