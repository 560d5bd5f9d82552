"""The README's first command, as a newcomer runs it: `scripts/demo` in a fresh clone brings
up the example site, its worker and the Flask back office, pushes the example jobs, and leaves
no process behind on Ctrl-C.

The clone is of this checkout's committed HEAD. It reuses the running test virtualenv through
``DJQUEUE_DEMO_VENV`` (a pip install would take minutes); the demo puts the clone's own code
first on ``PYTHONPATH``, so the clone's djqueue, example project and script are what run.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

import djqueue
from djqueue.api import PeriodicSet, ScheduledSet

from .redis_server import MISSING, REDIS_SERVER
from .worker_support import wait_for

pytestmark = [pytest.mark.slow, pytest.mark.long]

ROOT = Path(__file__).resolve().parents[1]
STARTUP = 120.0
READY = "Press Ctrl-C"


class Demo:
    """The demo's process and everything it printed so far (read by a thread: the pipe must
    never fill while the test is busy elsewhere)."""

    def __init__(self, clone: Path, env: dict[str, str]) -> None:
        self.process = subprocess.Popen(
            [str(clone / "scripts" / "demo")],
            cwd=clone,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,  # its own session and group, as a terminal would give it
        )
        self.lines: list[str] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line.rstrip("\n"))

    @property
    def output(self) -> str:
        return "\n".join(self.lines)

    def wait_ready(self) -> None:
        wait_for(self._ready, STARTUP, "scripts/demo ready", lambda: self.output)

    def _ready(self) -> bool:
        if any(line.startswith(READY) for line in self.lines):
            return True
        if self.process.poll() is not None:
            self.reader.join(5)
            pytest.fail(f"scripts/demo exited ({self.process.returncode}):\n{self.output}")
        return False

    def value(self, label: str) -> str:
        """The value printed after ``label`` in the demo's summary."""
        found = re.search(rf"^\s+{re.escape(label)}\s+(\S+)", self.output, re.MULTILINE)
        assert found, f"{label!r} not printed:\n{self.output}"
        return found.group(1)

    def jid(self, job: str) -> str:
        found = re.search(rf"^\s+{job}\s+jid ([0-9a-f]{{24}})", self.output, re.MULTILINE)
        assert found, f"no jid printed for {job}:\n{self.output}"
        return found.group(1)


@pytest.fixture
def demo(tmp_path: Path) -> Iterator[Demo]:
    if REDIS_SERVER is None:
        pytest.fail(MISSING) if os.environ.get("CI") else pytest.skip(MISSING)
    if shutil.which("git") is None:
        pytest.skip("git not found")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("REDIS_URL", "DJANGO_SETTINGS_MODULE", "PYTHONPATH")
        and not key.startswith("DJQUEUE_")
    }
    env["DJQUEUE_DEMO_VENV"] = sys.prefix
    env["TMPDIR"] = str(tmp_path)
    running = Demo(clone, env)
    try:
        yield running
    finally:
        if running.process.poll() is None:
            os.killpg(running.process.pid, signal.SIGKILL)
            running.process.wait()
            for pid in session_members(running.process.pid):
                os.kill(pid, signal.SIGKILL)


def get(url: str, auth: tuple[str, str] | None = None) -> int:
    request = urllib.request.Request(url)
    if auth is not None:
        token = base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode()
        request.add_header("Authorization", f"Basic {token}")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return error.code


def order_confirmed(url: str) -> bool:
    with urllib.request.urlopen(url, timeout=10) as response:
        return bool(json.load(response)["confirmed"])


def session_members(sid: int) -> dict[int, str]:
    """Every live process of the session ``sid`` (the demo and whatever it started, in any
    process group), each with its start time, so a reused pid is not mistaken for it."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rpartition(")")[2].split()
        # After the command: state, ppid, pgrp, session, ..., starttime (the 20th).
        if int(fields[3]) == sid and fields[0] != "Z":
            found[int(entry.name)] = fields[19]
    return found


def still_alive(members: dict[int, str]) -> list[int]:
    """Those of ``members`` still running (same pid, same start time, not a zombie)."""
    alive = []
    for pid, started in members.items():
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue
        if fields[19] == started and fields[0] != "Z":
            alive.append(pid)
    return sorted(alive)


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads the process tree from /proc")
def test_demo_runs_the_example_and_stops_everything_on_ctrl_c(demo: Demo) -> None:
    demo.wait_ready()
    site = demo.value("Django site").rstrip("/")
    dashboard = demo.value("Flask dashboard")
    credentials = (demo.value("user"), demo.value("password"))
    settings = djqueue.Settings(redis_url=demo.value("Redis"))

    assert get(f"{site}/admin/login/") == 200
    assert get(f"{site}/signup/") == 200
    assert get(dashboard, auth=credentials) == 200
    assert get(dashboard) == 401
    assert get(dashboard, auth=(credentials[0], "wrong")) == 401

    def state(job: str) -> str:
        return djqueue.status(demo.jid(job), settings).state

    wait_for(lambda: state("send_welcome") == "completed", 40, "send_welcome completed")
    wait_for(lambda: order_confirmed(f"{site}/orders/1/"), 40, "the order confirmed by the worker")
    assert state("notify_warehouse") in ("retry", "dead")
    assert ScheduledSet(settings).find_job(demo.jid("remind_unconfirmed")) is not None
    assert state("remind_unconfirmed") == "scheduled"
    assert PeriodicSet(settings).find("orders.jobs.count_unconfirmed") is not None
    wait_for(lambda: state("send_receipt") == "completed", 40, "the django.tasks task ran")
    assert djqueue.status(demo.jid("send_receipt"), settings).value == "ada@example.com"
    report = djqueue.status(demo.jid("sales_report"), settings)
    assert report.state == "completed"
    assert report.value["orders"] == 1 and report.value["total_cents"] == 4200
    assert "its result: " in demo.output
    wait_for(lambda: state("notify_warehouse") == "dead", 40, "notify_warehouse dead")

    members = session_members(demo.process.pid)
    assert len(members) >= 5, members  # the script, Redis, the worker, two servers
    os.killpg(demo.process.pid, signal.SIGINT)  # what Ctrl-C in its terminal sends
    demo.process.wait(timeout=45)
    demo.reader.join(5)
    assert "stopping everything the demo started" in demo.output
    assert still_alive(members) == [], demo.output
