"""The processor step that ends a tracked job: completed with its return value, or cancelled.

Only jobs pushed with a ``retention``, and the steps of a chain (`djqueue.batch.chain`, whose
next step may take this one's result), come here (two dict lookups tell; the others go
straight through). The end is not written here: it is attached to the job (`Unit.ending`)
and rides on the job's acknowledgement, which the next fetch of any processor carries
(take.lua removes the job from its working list and writes its end and return value in the
same step; for a chain's step, pushes the next one). So a tracked job costs no round trip of
its own, and its end is written as soon as its acknowledgement is: at once when the processor
goes for its next batch, within a heartbeat at the latest.
Failures are left to the settle step, outside this one, whose writes (retry later, bury) record
them in the status; a job asked to stop (``current_job().cancelled``) ends as cancelled whether
it returned or raised, and is not retried.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from .. import retry_policy, running
from .fetch import Unit
from .log import logger
from .settle_step import JOB_ERRORS


class Lifecycle:
    """Runtime step, innermost (`djqueue.pipeline`); the job's return value is the one the
    runtime keeps on its unit (`Unit.result`)."""

    def __call__(self, unit: Unit, payload: dict[str, Any]) -> Iterator[None] | None:
        if "retention" not in payload and "chain" not in payload:
            return None
        return self.track(unit, payload)

    def track(self, unit: Unit, payload: dict[str, Any]) -> Iterator[None]:
        jid = payload.get("jid")
        try:
            try:
                yield
            except JOB_ERRORS as exc:
                self.raised(unit, jid, exc)
                return
            self.returned(unit, payload, jid, unit.result)
        finally:
            running.forget(jid)

    @staticmethod
    def raised(unit: Unit, jid: Any, exc: BaseException) -> None:
        """A job asked to stop ends cancelled whatever it raised; any other error goes on to
        the settle step."""
        if not running.stop_requested(jid):
            raise exc
        error = (retry_policy.error_class(exc), retry_policy.error_message(exc))
        unit.ending = ("cancelled", "", *error)

    def returned(self, unit: Unit, payload: dict[str, Any], jid: Any, value: Any) -> None:
        if running.stop_requested(jid):
            unit.ending = ("cancelled", "", "", "")
        else:
            unit.ending = ("completed", self.to_json(payload, value), "", "")

    @staticmethod
    def to_json(payload: dict[str, Any], value: Any) -> str:
        """The return value as JSON; a value JSON cannot hold is kept as null, with a warning
        (the job did succeed)."""
        try:
            return json.dumps(value, separators=(",", ":"), allow_nan=False)
        except (TypeError, ValueError, RecursionError) as exc:
            logger.warning(
                "%s %s: return value not kept, it is not JSON (%s)",
                payload.get("class"),
                payload.get("jid"),
                exc,
            )
            return "null"
