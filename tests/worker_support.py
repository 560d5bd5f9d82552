"""What the in-process worker tests share: a launcher running on a thread (the ``worker``
fixture in conftest.py), and waiting."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from djqueue.worker.launcher import Launcher


def wait_for(predicate: Callable[[], Any], timeout: float = 20.0, what: str = "") -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"{what or 'condition'} not met within {timeout} s")


class Running:
    """A launcher running its signal loop on a thread, as `run_worker` runs it."""

    def __init__(self, launcher: Launcher) -> None:
        self.launcher = launcher
        self.thread = threading.Thread(target=launcher.run, daemon=True)

    @property
    def identity(self) -> str:
        return self.launcher.identity

    def stop(self) -> None:
        self.launcher.signal("TERM")
        self.thread.join(30)
        assert not self.thread.is_alive()
