"""A processor thread: take a job from the process's buffer, run it through the steps, hand it
back for acknowledgement, repeat.

The steps around each job (stats, logging, signals, retries) are runtime steps, each written
once for threads and the event loop (`djqueue.pipeline`); the job itself runs through
`djqueue.executor.run`, which applies the server middleware, so a Django or Flask integration
changes how jobs run by adding middleware, not by touching this loop.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

from .. import executor, pipeline, registry
from ..errors import MalformedJob
from ..payload import loads
from ..running import RunningJob
from .backoff import REDIS_ERRORS, Backoff, GaveUp
from .fetch import Unit

if TYPE_CHECKING:
    from .runtime import Runtime

#: Hands an ``async def`` job to the event loop; False when the process went quiet first.
HandOff = Callable[[Unit, dict[str, Any]], bool]
#: Told when a processor's thread ends: None when it left, else what killed it.
Ended = Callable[["Processor", BaseException | None], None]


def run(steps: Sequence[Any], unit: Unit, payload: dict[str, Any]) -> None:
    """Run the job in this thread through the runtime's steps (`Manager.steps`)."""
    pipeline.run(steps, (unit, payload), partial(_job, unit, payload))


def _job(unit: Unit, payload: dict[str, Any]) -> None:
    unit.result = executor.run(payload, unit.queue)


class Processor:
    """One worker thread. Its state is read by the manager (shutdown, death) and the janitor
    (which job is in hand), so it is kept in plain attributes."""

    def __init__(self, runtime: Runtime, number: int, hand_off: HandOff, ended: Ended) -> None:
        self.runtime = runtime
        self.buffer = runtime.buffer
        self.hand_off = hand_off
        self.ended = ended
        self.number = number
        #: The job being run (None between jobs).
        self.unit: Unit | None = None
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
            self.ended(self, exc)
            return
        self.ended(self, None)

    def loop(self) -> None:
        runtime = self.runtime
        buffer = self.buffer
        backoff = Backoff(f"processor {self.number}", runtime.hard_stop)
        while True:
            if runtime.quieting.is_set():
                self.leave()
                return
            try:
                unit = buffer.next()
            except REDIS_ERRORS as exc:
                if runtime.hard_stop.is_set():
                    return
                backoff.failed(exc)
                continue
            backoff.reset()
            if unit is None:
                continue
            if runtime.quieting.is_set():
                buffer.give_back(unit)
                continue
            self.unit = unit
            started = time.monotonic()
            handed_off = self.process(unit)
            self.unit = None
            if not handed_off:
                buffer.finished(unit, time.monotonic() - started)

    def process(self, unit: Unit) -> bool:
        """Run ``unit`` here, or hand an ``async def`` job to the event loop (True: the loop
        or the buffer has it now, and reports its end itself)."""
        try:
            # A dict still, with ``cancelled`` for `djqueue.current_job()` (djqueue.running).
            payload = RunningJob(loads(unit.raw))
        except MalformedJob as exc:
            self.runtime.settle.malformed(unit, exc)
            return False
        definition = registry.get(payload["class"])
        if getattr(definition, "job_is_async", False):
            if self.hand_off(unit, payload):
                self.buffer.handed_off()
            else:
                self.buffer.give_back(unit)
            return True
        run(self.runtime.steps, unit, payload)
        return False

    def leave(self) -> None:
        """Going quiet: acknowledge what finished and send unstarted jobs back to their queues,
        so other processes can run them. If Redis is away, the next heartbeat or the shutdown
        does it."""
        try:
            self.buffer.flush(push_back=True)
        except REDIS_ERRORS:
            pass
