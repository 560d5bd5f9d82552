"""Duties: periodic work a framework gives every worker process, on a thread of their own.

The transactional outbox is the first: a row left in a database table (Redis was down at
commit, the web process died) must reach Redis even though nobody will push it again. The
runtime knows nothing of databases, so the framework adds a duty (``duties.add("outbox",
relay)``) and every worker started afterwards calls it every ``interval`` seconds, on a
``djqueue-duties`` thread: a slow database must not delay the heartbeat, whose silence makes
peers take this process's jobs back. The names of the duties go into the process's ``info``
(``"duties": ["outbox"]``), so a check or a UI can tell whether anything relays.

A duty returns True when it has more to do at once (a full batch), and is then called again
without the pause. An exception is logged once per run of failures and tried again next round.
"""

from __future__ import annotations

from collections.abc import Callable

from .component import Component
from .log import logger

#: A duty: called with no arguments; True means "call me again at once".
Duty = Callable[[], bool]

_duties: dict[str, Duty] = {}


def add(name: str, duty: Duty) -> None:
    """Run ``duty`` in every worker started from now on (a second ``add`` of a name replaces
    the first)."""
    _duties[name] = duty


def remove(name: str) -> None:
    _duties.pop(name, None)


def names() -> list[str]:
    """The duties a worker started now would run, sorted."""
    return sorted(_duties)


class DutyThread(Component):
    """Calls each duty every ``interval`` seconds until stopped."""

    name = "djqueue-duties"
    what = "duties"

    def __init__(self, interval: float) -> None:
        self.interval = interval
        self.duties = dict(_duties)
        self.failing: set[str] = set()
        super().__init__()

    def start(self) -> None:
        if self.duties:
            super().start()

    def tick(self) -> float:
        busy = False
        for name, duty in self.duties.items():
            busy = self.call(name, duty) or busy
        return 0.0 if busy else self.interval

    def call(self, name: str, duty: Duty) -> bool:
        try:
            more = bool(duty())
        except Exception:
            if name not in self.failing:
                self.failing.add(name)
                logger.exception("duty %s failed; trying again every %.0f s", name, self.interval)
            return False
        if name in self.failing:
            self.failing.discard(name)
            logger.info("duty %s works again", name)
        return more
