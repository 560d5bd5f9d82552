"""What the in-process worker tests share: a launcher running on a thread, and waiting."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import djqueue
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


@pytest.fixture(name="worker")
def worker_fixture(redis_url: str) -> Iterator[Callable[..., Running]]:
    started: list[Running] = []

    def start(**changes: Any) -> Running:
        changes.setdefault("heartbeat_interval", 0.3)
        settings = djqueue.get_settings().replace(**changes)
        running = Running(Launcher(settings, block_timeout=0.2))
        running.thread.start()
        wait_for(lambda: running.launcher.manager.processors)
        started.append(running)
        return running

    yield start
    for running in started:
        if running.thread.is_alive():
            running.stop()
