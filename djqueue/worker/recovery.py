"""Poison jobs: a job that kills the process running it (``os._exit``, a segfault in a C
extension, the kernel's OOM killer) must not kill every worker that takes it after.

A job pushed back after a crash is entered in the ``recoveries`` hash (``requeue_process.lua``),
and the fetch says so (`djqueue.worker.fetch.Unit.recovered`). Each start of such a job is counted
in Redis before it runs, and its entry is dropped once it has run to its end, failing or not.
A job counted `DEATHS` times died with its process each time: it is buried in ``dead`` with
`djqueue.errors.ProcessDied` instead of running again, as Sidekiq Pro's super_fetch does.

The evidence rule: a death counts against a job only when the job ran alone in its process.
A process killed from outside (a deploy, an operator's kill -9, the OOM killer choosing it for
another job's memory) takes down every job it runs, and blaming all of them buried innocent
jobs. So a recovered job whose turn comes while the process runs nothing else runs alone (no
other job starts until it ends), and that start is counted; one whose turn comes while other
jobs run, runs next to them and its start is counted apart, as no evidence. After `DEATHS`
deaths next to other jobs it waits for the running jobs to end and runs alone, so a poison
job in a busy process is still buried, after at most twice as many deaths.

Only jobs that really started are counted, so the jobs a crashed process had fetched but not
started come back innocent. Recovered jobs run one at a time in a process (thread-run and
``async def`` alike), so a poison job takes no innocent recovered job down with it.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from typing import Any

from ..pipeline import Skip
from .backoff import keep_trying
from .buffer import JobBuffer
from .fetch import Unit
from .log import logger
from .settle import Settle

#: Deaths of its process, running alone, a job may cause before it is buried (the first
#: death, before it was known as a suspect, included).
DEATHS = 3


class RecoveryGuard:
    """Runtime step, outermost but for a framework's contexts: for recovered jobs only
    (the others pass at the cost of a call), counts their starts and buries poison ones.

    ``jobs_running()`` is the number of jobs the process runs now (thread processors holding
    one, and jobs on the event loop), the caller included."""

    def __init__(self, settle: Settle, buffer: JobBuffer, jobs_running: Callable[[], int]) -> None:
        self.settle = settle
        #: Where recovered jobs are counted, and the shutdown's hard stop (as settling's).
        self.lists = settle.fetcher.lists
        self.stop = settle.stop
        self.buffer = buffer
        self.jobs_running = jobs_running
        self._one_at_a_time = threading.Lock()
        #: Recovered jobs waiting for their turn: held by the process, not running.
        self._waiting = 0
        self._waiting_lock = threading.Lock()

    #: On the event loop, the turn, the wait to run alone and the Redis counts are made in
    #: a thread, so the loop goes on serving the other jobs (`djqueue.pipeline`).
    offload: Any = staticmethod(asyncio.to_thread)

    def __call__(self, unit: Unit, payload: dict[str, Any]) -> Iterator[None] | None:
        if not unit.recovered:
            return None
        jid = payload.get("jid")
        if not isinstance(jid, str):
            return None
        return self.guard(unit, payload, jid)

    def guard(self, unit: Unit, payload: dict[str, Any], jid: str) -> Iterator[None]:
        """One recovered job at a time; counted, and skipped (buried) when it is poison."""
        self._waits(1)
        try:
            self._one_at_a_time.acquire()
        finally:
            self._waits(-1)
        try:
            alone = self.go_alone(jid)
            try:
                if not self.admit(unit, payload, jid, alone):
                    raise Skip
                yield
            finally:
                self.end(jid, alone)
        finally:
            self._one_at_a_time.release()

    def _waits(self, change: int) -> None:
        with self._waiting_lock:
            self._waiting += change

    def _others(self) -> int:
        """Jobs running beside the one whose turn it is (those waiting for a turn excluded)."""
        return self.jobs_running() - 1 - self._waiting

    def go_alone(self, jid: str) -> bool:
        """Whether this start runs alone, and so counts as evidence: at once when nothing
        else runs; after the running jobs end when the job already died `DEATHS` times next
        to others; else it runs next to them, not counted as evidence."""
        if self.buffer.run_alone(self._others):
            return True
        if self._shared_starts(jid) < DEATHS:
            return False
        return self.buffer.run_alone(self._others, wait=True, stop=self.stop)

    def admit(self, unit: Unit, payload: dict[str, Any], jid: str, alone: bool) -> bool:
        """Count this start; False (and the job buried) when it died running alone
        `DEATHS` times already."""
        starts = self.count_start(jid, alone)
        if not alone or starts < DEATHS:
            return True
        self.bury(unit, payload, starts)
        return False

    def end(self, jid: str, alone: bool) -> None:
        self.forget_start(jid)
        if alone:
            self.buffer.end_alone()

    def _shared_starts(self, jid: str) -> int:
        return keep_trying(lambda: self.lists.shared_starts(jid), "reading starts", self.stop)

    def count_start(self, jid: str, alone: bool = True) -> int:
        return keep_trying(
            lambda: self.lists.count_start(jid, alone), "counting a start", self.stop
        )

    def forget_start(self, jid: str) -> None:
        keep_trying(lambda: self.lists.forget_start(jid), "ending a recovery", self.stop)

    def bury(self, unit: Unit, payload: dict[str, Any], starts: int) -> None:
        logger.error(
            "%s %s: its process died while running it %d times, the last ones with no other "
            "job running; moved to the dead set",
            payload.get("class"),
            payload.get("jid"),
            starts,
        )
        self.settle.died(unit, payload, starts)
