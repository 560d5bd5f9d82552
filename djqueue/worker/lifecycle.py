"""The processor step that ends a tracked job: completed with its return value, or cancelled.

Only jobs pushed with a ``retention`` come here (a dict lookup tells; the others go straight
through). Such a job leaves its working list in the same script that writes its end and its
return value (`djqueue.store.StatusStore.finish`), at once rather than with the next batched
acknowledgement, so `djqueue.result` waiters wake as soon as it is done: one round trip more
per tracked job, none for the others. Failures are left to the retry step, outside this one,
whose writes (retry later, bury) record them in the status; a job asked to stop
(``current_job().cancelled``) ends as cancelled whether it returned or raised, and is not
retried.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

from .. import running
from ..store import StatusStore
from .backoff import keep_trying
from .fetch import Unit
from .job_retry import JOB_ERRORS
from .log import logger


class Lifecycle:
    """Processor step, innermost: ``step(unit, payload, inner)``; returns nothing."""

    def __init__(self, status: StatusStore, stop: threading.Event) -> None:
        self.status = status
        self.stop = stop

    def __call__(self, unit: Unit, payload: dict[str, Any], inner: Callable[..., Any]) -> None:
        if "retention" not in payload:
            inner(unit, payload)
            return
        jid = payload.get("jid")
        try:
            try:
                value = inner(unit, payload)
            except JOB_ERRORS as exc:
                if not running.stop_requested(jid):
                    raise
                error = {"error_class": type(exc).__name__, "error_message": str(exc)}
                self.end(unit, "cancelled", error)
                return
            if running.stop_requested(jid):
                self.end(unit, "cancelled", {})
            else:
                self.end(unit, "completed", {"result": self.to_json(payload, value)})
        finally:
            running.forget(jid)

    def end(self, unit: Unit, state: str, fields: dict[str, str]) -> None:
        keep_trying(
            lambda: self.status.finish(unit.working, unit.raw, state, fields),
            "recording a finished job",
            self.stop,
        )
        unit.acked = True

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
