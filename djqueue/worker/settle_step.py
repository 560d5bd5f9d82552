"""The settle step: a job that raised is handed to `djqueue.worker.settle` (retry, discard,
drop or the dead set, by the policy of `djqueue.retry_policy`) and raises no further.

Sidekiq calls this step ``JobRetry``; here the name says what it does at runtime, so it is not
mistaken for the policy it applies."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .fetch import Unit
from .settle import Settle

#: Exceptions from a job that count as the job's failure. ``SystemExit`` is included: a job
#: calling ``sys.exit()`` failed, it does not get to end the processor thread.
JOB_ERRORS = (Exception, SystemExit)


class SettleStep:
    """Runtime step (`djqueue.pipeline`): swallows the job's error once settled."""

    def __init__(self, settle: Settle) -> None:
        self.settle = settle

    def __call__(self, unit: Unit, payload: dict[str, Any]) -> Iterator[None]:
        """On the event loop the write is made from the loop's thread (one short Redis call;
        other jobs on the loop wait that long)."""
        try:
            yield
        except JOB_ERRORS as exc:
            self.settle.failed(unit, exc)
