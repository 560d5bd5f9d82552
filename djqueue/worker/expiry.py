"""Expiring jobs: a job taken after its deadline is not run.

A job pushed with ``expires_in`` carries ``expires_at`` (epoch seconds, written by
`djqueue.payload.normalize`: from the time it is due when scheduled, else from its push). Its
use is a job whose result is worthless once late (a cache warm-up, a digest for a day gone):
run it then, and it costs a processor for nothing, or does harm. So the step compares the
deadline with the clock when the job's turn comes and, past it, ends the run there
(`pipeline.Skip`): the job is acknowledged and gone, counted in the tally (flushed with the
beat into the expired counters), logged with its class, jid and how late it was, announced
with ``job_expired``, and, when tracked, its status ends as ``expired``. A job already started
runs to its end whatever the time: the deadline is for starting, as in Sidekiq Pro.

Only the first try is concerned in practice: a retried job is past its deadline as soon as
its backoff carries it there, and is dropped then like any late job, rather than retried for
days after its result stopped mattering.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from .. import signals
from ..pipeline import Skip
from .fetch import Unit
from .log import logger
from .tally import Tally


class Expiry:
    """Runtime step, outside the settle step and the log lines: a late job never starts, so
    nothing inside it runs. Jobs without ``expires_at`` pass at the cost of a dict lookup."""

    def __init__(self, tally: Tally) -> None:
        self.tally = tally

    def __call__(self, unit: Unit, payload: dict[str, Any]) -> Iterator[None] | None:
        deadline = payload.get("expires_at")
        if deadline is None:
            return None
        if isinstance(deadline, bool) or not isinstance(deadline, (int, float)):
            logger.warning(
                "%s %s: expires_at is %r, not epoch seconds; run as if it had no deadline",
                payload.get("class"),
                payload.get("jid"),
                deadline,
            )
            return None
        late = time.time() - deadline
        if late <= 0:
            return None
        return self.expire(unit, payload, late)

    def expire(self, unit: Unit, payload: dict[str, Any], late: float) -> Iterator[None]:
        """Count, log, signal and record the end of a late job, then skip it."""
        self.tally.count_expired()
        logger.warning(
            "%s %s expired %.3f s before it was taken (expires_at %.3f); not run",
            payload.get("class"),
            payload.get("jid"),
            late,
            payload["expires_at"],
        )
        if "retention" in payload:
            # Written with the job's acknowledgement, as a completed job's end is.
            unit.ending = ("expired", "", "", f"taken {late:.3f} s after its deadline")
        if signals.job_expired.receivers:
            try:
                signals.job_expired.send(payload.get("class"), payload=payload, late=late)
            except Exception:
                logger.exception("a job_expired receiver failed; the job is not run anyway")
        raise Skip
        yield  # a generator: the step's shape (`djqueue.pipeline`)
