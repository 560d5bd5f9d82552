"""Runtime steps that report on each job: the log lines and the signals.

Both are runtime steps (`djqueue.pipeline`), outside the retry
decision and inside nothing else, so they see every attempt exactly once.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Iterator
from types import TracebackType
from typing import Any

from .. import signals
from ..errors import OverLimit
from .fetch import Unit
from .log import bind_job, job_context, logger, record_from, sole_handler

_RUNTIME = os.path.dirname(os.path.abspath(__file__))


def _job_frames(tb: TracebackType | None) -> TracebackType | None:
    """The traceback from the first frame outside the runtime: the job's story, not ours."""
    while tb is not None and tb.tb_frame.f_code.co_filename.startswith(_RUNTIME):
        tb = tb.tb_next
    return tb


#: Per processor thread: ``template``, the INFO record its job lines are copied from.
_threads = threading.local()


def _template() -> None:
    """Give the calling thread its template record (once), unless it runs many jobs at once
    (`no_template`)."""
    if not hasattr(_threads, "template"):
        _threads.template = logger.makeRecord(logger.name, logging.INFO, __file__, 0, "", (), None)


def no_template() -> None:
    """The calling thread makes its job lines the usual way: the event loop's thread, whose
    records must each name the task (the job) that logged it."""
    _threads.template = None


def _info(message: str, elapsed: float | None = None) -> None:
    """An INFO line without the caller lookup ``logger.info`` does: the two lines per job
    are the runtime's busiest log, and the caller is always this module anyway.

    On a processor thread, when the line reaches the worker's own handler and nothing else
    (`log.sole_handler`: the worker's default setup), it goes to that handler as its fields
    (`BackgroundHandler.put_line`), whose writer builds the same text without a record: no
    `logging.LogRecord` and none of the logging module's calls per record. Otherwise the
    record is a copy of the thread's template (`log.record_from`) and goes through `logging`
    as any other, so a user's handler, filter or formatter sees what it always did."""
    template: logging.LogRecord | None = getattr(_threads, "template", None)
    if template is None:
        record = logger.makeRecord(logger.name, logging.INFO, __file__, 0, message, (), None)
        if elapsed is not None:
            record.elapsed = elapsed
    else:
        handler = sole_handler(logger)
        if handler is not None:
            handler.put_line(template, time.time(), message, elapsed)
            return
        record = record_from(template, time.time(), message, elapsed)
    if logger.disabled or logger.filters:
        logger.handle(record)
    else:
        # What `logging.Logger.handle` comes to for a logger without filters, one call less
        # for each of a job's two lines.
        logger.callHandlers(record)


class JobLogger:
    """``start``, then ``done: 0.012 sec`` or ``fail: 0.010 sec`` plus the error, per job."""

    def __call__(self, unit: Unit, payload: dict[str, Any]) -> Iterator[None]:
        token = bind_job(payload)
        info = logger.isEnabledFor(logging.INFO)
        try:
            if info:
                _template()
                _info("start")
            started = time.perf_counter()
            try:
                yield
            except OverLimit as exc:  # put back by settling (djqueue.limits), not a failure
                if info:
                    _info(f"put back: {exc}", time.perf_counter() - started)
                raise
            except BaseException as exc:
                self.failed(exc, started, info)
                raise
            if info:
                self.done(started)
        finally:
            job_context.reset(token)

    @staticmethod
    def done(started: float) -> None:
        elapsed = time.perf_counter() - started
        _info(f"done: {elapsed:.3f} sec", elapsed)

    @staticmethod
    def failed(exc: BaseException, started: float, info: bool) -> None:
        elapsed = time.perf_counter() - started
        if info:
            _info(f"fail: {elapsed:.3f} sec", elapsed)
        logger.warning(
            "%s: %s",
            type(exc).__name__,
            exc,
            exc_info=(type(exc), exc, _job_frames(exc.__traceback__)),
            extra={"elapsed": elapsed},
        )


class JobSignals:
    """Sends ``job_started``, then ``job_succeeded`` or ``job_failed`` (djqueue.signals).

    With no receiver connected to any of the three when a job starts (the usual case), the
    step stays out of that job: a receiver connected while it runs is called from the next
    job on."""

    def __call__(self, unit: Unit, payload: dict[str, Any]) -> Iterator[None] | None:
        if (
            signals.job_started.receivers
            or signals.job_succeeded.receivers
            or signals.job_failed.receivers
        ):
            return self.report(payload)
        return None

    def report(self, payload: dict[str, Any]) -> Iterator[None]:
        started = self.started(payload)
        try:
            yield
        except OverLimit:
            raise  # put back, not failed (djqueue.limits)
        except BaseException as exc:
            self.failed(payload, exc, started)
            raise
        self.succeeded(payload, started)

    @staticmethod
    def started(payload: dict[str, Any]) -> float:
        if signals.job_started.receivers or signals.job_failed.receivers:
            signals.job_started.send(payload["class"], payload=payload)
        return time.perf_counter()

    @staticmethod
    def failed(payload: dict[str, Any], exc: BaseException, started: float) -> None:
        if signals.job_failed.receivers:
            signals.job_failed.send(
                payload["class"],
                payload=payload,
                exception=exc,
                elapsed=time.perf_counter() - started,
            )

    @staticmethod
    def succeeded(payload: dict[str, Any], started: float) -> None:
        if signals.job_succeeded.receivers:
            signals.job_succeeded.send(
                payload["class"], payload=payload, elapsed=time.perf_counter() - started
            )
