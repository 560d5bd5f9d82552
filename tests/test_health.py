"""``djqueue health`` against real worker subprocesses: the probes of docs/deployment.md's
manifest, run as a kubelet would run them (the command, its exit code and its stderr)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import redis
import yaml

from djqueue import health

from .worker_support import ROOT, WorkerProcess, wait_for

pytestmark = pytest.mark.slow

DEPLOYMENT = ROOT / "docs" / "deployment.md"


def manifest_probes() -> dict[str, list[str]]:
    """The worker container of the Kubernetes manifest in docs/deployment.md: its command and
    its probes' commands."""
    blocks = re.findall(r"```yaml\n(.*?)```", DEPLOYMENT.read_text(), re.S)
    deployment = next(yaml.safe_load(b) for b in blocks if "livenessProbe" in b)
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    return {
        "worker": container["command"],
        "liveness": container["livenessProbe"]["exec"]["command"],
        "readiness": container["readinessProbe"]["exec"]["command"],
    }


class Probe:
    """A probe's command from the manifest, run here: ``python manage.py djqueue`` becomes
    the ``djqueue`` command (the same `run_report`), the file's path a private one."""

    def __init__(self, command: list[str], url: str, health_file: Path) -> None:
        assert command[:3] == ["python", "manage.py", "djqueue"], command
        self.command = [sys.executable, "-m", "djqueue.worker.cli", *command[3:]]
        self.command = [str(health_file) if a == "/tmp/djqueue-health" else a for a in self.command]
        self.env = {**os.environ, "PYTHONPATH": str(ROOT), "DJQUEUE_REDIS_URL": url}
        self.env.pop("DJANGO_SETTINGS_MODULE", None)

    def __call__(self, *extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*self.command, *extra], env=self.env, capture_output=True, text=True, timeout=60
        )


@pytest.fixture
def probes(
    redis_url: str, tmp_path: Path, spawn: Callable[..., WorkerProcess]
) -> tuple[WorkerProcess, Probe, Probe]:
    """A worker started with the manifest's ``--health-file``, and the two probes."""
    found = manifest_probes()
    health_file = tmp_path / "health"
    flags = found["worker"][found["worker"].index("--health-file") :]
    assert flags == ["--health-file", "/tmp/djqueue-health"]
    worker = spawn(redis_url, "--health-file", str(health_file), "-t", "1")
    liveness = Probe(found["liveness"], redis_url, health_file)
    readiness = Probe(found["readiness"], redis_url, health_file)
    return worker, liveness, readiness


def test_a_beating_worker_is_live_and_ready(probes, r: redis.Redis) -> None:
    worker, liveness, readiness = probes
    identity = worker.identity(r)
    wait_for(lambda: liveness().returncode == 0, what="the liveness probe passing")
    live, ready = liveness(), readiness()
    assert (live.returncode, ready.returncode) == (0, 0), (live.stderr, ready.stderr)
    assert live.stdout.strip() == f"healthy: {identity}"
    assert ready.stdout.strip() == f"ready: {identity}"


def test_a_killed_worker_fails_both_probes(probes, r: redis.Redis) -> None:
    worker, liveness, readiness = probes
    worker.identity(r)
    wait_for(lambda: liveness().returncode == 0, what="the liveness probe passing")
    worker.kill()
    live, ready = liveness(), readiness()
    assert live.returncode == 1
    assert live.stderr.splitlines()[0].startswith(
        "unhealthy: no live worker process in the health file"
    )
    assert ready.returncode == 1
    assert ready.stderr.splitlines()[0].startswith("unhealthy: no live worker process in Redis")


def test_a_worker_that_stopped_beating_fails_the_probes(probes, r: redis.Redis) -> None:
    """A frozen process (SIGSTOP: it exists, its heartbeat thread does not run) is stuck once
    its beat is older than ``--max-age``."""
    worker, liveness, readiness = probes
    identity = worker.identity(r)
    wait_for(lambda: liveness().returncode == 0, what="the liveness probe passing")
    worker.send(signal.SIGSTOP)
    try:
        stale = wait_for(
            lambda: (found := liveness("--max-age", "1")).returncode == 1 and found,
            what="the liveness probe failing",
        )
        assert re.fullmatch(
            rf"unhealthy: process {re.escape(identity)} last beat \d+s ago \(limit 1s\)",
            stale.stderr.splitlines()[0],
        )
        assert readiness("--max-age", "1").returncode == 1
    finally:
        worker.send(signal.SIGCONT)
    wait_for(lambda: liveness("--max-age", "1").returncode == 0, what="beating again")


def test_a_job_running_too_long_makes_the_worker_stuck(probes, r: redis.Redis) -> None:
    from .jobs_for_worker import slow

    worker, liveness, _ = probes
    identity = worker.identity(r)
    slow.perform_later("slow", 60)
    wait_for(lambda: r.lrange("slow", 0, -1) == ["started"], what="the slow job started")
    assert liveness().returncode == 0  # no limit by default
    for probe in (liveness, Probe(["python", "manage.py", "djqueue", "health"], *_env(probes))):
        stuck = wait_for(
            lambda probe=probe: (f := probe("--max-job-seconds", "1")).returncode == 1 and f,
            what="the job over the limit",
        )
        assert re.fullmatch(
            rf"unhealthy: process {re.escape(identity)} has run a job for \d+s \(limit 1s\)",
            stuck.stderr.splitlines()[0],
        )


def _env(probes: tuple[WorkerProcess, Probe, Probe]) -> tuple[str, Path]:
    worker, liveness, _ = probes
    return liveness.env["DJQUEUE_REDIS_URL"], Path(liveness.command[-1])


def test_a_quiet_worker_is_live_but_not_ready(probes, r: redis.Redis) -> None:
    worker, liveness, readiness = probes
    identity = worker.identity(r)
    worker.send(signal.SIGTSTP)
    wait_for(lambda: readiness().returncode == 1, what="the readiness probe failing")
    assert readiness().stderr.splitlines()[0] == (
        f"not ready: process {identity} is quiet (takes no new job)"
    )
    assert liveness().returncode == 0


def test_no_file_and_a_bad_file(tmp_path: Path) -> None:
    assert health.check(health.Settings(), str(tmp_path / "none"))[0] == 1
    bad = tmp_path / "bad"
    bad.write_text("{")
    code, text = health.check(health.Settings(), str(bad))
    assert code == 1
    assert text.startswith(f"unhealthy: the health file {bad} cannot be read")
