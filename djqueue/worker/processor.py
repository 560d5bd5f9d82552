"""A processor thread: fetch a job, run it through the steps, acknowledge it, repeat.

The steps around each job (stats, logging, signals, retries) are separate callables composed
once, Sidekiq's way; the job itself runs through `djqueue.executor.run`, which applies the
server middleware, so a Django or Flask integration changes how jobs run by adding middleware,
not by touching this loop.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from .. import executor
from ..payload import loads
from .backoff import REDIS_ERRORS, Backoff, GaveUp
from .fetch import Unit

if TYPE_CHECKING:
    from .manager import Manager

Step = Callable[[Unit, dict[str, Any], Callable[..., Any]], Any]
Handler = Callable[[Unit, dict[str, Any]], Any]


def _run_job(unit: Unit, payload: dict[str, Any]) -> None:
    executor.run(payload, unit.queue)


def compose(steps: Sequence[Step], final: Handler = _run_job) -> Handler:
    """``steps[0]`` outermost, ``final`` innermost, built once rather than per job."""
    handler = final
    for step in reversed(steps):

        def bound(unit: Unit, payload: dict[str, Any], step: Step = step, inner: Handler = handler):
            return step(unit, payload, inner)

        handler = bound
    return handler


class Processor:
    """One worker thread. Its state is read by the manager (shutdown, death) and the janitor
    (which jobs are in hand), so it is kept in plain attributes."""

    def __init__(self, manager: Manager, number: int) -> None:
        self.manager = manager
        self.fetcher = manager.fetcher
        self.number = number
        #: The job being run (None between jobs).
        self.unit: Unit | None = None
        #: The job finished and waiting to be acknowledged with the next fetch.
        self.done: Unit | None = None
        #: True while waiting in BLMOVE: such a processor holds no job yet.
        self.blocking = False
        self.thread = threading.Thread(
            target=self.run, name=f"djqueue-processor-{number}", daemon=True
        )

    def start(self) -> None:
        self.thread.start()

    def run(self) -> None:
        try:
            self.loop()
        except GaveUp:
            pass
        except BaseException as exc:  # noqa: BLE001 - reported to the manager, which replaces us
            self.manager.processor_died(self, exc)
            return
        self.manager.processor_stopped(self)

    def loop(self) -> None:
        manager = self.manager
        backoff = Backoff(f"processor {self.number}", manager.hard_stop)
        while True:
            quiet = manager.quieting.is_set()
            if quiet and self.done is None:
                return
            try:
                unit = self.fetcher.ack_and_fetch(self.done, fetch=not quiet)
                self.done = None
                if unit is None and not quiet:
                    self.blocking = True
                    try:
                        unit = self.fetcher.block()
                    finally:
                        self.blocking = False
            except REDIS_ERRORS as exc:
                if manager.hard_stop.is_set():
                    return
                backoff.failed(exc)
                continue
            backoff.reset()
            if unit is None:
                continue
            if manager.quieting.is_set():
                self.push_back(unit)
                return
            self.unit = unit
            self.process(unit)
            if not unit.acked:
                self.done = unit
            self.unit = None

    def process(self, unit: Unit) -> None:
        try:
            payload = loads(unit.raw)
        except ValueError as exc:
            self.manager.stats.count(failed=True)
            self.manager.retry.bury_malformed(unit, exc)
            return
        self.manager.handler(unit, payload)

    def push_back(self, unit: Unit) -> None:
        """A job taken while the process was going quiet goes back to the front of its queue."""
        try:
            self.fetcher.requeue(unit)
        except REDIS_ERRORS:
            pass  # still in the working list: the shutdown push-back or a peer will get it
