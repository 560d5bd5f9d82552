"""djqueue.api reading and steering a real Sidekiq 6.4 process (Debian's ruby-sidekiq).

Sidekiq writes its heartbeat, its busy work (``IDENTITY:workers`` in 6.4.1) and its retries
itself here; djqueue.api must read them and its quiet / stop / retry must be obeyed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

import djqueue
from djqueue.api import ProcessSet, Queue, RetrySet, Stats, WorkSet

RUBY_APP = Path(__file__).parent / "ruby" / "api_app.rb"
SIDEKIQ = shutil.which("sidekiq")
MISSING = "Sidekiq not found: apt-get install ruby-sidekiq (Debian's Sidekiq 6.4.1)"

if SIDEKIQ is None:
    if os.environ.get("CI"):
        raise RuntimeError(MISSING)
    pytest.skip(MISSING, allow_module_level=True)


def wait_for(predicate, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"condition not met within {timeout} s")


@pytest.fixture
def sidekiq(redis_url, r):
    process = subprocess.Popen(
        [SIDEKIQ, "-r", str(RUBY_APP), "-q", "default", "-q", "retries", "-c", "2", "-t", "2"],
        env={**os.environ, "REDIS_URL": redis_url},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    yield process
    r.set("api:release", "1")
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def test_process_busy_work_and_stop(sidekiq, r):
    client = djqueue.Client()
    jid = client.push({"class": "ApiBusy", "args": ["one"]})
    wait_for(lambda: r.get("api:busy:one"))

    # The heartbeat runs every 5 s; wait for one that reports the busy job.
    work = wait_for(lambda: list(WorkSet()), timeout=20)
    (process,) = ProcessSet()
    assert process.pid == sidekiq.pid
    assert process.concurrency == 2
    assert process.queues == ["default", "retries"]
    assert process.version == "" and process.started_at < time.time()
    assert process.busy == 1 and Stats().busy == 1
    assert (work[0].jid, work[0].job_name, work[0].queue) == (jid, "ApiBusy", "default")
    assert work[0].process == process.identity
    assert 0 <= time.time() - work[0].run_at < 60

    process.quiet_down()
    wait_for(lambda: ProcessSet().get(process.identity).quiet, timeout=20)
    r.set("api:release", "1")
    process.stop()
    assert sidekiq.wait(30) == 0
    assert list(ProcessSet()) == []


def test_retry_written_by_sidekiq_and_retried_by_djqueue(sidekiq, r):
    item = {"class": "ApiFails", "args": [7], "retry": 5, "retry_queue": "retries"}
    jid = djqueue.Client().push(item)
    retries = RetrySet()
    entry = wait_for(lambda: retries.find_job(jid))

    assert entry.job_name == "ApiFails" and entry.args == [7]
    assert entry.error_class == "ArgumentError"
    assert entry.error_message == "failing on purpose 7"
    assert entry.retry_count == 0
    assert entry.queue == "retries"
    assert 0 <= time.time() - entry.failed_at < 60
    assert entry.at > time.time()  # the first retry is at least 15 s away

    assert entry.retry()
    # Sidekiq runs it again at once, it fails again, and the count is kept, not advanced.
    wait_for(lambda: r.llen("api:failed") == 2)
    again = wait_for(lambda: retries.find_job(jid))
    assert again.retry_count == 0
    assert again.retried_at >= entry.failed_at
    assert Queue("retries").size == 0
