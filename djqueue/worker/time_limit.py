"""Time limits: a job running past its ``time_limit`` is interrupted, and one that will not
stop is reported and, in a swarm, has its process replaced.

One watchdog thread per process (a `Component`), never a thread per job. The runtime step
(`TimeLimit.__call__`, innermost of `Manager.steps`, so the job's log line, signals, status
and retry all see what it raises) arms an entry when a job with a limit starts and disarms it
when the job ends; the watchdog sleeps until the earliest deadline and then interrupts:

- a thread-run job: `djqueue.errors.TimeLimitExceeded` is raised in its thread through
  CPython's ``PyThreadState_SetAsyncExc``. Python delivers it at the next bytecode the thread
  runs, so a job looping in Python stops at once, and a job waiting in a call that does not
  run Python (``time.sleep``, a socket read, a C extension's loop, a lock) stops when that
  call returns, not before;
- an ``async def`` job: its task is cancelled (from the loop's thread), and the step raises
  `TimeLimitExceeded` in place of the ``CancelledError``. A job awaiting something stops at
  once; one blocking the loop (a synchronous call inside ``async def``) stops when it yields.

The job then failed, and the settle step retries it like any failed job. A job may catch the
error to clean up; a job still running one second after its deadline (stuck in C code, or it
caught the error and went on) is reported: a log line naming its class, jid and how long it is
over, and the Busy page marks it from its start and limit. Each job is interrupted once.

In a swarm (``--processes``), each job's hard deadline (its limit plus the shutdown
``timeout``) is published to the parent through `djqueue.worker.parent_line` when the job
starts, from the job's own thread: a job holding the interpreter in C code stops this
process's watchdog too, but not the parent, which kills a child past a hard deadline and
forks another; the child's jobs come back as after any crash (`djqueue.worker.recovery`).
"""

from __future__ import annotations

import asyncio
import ctypes
import math
import threading
import time
from collections.abc import Iterator
from typing import Any

from .. import registry
from ..errors import TimeLimitExceeded
from ..job_options import time_limit
from . import parent_line
from .component import Component
from .fetch import Unit
from .log import logger

#: Seconds past its deadline after which a job that has not stopped is reported.
STUCK_AFTER = 1.0
#: The watchdog's longest sleep with nothing due (an arming that comes sooner wakes it).
IDLE = 60.0

#: ``PyThreadState_SetAsyncExc(thread, exception)``: the exception class's address, or None
#: (NULL) to withdraw one not yet raised. The class stays alive: this module holds it.
_set_async_exc = ctypes.pythonapi.PyThreadState_SetAsyncExc
_set_async_exc.argtypes = (ctypes.c_ulong, ctypes.c_void_p)
_set_async_exc.restype = ctypes.c_int


class Armed:
    """One running job with a limit, as the watchdog sees it."""

    __slots__ = ("name", "jid", "limit", "deadline", "hard", "thread", "task", "loop", "fired")

    def __init__(self, payload: dict[str, Any], limit: float, grace: float) -> None:
        self.name = str(payload.get("class"))
        self.jid = str(payload.get("jid"))
        self.limit = limit
        self.deadline = time.monotonic() + limit
        #: Past this, a swarm's parent replaces the process.
        self.hard = self.deadline + grace
        self.loop = asyncio._get_running_loop()
        self.task = asyncio.current_task(self.loop) if self.loop is not None else None
        self.thread = threading.get_ident()
        #: Interrupted (the exception or the cancellation is on its way).
        self.fired = False

    def over(self, now: float) -> float:
        return now - self.deadline

    def describe(self) -> str:
        return f"{self.name} jid={self.jid}"


class TimeLimit(Component):
    """The runtime step and the watchdog thread of one process. ``grace``: seconds past its
    limit after which a swarm's parent replaces the process (the shutdown ``timeout``)."""

    name = "djqueue-time-limit"
    what = "time limit watchdog"

    def __init__(self, grace: float) -> None:
        self.grace = grace
        self._armed: dict[int, Armed] = {}
        #: Entries reported as over their limit, not ended yet.
        self._reported: set[int] = set()
        self._lock = threading.Lock()
        #: When the watchdog wakes next (monotonic): an arming with an earlier deadline wakes it.
        self._next = math.inf
        #: The hard deadline told to the parent (inf: none).
        self._published = math.inf
        self._warned: set[str] = set()
        super().__init__()

    # -- the step ------------------------------------------------------------------------------

    def __call__(self, unit: Unit, payload: dict[str, Any]) -> Iterator[None] | None:
        limit = self.limit(payload)
        if limit is None:
            return None
        return self._guard(payload, limit)

    def limit(self, payload: dict[str, Any]) -> float | None:
        """The payload's ``time_limit``, else the registered job's (a payload another client
        pushed); a value that is no limit is logged once per job class and ignored."""
        value = payload.get("time_limit")
        if value is None:
            definition = registry.get(payload.get("class"))  # type: ignore[arg-type]
            value = (getattr(definition, "job_options", None) or {}).get("time_limit")
            if value is None:
                return None
        try:
            return time_limit(value)
        except ValueError as exc:
            name = str(payload.get("class"))
            if name not in self._warned:
                self._warned.add(name)
                logger.warning("%s: the payload's %s; running it without a limit", name, exc)
            return None

    def _guard(self, payload: dict[str, Any], limit: float) -> Iterator[None]:
        entry = self._arm(Armed(payload, limit, self.grace))
        try:
            yield
        except asyncio.CancelledError as exc:
            if not entry.fired:
                raise
            if entry.task is not None:
                entry.task.uncancel()
            raise TimeLimitExceeded(_message(entry)) from exc
        except TimeLimitExceeded as exc:
            if entry.fired and not exc.args:
                exc.args = (_message(entry),)  # should the message have been missed
            raise
        finally:
            self._disarm(entry)

    def _arm(self, entry: Armed) -> Armed:
        with self._lock:
            self._armed[id(entry)] = entry
            if entry.hard < self._published:
                self._publish(entry.hard)
            wake = entry.deadline < self._next
            if wake:
                self._next = entry.deadline
        if wake:
            self.wake_up()
        return entry

    def _disarm(self, entry: Armed) -> None:
        """Forget ``entry``; an interruption fired but not yet delivered is withdrawn (the
        job has ended: nothing is left to interrupt). The exception may still land in this
        very call, at any bytecode: it is caught and the call made again, so it never reaches
        the steps around."""
        while True:
            try:
                self._forget(entry)
                return
            except TimeLimitExceeded:
                continue

    def _forget(self, entry: Armed) -> None:
        key = id(entry)
        with self._lock:
            if self._armed.pop(key, None) is not None and entry.hard <= self._published:
                self._publish(min((e.hard for e in self._armed.values()), default=math.inf))
            if entry.fired and entry.loop is None:
                _set_async_exc(entry.thread, None)
                TimeLimitExceeded.pending.pop(entry.thread, None)
            reported = key in self._reported
            self._reported.discard(key)
        if reported:
            over = entry.over(time.monotonic())
            logger.warning(
                "%s ended %.1f s over its time limit of %g s", entry.describe(), over, entry.limit
            )

    def _publish(self, hard: float) -> None:
        self._published = hard
        parent_line.publish_deadline(0.0 if hard == math.inf else hard)

    # -- the watchdog ----------------------------------------------------------------------------

    def tick(self) -> float:
        now = time.monotonic()
        due = math.inf
        stuck: list[Armed] = []
        with self._lock:
            for key, entry in self._armed.items():
                if not entry.fired:
                    if now >= entry.deadline:
                        self._fire(entry)
                    else:
                        due = min(due, entry.deadline)
                        continue
                if key in self._reported:
                    continue
                if entry.over(now) >= STUCK_AFTER:
                    self._reported.add(key)
                    stuck.append(entry)
                else:
                    due = min(due, entry.deadline + STUCK_AFTER)
            self._next = due
        for entry in stuck:
            logger.warning(
                "%s is %.1f s over its time limit of %g s and has not stopped (a call Python "
                "cannot interrupt, or the job caught TimeLimitExceeded)%s",
                entry.describe(),
                entry.over(now),
                entry.limit,
                f"; its process is replaced at {entry.hard - entry.deadline:g} s over"
                if parent_line.attached()
                else "",
            )
        return min(due - now, IDLE)

    def _fire(self, entry: Armed) -> None:
        entry.fired = True
        if entry.loop is None:
            TimeLimitExceeded.pending[entry.thread] = _message(entry)
            _set_async_exc(entry.thread, id(TimeLimitExceeded))
        else:
            entry.loop.call_soon_threadsafe(self._cancel, entry)

    def _cancel(self, entry: Armed) -> None:
        """On the loop: cancel the job's task, unless it ended meanwhile."""
        with self._lock:
            armed = id(entry) in self._armed
        if armed and entry.task is not None:
            entry.task.cancel(_message(entry))


def _message(entry: Armed) -> str:
    return f"{entry.name} ran past its time limit of {entry.limit:g} s"
