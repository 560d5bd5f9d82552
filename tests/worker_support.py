"""What the worker tests share: a launcher running on a thread (the ``worker`` fixture in
conftest.py), a ``djqueue worker`` subprocess (the ``spawn`` fixture), and waiting."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import redis

from djqueue.worker.launcher import Launcher

#: Seconds to wait for what a transactional-outbox relay does (its round comes after a poll).
RELAY_WAIT = 40.0


def wait_for(
    predicate: Callable[[], Any],
    timeout: float = 20.0,
    what: str = "",
    log: Path | Callable[[], str] | None = None,
) -> Any:
    """``predicate()``'s first true value; fails after ``timeout`` s, with ``log`` in the
    message when given: a worker's output file, or a function returning what a process printed
    so far. The one way the tests wait for a condition: a predicate that must stop the wait
    early (a process that exited) raises, and that error is what the test shows."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(
        f"{what or 'condition'} not met within {timeout} s\n{_output(log)}".rstrip()
    )


def _output(log: Path | Callable[[], str] | None) -> str:
    if callable(log):
        return log()
    return log.read_text(errors="replace") if log and log.exists() else ""


def beats(r: redis.Redis, running: Running, count: int) -> None:
    """Wait until the worker has beaten ``count`` more times (its hash's ``beat`` changed)."""
    for _ in range(count):
        before = r.hget(running.identity, "beat")
        wait_for(lambda b=before: r.hget(running.identity, "beat") != b, what="a heartbeat")


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


ROOT = Path(__file__).resolve().parent.parent


class WorkerProcess:
    """One ``djqueue worker`` subprocess; its log goes to a file the test can read."""

    def __init__(self, url: str | None, log: Path, record: Path | None, *args: str) -> None:
        self.url = url
        self.log = log
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        if record is not None:
            env["DJQ_TEST_RECORD"] = str(record)
        self._log_file = open(log, "ab")  # noqa: SIM115 - closed in wait()
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "djqueue.worker.cli",
                "worker",
                "-r",
                "tests.jobs_for_worker",
                *(("--redis-url", url) if url else ()),
                *args,
            ],
            cwd=ROOT,
            env=env,
            stdout=self._log_file,
            stderr=subprocess.STDOUT,
        )

    @property
    def pid(self) -> int:
        return self.process.pid

    def identity(self, r: redis.Redis) -> str:
        """Wait for the first heartbeat; the identity carries the pid."""

        def find() -> str | None:
            for member in r.smembers("processes"):
                name = member.decode() if isinstance(member, bytes) else member
                if f":{self.pid}:" in name:
                    return name
            assert self.process.poll() is None, self.output()
            return None

        return wait_for(find, what="first heartbeat")

    def send(self, sig: int) -> None:
        self.process.send_signal(sig)

    def wait(self, timeout: float = 30) -> int:
        try:
            return self.process.wait(timeout)
        finally:
            self._log_file.close()

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.wait()

    def output(self) -> str:
        return self.log.read_text(errors="replace")
