"""Settling a failed job: the one place that decides where it goes and writes it there.

Every way a job fails ends here (and a job a limiter refused, which is put back:
`djqueue.limits`): it raised (the settle step), its processor thread died with it
or the event loop lost it (`Settle.crashed`), its process died running it too often (`died`,
from the recovery guard), or its payload is not a job (`malformed`). The decision is
`decide`, in Python, from the retry policy (`djqueue.retry_policy`): retry later, discard (a
``retry_in`` hook said so), drop (``retry: false``, or ``dead: false`` once the retries are
used up), or bury in ``dead``. The store only makes each outcome's write atomic, out of the
working list that holds the job; one condition needs Redis itself, as a cancel request can
arrive at any moment: a tracked job asked to stop ends cancelled instead of retrying, and the
retry write refuses (``STOP_ASKED``) rather than decide it.

Until a write gets through the job stays in its working list, so an outage at the wrong
moment can cause a second run but never a lost job. Once it is through, where the job went is
counted in the per-job metrics (`djqueue.worker.metrics`, in memory): retried, dead (the dead
set) or discarded (kept nowhere: a ``retry_in`` hook's discard, a drop, or cancelled while it
ran), so a class's failures add up to the three.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from typing import Any, NamedTuple, TypeVar

from .. import registry, retry_policy, signals
from ..config import Settings
from ..errors import OverLimit, ProcessDied
from ..payload import dumps, loads
from ..store import JobStore, StatusStore
from ..store.jobs import STOP_ASKED
from ..store.limits import PARKED, LimitStore
from ..store.metrics import DEAD, DISCARDED, RETRIED
from .backoff import keep_trying
from .fetch import Fetcher, Unit
from .log import logger
from .tally import Tally

T = TypeVar("T")


class Decision(NamedTuple):
    """Where a failed job goes: ``retry`` (at ``at``), ``discard``, ``drop`` (``why``) or
    ``bury``; ``exhausted`` when its retries are used up (its hook runs first)."""

    outcome: str
    at: float = 0.0
    why: str = ""
    exhausted: bool = False


def decide(
    payload: dict[str, Any], definition: Any, settings: Settings, exc: BaseException, queue: str
) -> Decision:
    """The retry policy applied to a failure; records the failure in ``payload`` (its
    ``retry_count``, error and times) unless the job is dropped outright."""
    allowed = retry_policy.max_attempts(payload, settings, definition)
    if allowed is None:
        return Decision("drop", why="retry: false")
    now = time.time()
    count = retry_policy.record_failure(payload, exc, queue, now)
    done = retry_policy.exhausted(payload, count, allowed, now, definition)
    delay = retry_policy.KILL if done else retry_policy.delay_for(definition, count, exc)
    if delay == retry_policy.DISCARD:
        return Decision("discard")
    if isinstance(delay, float):
        return Decision("retry", at=now + delay)
    if payload.get("dead") is False:
        return Decision("drop", why="retries used up; dead: false", exhausted=True)
    return Decision("bury", exhausted=True)


class Settle:
    """Writes each failed job's outcome, then marks its unit acknowledged."""

    def __init__(
        self,
        jobs: JobStore,
        fetcher: Fetcher,
        settings: Settings,
        stats: Tally,
        stop: threading.Event,
    ) -> None:
        self.jobs = jobs
        self.fetcher = fetcher
        self.settings = settings
        self.stats = stats
        self.stop = stop
        self.status = StatusStore(jobs.redis, jobs.keys)
        self.limits = LimitStore(jobs.redis, jobs.keys, settings.default_queue)

    def failed(self, unit: Unit, exc: BaseException) -> None:
        """The job raised ``exc``.

        The payload is read again from the stored JSON rather than taken from the running
        job, so changes a middleware or the job made to its dict do not leak into the retry.
        """
        if isinstance(exc, OverLimit):
            self._put_back(unit, exc)
            unit.acked = True
            return
        payload = loads(unit.raw)
        name = payload["class"]
        definition = registry.get(name)
        if "retention" in payload:
            self._note_error(payload, exc)
        decision = decide(payload, definition, self.settings, exc, unit.queue)
        if decision.outcome == "retry":
            self._retry(unit, payload, exc, decision.at)
        elif decision.outcome == "discard":
            logger.info("%s %s discarded by its retry_in hook", name, payload.get("jid"))
            self._write(lambda: self._end(unit, payload, exc, "dead"))
            self._count(payload, unit.queue, DISCARDED)
        else:
            if decision.exhausted:
                self._exhausted(payload, definition, exc)
            if decision.outcome == "drop":
                self._drop(unit, payload, exc, decision.why)
            else:
                self._bury(unit, payload)
                self._count(payload, unit.queue, DEAD)
                logger.warning(
                    "%s %s moved to the dead set after %d retries",
                    name,
                    payload.get("jid"),
                    payload.get("retry_count", 0),
                )
                self._dead(payload, exc)
        unit.acked = True

    def crashed(self, unit: Unit | None, exc: BaseException, what: str) -> None:
        """Settle the job of a processor thread that died, or one the event loop lost, as
        failed (so a job that kills its runner goes through retries to the dead set instead
        of looping), if it was running and not settled yet; ``what`` names it in the log."""
        try:
            if unit is not None and not unit.acked:
                self.failed(unit, exc)
        except Exception:  # noqa: BLE001 - the job stays in the working list; not lost
            logger.exception("could not settle %s", what)

    def died(self, unit: Unit, payload: dict[str, Any], deaths: int) -> None:
        """A poison job: its process died while running it ``deaths`` times. To the dead set
        with `djqueue.errors.ProcessDied`, whatever its retries, so it is not run again."""
        error = ProcessDied(
            f"the worker process died while running this job, {deaths} times, the last "
            f"{deaths - 1} with no other job running (os._exit, a crash in a C extension, the "
            f"OOM killer?); it was not run again"
        )
        self.stats.count(failed=True)
        retry_policy.record_failure(payload, error, unit.queue, time.time())
        self._bury(unit, payload)
        self._count(payload, unit.queue, DEAD)
        unit.acked = True
        self._dead(payload, error)

    def malformed(self, unit: Unit, error: Exception) -> None:
        """A payload that is not a job: to the dead set (`djqueue.retry_policy.malformed_entry`),
        out of the working list."""
        logger.error(
            "malformed job in queue %s moved to the dead set (%s): %r",
            unit.queue,
            error,
            unit.raw[:200],
        )
        self.stats.count(failed=True)
        now = time.time()
        member = retry_policy.malformed_entry(unit.raw, unit.queue, str(error), now)
        self._write(lambda: self.jobs.bury([(unit.raw, member)], now, unit.working, "list"))
        unit.acked = True
        if signals.job_dead.receivers:
            text = unit.raw.decode("utf-8", "replace")
            signals.job_dead.send(None, payload=None, exception=None, raw=text)

    def _put_back(self, unit: Unit, exc: OverLimit) -> None:
        """Refused by a limiter entered in the job's code: parked when a concurrency limiter
        is still full, else due again when a window or bucket opens (a concurrency limiter
        with a slot given back since: a little later, with jitter, so jobs refused together
        do not come back together); unchanged, no retry counted."""
        at = time.time() + exc.retry_after * (
            random.uniform(1.0, 2.0) if exc.kind == "concurrent" else 1.0
        )
        concurrent = (exc.name, exc.limit) if exc.kind == "concurrent" and exc.limit else None
        done = self._write(lambda: self.limits.put_back(unit.working, unit.raw, at, concurrent))
        if done == PARKED:
            logger.debug("%r refused by limiter %s; parked", unit, exc.name)
        else:
            logger.debug("%r refused by limiter %s; due again at %.3f", unit, exc.name, at)

    def _retry(self, unit: Unit, payload: dict[str, Any], exc: BaseException, at: float) -> None:
        member = dumps(payload)
        done = self._write(lambda: self.jobs.retry_later(unit.working, unit.raw, member, at))
        if done == STOP_ASKED:
            # Asked to stop (djqueue.cancel while it ran), even before its process saw the
            # request: it ends cancelled, with its error, instead of retrying.
            self._write(lambda: self._end(unit, payload, exc, "cancelled"))
            self._count(payload, unit.queue, DISCARDED)
        elif done is None:
            # The retry set's key holds another type (logged by the store): the job is
            # buried rather than lost or run again and again.
            self._write(
                lambda: self.jobs.bury([(unit.raw, member)], time.time(), unit.working, "list")
            )
            self._count(payload, unit.queue, DEAD)
        else:
            self._count(payload, unit.queue, RETRIED)
            if signals.job_retry_scheduled.receivers:
                signals.job_retry_scheduled.send(
                    payload["class"], payload=payload, exception=exc, retry_at=at
                )

    def _note_error(self, payload: dict[str, Any], exc: BaseException) -> None:
        """A tracked job's attempt into its error history, before its move. The history only
        informs: a Redis error here is logged and the job is settled all the same."""
        entry = retry_policy.history_entry(exc, time.time())
        try:
            self.status.note_error(str(payload.get("jid")), entry, retry_policy.ERROR_HISTORY)
        except Exception:  # noqa: BLE001 - the move below is what must get through
            logger.exception(
                "could not keep the error of %s %s", payload["class"], payload.get("jid")
            )

    def _exhausted(self, payload: dict[str, Any], definition: Any, exc: BaseException) -> None:
        """The job's ``retries_exhausted`` hook, when its retries are used up."""
        hook = getattr(definition, "retries_exhausted", None)
        if hook is not None:
            try:
                hook(payload, exc)
            except Exception:
                logger.exception("retries_exhausted hook of %s raised", payload["class"])

    def _drop(self, unit: Unit, payload: dict[str, Any], exc: BaseException, why: str) -> None:
        """Neither retried nor buried: acknowledged, logged, and reported with
        `djqueue.signals.job_dead` (Sidekiq's death handlers run here too)."""
        logger.warning(
            "%s %s failed and is dropped (%s)", payload["class"], payload.get("jid"), why
        )
        self._write(lambda: self._end(unit, payload, exc, "dead"))
        self._count(payload, unit.queue, DISCARDED)
        self._dead(payload, exc)

    def _bury(self, unit: Unit, payload: dict[str, Any]) -> None:
        member = dumps(payload)
        now = time.time()
        self._write(lambda: self.jobs.bury([(unit.raw, member)], now, unit.working, "list"))

    def _count(self, payload: dict[str, Any], queue: str, fate: int) -> None:
        """Count where the job went in the per-job metrics, when they are on."""
        metrics = self.stats.metrics
        if metrics is not None:
            metrics.settled(payload, queue, fate)

    @staticmethod
    def _dead(payload: dict[str, Any], exc: BaseException) -> None:
        if signals.job_dead.receivers:
            signals.job_dead.send(payload.get("class"), payload=payload, exception=exc)

    def _end(self, unit: Unit, payload: dict[str, Any], exc: BaseException, state: str) -> None:
        """Acknowledge a failed job that goes nowhere; a tracked one ends as ``state``, with
        its error, in the same step, and one of a batch counts there as failed (and dead,
        unless cancelled): a plain acknowledgement would count it a success."""
        if "retention" in payload or "bid" in payload:
            error = {
                "error_class": retry_policy.error_class(exc),
                "error_message": retry_policy.error_message(exc),
            }
            self.status.finish(unit.working, unit.raw, state, error)
        else:
            self.fetcher.fetch(0, acks=[unit])

    def _write(self, write: Callable[[], T]) -> T:
        """Run the store's transition until it gets through Redis. Each one takes the job out
        of the working list only if it is still there, so a second try after a reply lost to a
        dropped connection does nothing twice."""
        return keep_trying(write, "recording a failed job", self.stop)
