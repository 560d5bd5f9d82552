"""The runtime's parts, and the base of its own threads (pollers, heartbeat, duties).

A `Part` is what the launcher holds: it is started, told to go quiet, and stopped, each in
the launcher's one order (`djqueue.worker.launcher.Launcher.parts`). The manager is one; each
runtime thread is one through `Component`.

Each was built by hand with its own stop event, its own thread and its own "a bug must not end
the loop"; here that is written once. A component is one pass of work (`Component.tick`)
repeated on a daemon thread until `stop`: a Redis error waits with a growing backoff (logged by
`djqueue.worker.backoff.Backoff`), any other exception is logged with its traceback and the
loop goes on after `after_bug` seconds. The watchdog is the loop's own: should something that
is not an ``Exception`` escape a pass (a ``SystemExit`` from a library), it is logged and the
loop starts again, so a runtime thread never ends before `stop`.
"""

from __future__ import annotations

import threading
from typing import Protocol

from .backoff import REDIS_ERRORS, Backoff
from .log import logger

#: Seconds a stopping thread gets to end its current pass.
JOIN = 10.0


class Part(Protocol):
    """One piece of a worker process, as the launcher drives it."""

    def start(self) -> None:
        """Begin (the start-up work of the launcher is done by then)."""

    def quiet(self) -> None:
        """The process takes no new work (TSTP, and the first step of a stop)."""

    def stop(self, deadline: float) -> None:
        """End; ``deadline`` (monotonic) is the shutdown's, the time running jobs have."""


class Component:
    """A runtime thread. Subclasses give ``name`` (the thread's) and ``what`` (the log's), and
    write `tick`."""

    name = "djqueue-component"
    what = "component"
    #: Seconds to wait after a pass failed with a bug before the next one.
    after_bug = 1.0
    #: The longest backoff wait after a Redis error.
    backoff_cap = 5.0
    #: Whether going quiet ends the loop (the pollers: a quiet process pushes nothing).
    halts_on_quiet = False

    def __init__(self) -> None:
        self.stop_event = threading.Event()
        #: Set to end a wait early (`wake_up`, `stop`).
        self.wake = threading.Event()
        self.backoff = Backoff(self.what, self.stop_event, cap=self.backoff_cap)
        self.thread = threading.Thread(target=self.run, name=self.name, daemon=True)

    def tick(self) -> float:
        """One pass; returns how long to wait before the next (a `wake_up` ends it early)."""
        raise NotImplementedError

    def outage(self) -> None:
        """Called after a pass failed for want of Redis (the backoff has waited already)."""

    def start(self) -> None:
        self.thread.start()

    def halt(self) -> None:
        """End the loop after the current pass, without waiting for it."""
        self.stop_event.set()
        self.wake.set()

    def quiet(self) -> None:
        if self.halts_on_quiet:
            self.halt()

    def stop(self, deadline: float | None = None) -> None:
        """End the loop and wait up to `JOIN` seconds for its pass: a pass is no job, so the
        shutdown's ``deadline`` (for running jobs, spent by now) does not shorten that."""
        self.halt()
        if self.thread.is_alive():
            self.thread.join(JOIN)

    def wake_up(self) -> None:
        self.wake.set()

    def sleep(self, seconds: float) -> None:
        """Wait ``seconds``, or until woken up or stopped."""
        if seconds > 0:
            self.wake.wait(seconds)
        self.wake.clear()

    def run(self) -> None:
        while not self.stop_event.is_set():
            try:
                self.loop()
            except BaseException:  # noqa: BLE001 - the watchdog: the thread must not end
                logger.exception("%s stopped; starting it again", self.what)
                self.stop_event.wait(self.after_bug)

    def loop(self) -> None:
        while not self.stop_event.is_set():
            try:
                pause = self.tick()
            except REDIS_ERRORS as exc:
                self.backoff.failed(exc)
                self.outage()
                continue
            except Exception:
                logger.exception("%s failed; trying again", self.what)
                pause = self.after_bug
            else:
                self.backoff.reset()
            self.sleep(pause)
