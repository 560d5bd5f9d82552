"""The job running in this thread, as the job sees it: its payload, and whether it was asked to
stop (`djqueue.cancel` of a running job).

Cancelling a running job sets a flag in its status hash; the worker's heartbeat reads the flags
of the tracked jobs it runs and records them here, so ``current_job().cancelled`` is a set
lookup in memory, cheap enough to test in a tight loop. The job decides when to stop; Python
cannot stop a thread from outside.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any

_lock = threading.Lock()
_cancelled: set[str] = set()


class RunningJob(dict[str, Any]):
    """The payload of a job a worker runs (a dict, as before), plus ``cancelled``."""

    @property
    def jid(self) -> str | None:
        return self.get("jid")

    @property
    def cancelled(self) -> bool:
        """True once `djqueue.cancel` asked this job to stop (seen at the worker's next beat)."""
        return self.get("jid") in _cancelled


def request_stop(jids: Iterable[str]) -> None:
    """Record that these running jobs were cancelled (the heartbeat calls this)."""
    with _lock:
        _cancelled.update(jids)


def stop_requested(jid: str | None) -> bool:
    return jid in _cancelled


def forget(jid: str | None) -> None:
    """The job has ended: drop its flag."""
    if jid in _cancelled:
        with _lock:
            _cancelled.discard(jid)
