"""The limit step: a job with limiters (``@job(concurrency=...)``, ``@job(limits=[...])``)
enters them all before it runs and gives its concurrency slots back when it ends.

A refusal puts the job back in the same Redis step as the check (``lua/limit_enter.lua``):
to the schedule set a little later, unchanged, no retry counted; the step then ends the run
quietly (`djqueue.pipeline.Skip`) and the processor takes the next job instead of waiting.
The steps inside this one (log lines, signals, stats, status) never see a refused job, as it
did not run. A job without limiters costs one attribute read. (A limiter entered in the job's
code raises `djqueue.errors.OverLimit` instead, which settling puts back the same way.)
"""

from __future__ import annotations

import random
import secrets
import time
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
        # Jitter, so that jobs refused together do not come back together.
        wait = max(limiter.backoff() for limiter in declared) * random.uniform(1.0, 2.0)
        try:
            limits.enter(
                declared,
                holder,
                self.store,
                self.lease,
                (unit.working, unit.raw, time.time() + wait),
            )
        except OverLimit as refused:
            unit.acked = True  # put back by the same step
            logger.debug("%r refused by limiter %s; put back", unit, refused.name)
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
