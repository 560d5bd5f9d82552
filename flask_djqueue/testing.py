"""``DJQUEUE_TESTING``: an app's own test mode, ``"fake"`` (record pushes) or ``"inline"``
(run them at push time), as `djqueue.testing` does for the whole process.

Per app rather than per process, so a test's app cannot leave a mode behind for the next
test's app. A client middleware placed after the on-commit hold, so a push in an uncommitted
transaction is recorded or run at the commit, as in production, and dropped on rollback. The
recorded jobs are djqueue's (``send_welcome.jobs``, ``djqueue.testing.drain_all()``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from djqueue import testing

from .state import current_state


class TestingMode:
    __test__ = False  # not a pytest test class, despite its name

    def __call__(
        self, job: str, payload: dict[str, Any], queue: str, call_next: Callable[[], Any]
    ) -> Any:
        state = current_state()
        if state is None or state.options.testing is None:
            return call_next()
        testing.capture([payload], state.options.testing)
        return payload
