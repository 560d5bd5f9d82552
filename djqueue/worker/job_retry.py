"""The retry step: a job that raised goes to ``retry`` with Sidekiq's fields, or to ``dead``
when its retries are used up, and leaves the working list in the same atomic write.

The policy (how many tries, how long to wait, which fields) is `djqueue.retry`; this step only
applies it and writes the result. Until that write gets through the job stays in the working
list, so an outage at the wrong moment can cause a second run but never a lost job.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from .. import registry, retry, signals
from ..config import Settings
from ..errors import ProcessDied
from ..payload import dumps, loads
from ..store import JobStore, StatusStore
from .backoff import keep_trying
from .fetch import Fetcher, Unit
from .log import logger

#: Exceptions from a job that count as the job's failure. ``SystemExit`` is included: a job
#: calling ``sys.exit()`` failed, it does not get to end the processor thread.
JOB_ERRORS = (Exception, SystemExit)


T = TypeVar("T")


class JobRetry:
    """Runtime step (`djqueue.pipeline`): swallows the job's error once recorded."""

    def __init__(
        self, jobs: JobStore, fetcher: Fetcher, settings: Settings, stop: threading.Event
    ) -> None:
        self.jobs = jobs
        self.fetcher = fetcher
        self.settings = settings
        self.stop = stop
        self.status = StatusStore(jobs.redis, jobs.keys)

    def __call__(self, unit: Unit, payload: dict[str, Any]) -> Iterator[None]:
        """Settles the job's error once recorded. On the event loop the write is made from
        the loop's thread (one short Redis call; other jobs on the loop wait that long)."""
        try:
            yield
        except JOB_ERRORS as exc:
            self.failed(unit, exc)

    def failed(self, unit: Unit, exc: BaseException) -> None:
        """Record the failure of ``unit``: retry, dead or drop; then it is acknowledged.

        The payload is read again from the stored JSON rather than taken from the running
        job, so changes a middleware or the job made to its dict do not leak into the retry.
        """
        payload = loads(unit.raw)
        name = payload["class"]
        definition = registry.get(name)
        now = time.time()
        allowed = retry.max_attempts(payload, self.settings, definition)
        if allowed is None:
            self.drop(unit, payload, exc, "retry: false")
            return
        count = retry.record_failure(payload, exc, unit.queue, now)
        delay: float | str = retry.KILL
        if count < allowed:
            delay = retry.delay_for(definition, count, exc)
        if delay == retry.DISCARD:
            logger.info("%s %s discarded by its retry_in hook", name, payload.get("jid"))
            self._write(lambda: self._ack_failed(unit, payload, exc))
        elif isinstance(delay, float):
            at = now + delay
            member = dumps(payload)
            if (
                self._write(lambda: self.jobs.retry_later(unit.working, unit.raw, member, at))
                is None
            ):
                # The retry set's key holds another type (logged by the store): the job is
                # buried rather than lost or run again and again.
                self._write(lambda: self.jobs.bury([(unit.raw, member)], now, unit.working, "list"))
            elif signals.job_retry_scheduled.receivers:
                signals.job_retry_scheduled.send(name, payload=payload, exception=exc, retry_at=at)
        else:
            self.exhausted(unit, payload, definition, exc, now)
        unit.acked = True

    def drop(self, unit: Unit, payload: dict[str, Any], exc: BaseException, why: str) -> None:
        """A failed job that is neither retried nor buried: acknowledged, logged, and
        reported with `djqueue.signals.job_dead` (Sidekiq's death handlers run here too)."""
        logger.warning(
            "%s %s failed and is dropped (%s)", payload["class"], payload.get("jid"), why
        )
        self._write(lambda: self._ack_failed(unit, payload, exc))
        unit.acked = True
        if signals.job_dead.receivers:
            signals.job_dead.send(payload["class"], payload=payload, exception=exc)

    def exhausted(
        self, unit: Unit, payload: dict[str, Any], definition: Any, exc: BaseException, now: float
    ) -> None:
        """Call the job's ``retries_exhausted`` hook, then bury the job (unless ``dead: false``)."""
        hook = getattr(definition, "retries_exhausted", None)
        if hook is not None:
            try:
                hook(payload, exc)
            except Exception:
                logger.exception("retries_exhausted hook of %s raised", payload["class"])
        if payload.get("dead") is False:
            self.drop(unit, payload, exc, "retries used up; dead: false")
            return
        member = dumps(payload)
        self._write(lambda: self.jobs.bury([(unit.raw, member)], now, unit.working, "list"))
        logger.warning(
            "%s %s moved to the dead set after %d retries",
            payload["class"],
            payload.get("jid"),
            payload.get("retry_count", 0),
        )
        if signals.job_dead.receivers:
            signals.job_dead.send(payload["class"], payload=payload, exception=exc)

    def died(self, unit: Unit, payload: dict[str, Any], deaths: int) -> None:
        """A poison job: its process died while running it ``deaths`` times. To the dead set
        with `djqueue.errors.ProcessDied`, whatever its retries, so it is not run again."""
        error = ProcessDied(
            f"the worker process died while running this job, {deaths} times, the last "
            f"{deaths - 1} with no other job running (os._exit, a crash in a C extension, the "
            f"OOM killer?); it was not run again"
        )
        now = time.time()
        retry.record_failure(payload, error, unit.queue, now)
        member = dumps(payload)
        self._write(lambda: self.jobs.bury([(unit.raw, member)], now, unit.working, "list"))
        unit.acked = True
        if signals.job_dead.receivers:
            signals.job_dead.send(payload.get("class"), payload=payload, exception=error)

    def bury_malformed(self, unit: Unit, error: Exception) -> None:
        """A payload that is not a job: to the dead set (`djqueue.retry.malformed_entry`),
        out of the working list."""
        logger.error(
            "malformed job in queue %s moved to the dead set (%s): %r",
            unit.queue,
            error,
            unit.raw[:200],
        )
        now = time.time()
        member = retry.malformed_entry(unit.raw, unit.queue, str(error), now)
        self._write(lambda: self.jobs.bury([(unit.raw, member)], now, unit.working, "list"))
        unit.acked = True
        if signals.job_dead.receivers:
            text = unit.raw.decode("utf-8", "replace")
            signals.job_dead.send(None, payload=None, exception=None, raw=text)

    def _ack_failed(self, unit: Unit, payload: dict[str, Any], exc: BaseException) -> None:
        """Acknowledge a failed job that goes nowhere; a tracked one ends as dead, with its
        error, in the same step."""
        if "retention" in payload:
            error = {
                "error_class": retry.error_class(exc),
                "error_message": retry.error_message(exc),
            }
            self.status.finish(unit.working, unit.raw, "dead", error)
        else:
            self.fetcher.fetch(0, acks=[unit])

    def _write(self, write: Callable[[], T]) -> T:
        """Run the store's transition until it gets through Redis. Each one takes the job out
        of the working list only if it is still there, so a second try after a reply lost to a
        dropped connection does nothing twice."""
        return keep_trying(write, "recording a failed job", self.stop)
