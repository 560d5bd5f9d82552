"""The swarm: one parent forking N worker processes, for every core and for recycling.

Python runs one thread of bytecode at a time, so one process uses one core however many
processor threads it has. ``--processes N`` forks N full worker processes from a parent that
imported the app once (Django set up, jobs discovered, the Flask app built): each child is a
complete djqueue process with its own identity in ``processes``, so the admin and Sidekiq's
Web UI list each one, as with Sidekiq Enterprise's swarm.

The parent runs no jobs and holds no connection: before forking it sends
`djqueue.signals.worker_forking` (the Django app closes its database connections there) and
drops djqueue's Redis pools, so no socket is ever shared across a fork.

- A child that dies (kill -9, OOM) is started again, after a pause that doubles with each
  quick death (1 s up to 30 s) and resets once a child has lived a minute. Its jobs are not
  lost: they sit in its working lists, which the other processes' janitors push back.
- A child that stops to be replaced (over ``--max-memory`` or ``--max-jobs``: it finished its
  running jobs and pushed back what it held, exit `RECYCLED`) is replaced at once.
- Quiet and Stop mean for a child what they mean for one process, whoever sends them (the
  Busy page of Sidekiq's Web UI or djqueue's, the API, an OS signal): each child says on a pipe
  to the parent when it is told to quiet or to stop (`djqueue.worker.parent_line`). A child told
  to stop is not replaced: the swarm shrinks. A quiet child is not replaced either: it takes no
  jobs, so neither would its replacement, and a fresh one would take jobs mid-deploy. Once
  every child is quiet (Quiet All) the swarm is quiet and forks nothing more; once every child
  has been told to stop (Stop All) the swarm stops, and the parent exits when they are gone.
- A child running a job past its hard time limit (the job's ``time_limit`` plus ``timeout``,
  `djqueue.worker.time_limit`: a job stuck where Python cannot interrupt it) is killed
  (SIGKILL) and replaced at once; its jobs come back as after any crash.
- TERM and INT go to every child (each finishes or pushes back its jobs); the parent exits
  once all have stopped: 0, or 1 if one of them failed. TSTP (quiet) and TTIN (thread dumps)
  are passed on. A second TERM is passed on too: children stop waiting for running jobs.
"""

from __future__ import annotations

import os
import queue
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .. import connection, signals
from . import log, parent_line
from .component import Component
from .launcher import RECYCLED
from .log import logger

#: Seconds a child must live for its next death to restart it without a pause.
STABLE = 60.0
#: The longest pause before restarting a child that keeps dying.
MAX_PAUSE = 30.0
#: Signals the parent passes on to its children.
FORWARDED = ("TERM", "INT", "TSTP", "TTIN")


@dataclass
class Child:
    """A live child, as the parent knows it."""

    pid: int
    slot: int
    started: float
    #: The read end of the child's `parent_line`.
    line: int
    #: Told to quiet: it takes no jobs, and is not replaced.
    quiet: bool = False
    #: Told to stop: it is on its way out, and is not replaced.
    stopping: bool = False
    #: Killed by the parent for a job past its hard time limit: replaced at once.
    overdue: bool = False


def process_count(setting: int) -> int:
    """``processes`` as given, 0 meaning one per core."""
    return setting or os.cpu_count() or 1


class Swarm(Component):
    """``Swarm(n, run_child).run()``: ``run_child(parent_pid)`` runs one worker and returns its
    exit code; it is called in each forked child, which then exits with that code. A child
    stops by itself if the parent dies (kill -9): it checks its parent at every heartbeat.

    The parent's loop is a `Component`'s, run on the calling (main) thread, which alone may
    install signal handlers: one pass reaps, refills and obeys a signal, and a bug in a pass
    is logged and the loop goes on, so the children are not left without their parent."""

    name = "djqueue-swarm"
    what = "swarm"

    def __init__(self, size: int, run_child: Callable[[int], int]) -> None:
        self.size = size
        self.run_child = run_child
        #: pid -> the child, for the children alive.
        self.children: dict[int, Child] = {}
        #: slot -> the monotonic time a dead child's slot may be filled again.
        self.waiting: dict[int, float] = {}
        self.pauses: dict[int, float] = {}
        self.signals: queue.SimpleQueue[str] = queue.SimpleQueue()
        self.stopping = False
        #: Told TSTP, or every child was: nothing more is forked.
        self.quieted = False
        self.failed = False
        #: Each slot's earliest hard deadline, written by its child (`parent_line.Deadlines`).
        self.deadlines = parent_line.Deadlines(size)
        super().__init__()

    # -- the parent's loop ---------------------------------------------------------------------

    def run(self) -> int:  # type: ignore[override]
        # The component's loop (`Component.run`) inside, with the handlers and the exit code
        # around it; the swarm is never `start`ed on a thread of its own.
        restore = self._install_handlers()
        try:
            logger.info("swarm: starting %d worker processes", self.size)
            # Every slot is due at once: the loop's first pass forks them.
            self.waiting = dict.fromkeys(range(self.size), 0.0)
            super().run()
            logger.info("swarm: every worker process has stopped; bye")
            return 1 if self.failed else 0
        finally:
            restore()

    def tick(self) -> float:
        """One pass: hear what the children were told, reap the ones that ended, fork the due
        ones, obey one signal."""
        if not self.children and (not self.waiting or self.stopping or self.quieted):
            self.halt()
            return 0.0
        for child in self.children.values():
            self._listen(child)
        self._follow()
        self._enforce()
        self._reap()
        self._refill()
        try:
            name = self.signals.get(timeout=0.2)
        except queue.Empty:
            return 0.0
        self._obey(name)
        return 0.0

    def _obey(self, name: str) -> None:
        if name in ("TERM", "INT"):
            if not self.stopping:
                logger.info("swarm: %s: stopping every worker process", name)
            self.stopping = True
            self.waiting.clear()
        elif name == "TSTP":
            if not self.quieted:
                logger.info("swarm: TSTP: quieting every worker process; starting no more")
            self.quieted = True
            self.waiting.clear()
        for pid in list(self.children):
            try:
                os.kill(pid, getattr(signal, f"SIG{name}"))
            except ProcessLookupError:
                pass

    def _listen(self, child: Child) -> None:
        """Read what ``child`` said on its line (all of it, without waiting)."""
        while True:
            try:
                said = os.read(child.line, 64)
            except BlockingIOError:
                return
            if not said:
                return
            if parent_line.QUIET in said and not child.quiet:
                child.quiet = True
                logger.info("swarm: worker %d was told to quiet", child.pid)
            if parent_line.STOP in said and not child.stopping:
                child.stopping = True
                logger.info("swarm: worker %d was told to stop", child.pid)

    def _follow(self) -> None:
        """The swarm is what every child is: told to stop by the Busy page's Stop All (or one
        by one), it stops; quieted by Quiet All, it forks no more, not even for a child that
        was waiting to be started again."""
        if not self.children or self.stopping:
            return
        if all(child.stopping for child in self.children.values()):
            logger.info("swarm: every worker process was told to stop; stopping when they have")
            self.stopping = True
            self.waiting.clear()
        elif not self.quieted and all(c.quiet or c.stopping for c in self.children.values()):
            logger.info("swarm: every worker process is quiet; starting no more")
            self.quieted = True
            self.waiting.clear()

    def _enforce(self) -> None:
        """Kill each child running a job past its hard time limit; `_ended` replaces it."""
        now = time.monotonic()
        for pid, child in self.children.items():
            deadline = self.deadlines.read(child.slot)
            if child.overdue or not 0 < deadline < now:
                continue
            child.overdue = True
            logger.warning(
                "swarm: worker %d runs a job %.0f s past its hard time limit (its time_limit "
                "plus timeout); killing it (SIGKILL) and starting another",
                pid,
                now - deadline,
            )
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def _reap(self) -> None:
        while self.children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                for child in self.children.values():
                    os.close(child.line)
                self.children.clear()
                return
            if pid == 0:
                return
            if pid not in self.children:
                continue
            child = self.children.pop(pid)
            self._listen(child)  # what it said before it went
            os.close(child.line)
            code = os.waitstatus_to_exitcode(status)
            self._ended(child, pid, code, time.monotonic() - child.started)

    def _ended(self, child: Child, pid: int, code: int, lived: float) -> None:
        failed = code not in (0, RECYCLED)
        if self.stopping or child.stopping or code == 0:
            if failed:
                self.failed = True
                logger.warning(
                    "swarm: worker %d %s while stopping; exiting with 1", pid, _describe(code)
                )
            elif not self.stopping:
                logger.info("swarm: worker %d stopped as it was told; not replaced", pid)
            return
        if child.quiet or self.quieted:
            # Logged, not failed: a quiet process was on its way out, and ran no new jobs.
            logger.warning(
                "swarm: worker %d %s while quiet; not replaced: a quiet process takes no jobs",
                pid,
                "recycled" if code == RECYCLED else _describe(code),
            )
            return
        if code == RECYCLED or child.overdue:
            logger.info(
                "swarm: worker %d %s; starting its replacement",
                pid,
                "was killed past a hard time limit" if child.overdue else "recycled",
            )
            self.waiting[child.slot] = time.monotonic()
            return
        slot = child.slot
        pause = 0.0 if lived >= STABLE else min(MAX_PAUSE, max(1.0, self.pauses.get(slot, 0) * 2))
        self.pauses[slot] = pause
        logger.warning(
            "swarm: worker %d %s after %.0f s; starting another in %.0f s",
            pid,
            _describe(code),
            lived,
            pause,
        )
        self.waiting[slot] = time.monotonic() + pause

    def _refill(self) -> None:
        if self.stopping or self.quieted:
            return
        now = time.monotonic()
        for slot, when in list(self.waiting.items()):
            if when <= now:
                self._fork(slot)  # should it fail, the slot stays due for the next pass
                del self.waiting[slot]

    # -- forking ---------------------------------------------------------------------------------

    def _fork(self, slot: int) -> None:
        if signals.worker_forking.receivers:
            signals.worker_forking.send(self)
        connection.reset()
        # No thread may hold a lock the child needs: the log's writer is stopped for the fork
        # (and started again on both sides). The forwarded signals are blocked across the
        # fork, so one sent meanwhile reaches the parent after it (and is passed on) or the
        # child's worker once it can handle it, never a handler that would drop it.
        log.flush()
        sys.stdout.flush()
        sys.stderr.flush()
        parent = os.getpid()
        forwarded = {getattr(signal, f"SIG{name}") for name in FORWARDED}
        line, end = os.pipe()
        self.deadlines.write(slot, 0.0)  # not the deadline of the child it replaces
        signal.pthread_sigmask(signal.SIG_BLOCK, forwarded)
        try:
            pid = os.fork()
            if pid == 0:
                self._child(parent, forwarded, line, end, slot)
        except BaseException:
            os.close(line)
            raise
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, forwarded)
            os.close(end)
        log.after_fork()
        os.set_blocking(line, False)
        self.children[pid] = Child(pid, slot, time.monotonic(), line)

    def _child(self, parent: int, blocked: set[int], line: int, end: int, slot: int) -> None:
        """In the child: the parent's handlers and lines off, its own line to the parent on,
        one worker, then exit with its code."""
        code = 1
        try:
            for fd in [line, *(child.line for child in self.children.values())]:
                os.close(fd)
            self.children.clear()
            parent_line.attach(end)
            parent_line.attach_deadline(self.deadlines, slot)
            # The parent's handlers off; the signals stay blocked until the worker has its own
            # (`run_launcher` unblocks them), so a TERM passed on meanwhile stops it cleanly.
            for signum in blocked:
                signal.signal(signum, signal.SIG_DFL)
            log.after_fork()
            code = self.run_child(parent)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        except BaseException:
            logger.exception("worker process failed")
        finally:
            log.flush()
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)

    def _install_handlers(self) -> Callable[[], None]:
        previous: dict[int, Any] = {}
        for name in FORWARDED:
            signum = getattr(signal, f"SIG{name}")

            def handler(_signum: int, _frame: Any, name: str = name) -> None:
                self.signals.put(name)

            previous[signum] = signal.signal(signum, handler)

        def restore() -> None:
            for signum, old in previous.items():
                signal.signal(signum, old)

        return restore


def _describe(code: int) -> str:
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with code {code}"
