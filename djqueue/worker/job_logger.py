"""Processor steps that report on each job: the log lines and the signals.

Both are steps in the processor's chain (``step(unit, payload, inner)``), outside the retry
decision and inside nothing else, so they see every attempt exactly once.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import Any

from .. import signals
from .fetch import Unit
from .log import bind_job, job_context, logger

_RUNTIME = os.path.dirname(os.path.abspath(__file__))


def _job_frames(tb: TracebackType | None) -> TracebackType | None:
    """The traceback from the first frame outside the runtime: the job's story, not ours."""
    while tb is not None and tb.tb_frame.f_code.co_filename.startswith(_RUNTIME):
        tb = tb.tb_next
    return tb


def _info(message: str, elapsed: float | None = None) -> None:
    """An INFO record without the caller lookup ``logger.info`` does: the two lines per job
    are the runtime's busiest log, and the caller is always this module anyway."""
    record = logger.makeRecord(logger.name, logging.INFO, __file__, 0, message, (), None)
    if elapsed is not None:
        record.elapsed = elapsed
    logger.handle(record)


class JobLogger:
    """``start``, then ``done: 0.012 sec`` or ``fail: 0.010 sec`` plus the error, per job."""

    def __call__(self, unit: Unit, payload: dict[str, Any], inner: Callable[..., Any]) -> None:
        token = bind_job(payload)
        info = logger.isEnabledFor(logging.INFO)
        try:
            if info:
                _info("start")
            started = time.perf_counter()
            try:
                inner(unit, payload)
            except BaseException as exc:
                self.failed(exc, started, info)
                raise
            if info:
                self.done(started)
        finally:
            job_context.reset(token)

    async def acall(
        self, unit: Unit, payload: dict[str, Any], inner: Callable[..., Awaitable[Any]]
    ) -> None:
        """`__call__` for an ``async def`` job."""
        token = bind_job(payload)
        info = logger.isEnabledFor(logging.INFO)
        try:
            if info:
                _info("start")
            started = time.perf_counter()
            try:
                await inner(unit, payload)
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
    """Sends ``job_started``, then ``job_succeeded`` or ``job_failed`` (djqueue.signals)."""

    def __call__(self, unit: Unit, payload: dict[str, Any], inner: Callable[..., Any]) -> None:
        started = self.started(payload)
        try:
            inner(unit, payload)
        except BaseException as exc:
            self.failed(payload, exc, started)
            raise
        self.succeeded(payload, started)

    async def acall(
        self, unit: Unit, payload: dict[str, Any], inner: Callable[..., Awaitable[Any]]
    ) -> None:
        """`__call__` for an ``async def`` job."""
        started = self.started(payload)
        try:
            await inner(unit, payload)
        except BaseException as exc:
            self.failed(payload, exc, started)
            raise
        self.succeeded(payload, started)

    @staticmethod
    def started(payload: dict[str, Any]) -> float:
        if signals.job_started.receivers:
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
