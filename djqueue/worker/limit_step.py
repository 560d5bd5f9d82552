"""The limit step: a job with limiters (``@job(concurrency=...)``, ``@job(limits=[...])``)
enters them all before it runs and gives its concurrency slots back when it ends.

A refusal moves the job in the same Redis step as the check (``lua/limit_enter.lua``),
unchanged, no retry counted: parked by a concurrency limiter until one of its slots is given
back, put back in the schedule set for the moment a window or a bucket opens. The step then
ends the run quietly (`djqueue.pipeline.Skip`) and the processor takes the next job instead
of waiting.
The steps inside this one (log lines, signals, stats, status) never see a refused job, as it
did not run. A job without limiters costs one attribute read. (A limiter entered in the job's
code raises `djqueue.errors.OverLimit` instead, which settling puts back the same way.)
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from typing import Any

from .. import limits, registry
from ..errors import OverLimit
from ..pipeline import Skip
from ..store.limits import LimitStore
from .backoff import REDIS_ERRORS
from .fetch import Unit
from .log import logger


class LimitStep:
    """Runtime step (`djqueue.pipeline`), just inside the settle step."""

    def __init__(self, store: LimitStore, lease: float) -> None:
        self.store = store
        #: Seconds a concurrency slot lives without a heartbeat (`djqueue.limits.lease_seconds`).
        self.lease = lease

    def __call__(self, unit: Unit, payload: dict[str, Any]) -> Iterator[None] | None:
        declared = getattr(registry.get(payload["class"]), "job_limits", None)
        if not declared:
            return None
        return self.limited(declared, unit, payload)

    def limited(
        self, declared: tuple[limits.Limiter, ...], unit: Unit, payload: dict[str, Any]
    ) -> Iterator[None]:
        holder = str(payload.get("jid") or secrets.token_hex(12))
        try:
            limits.enter(declared, holder, self.store, self.lease, (unit.working, unit.raw))
        except OverLimit as refused:
            unit.acked = True  # parked or put back by the same step
            if refused.parked:
                logger.debug("%r refused by limiter %s; parked", unit, refused.name)
            else:
                logger.debug(
                    "%r refused by limiter %s; due again in %.3fs",
                    unit,
                    refused.name,
                    refused.retry_after,
                )
            raise Skip from None
        try:
            yield
        finally:
            try:
                limits.leave(declared, holder, self.store)
            except REDIS_ERRORS as exc:
                names = ", ".join(limiter.name for limiter in declared)
                logger.warning(
                    "could not give back the slots of %s in %s (%s); their leases expire in %.0fs",
                    payload.get("jid"),
                    names,
                    exc,
                    self.lease,
                )
