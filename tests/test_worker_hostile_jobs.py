"""Jobs that do what a worker cannot stop them doing, in real worker processes: fork and
return in the child, leak memory fast under ``--max-memory``, close the worker's stderr. The
worker stays one process that obeys TERM, is replaced before it grows far past its limit,
and keeps logging."""

from __future__ import annotations

import os
import re
import signal
from collections import Counter

import pytest

from . import jobs_for_worker as jobs
from .worker_support import wait_for

pytestmark = pytest.mark.slow


def gone(pid: int) -> bool:
    """The process has exited (a zombie waiting for its parent to reap it counts)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rpartition(")")[2].split()[0] == "Z"
    except FileNotFoundError:
        return True


def kill_left(pids: list[int]) -> None:
    """The copies a failing run leaves behind (they ignore TERM)."""
    for pid in pids:
        if not gone(pid):
            os.kill(pid, signal.SIGKILL)


def test_a_job_that_forks_leaves_no_worker_copy(spawn, redis_url, r, request):
    worker = spawn(redis_url, "-c", "2")
    worker.identity(r)
    for _ in range(3):
        jobs.fork.perform_later("forked")
    children = wait_for(lambda: r.lrange("forked", 0, -1) if r.llen("forked") == 3 else None)
    request.addfinalizer(lambda: kill_left([int(pid) for pid in children]))
    # Each child ended when the job function returned in it: none took up the worker's loop.
    wait_for(lambda: all(gone(int(pid)) for pid in children), what="the forked children exit")
    for n in range(10):
        jobs.record.perform_later("after", n)
    wait_for(lambda: r.llen("after") == 10, what="the jobs pushed after", log=worker.log)
    assert r.llen("forked") == 3  # no copy ran a fork job a second time
    worker.send(signal.SIGTERM)
    assert worker.wait(30) == 0
    assert all(gone(int(pid)) for pid in children)


def test_max_memory_is_checked_when_a_job_ends(spawn, redis_url, r):
    # A fast leak: 30 MB a job. Checked at each heartbeat only (5 s), one process ran all ten
    # and grew to 300 MB and more over its 120 MB limit before it was replaced.
    worker = spawn(redis_url, "-c", "1", "--max-memory", "120")
    wait_for(lambda: r.scard("processes") == 1, what="the worker", log=worker.log)
    jobs.hog.perform_bulk([["hog", 30] for _ in range(10)])
    wait_for(lambda: r.llen("hog") == 10, what="every job", timeout=60, log=worker.log)
    runs_per_process = Counter(r.lrange("hog", 0, -1))
    # Each process stopped after the job that took it over its limit; the next one ran on.
    assert max(runs_per_process.values()) <= 4, worker.output()
    sizes = [int(mb) for mb in re.findall(r"recycling: (\d+) MB resident", worker.output())]
    assert sizes and max(sizes) < 120 + 2 * 30, worker.output()
    worker.send(signal.SIGTERM)
    assert worker.wait(30) == 0


def test_a_job_closing_stderr_does_not_silence_the_log(spawn, redis_url, r):
    worker = spawn(redis_url, "-c", "1")
    worker.identity(r)
    jobs.close_stderr.perform_later()
    after = jobs.record.perform_later("after", 1)
    wait_for(lambda: r.llen("after") == 1, what="the job after")
    wait_for(
        lambda: f"jid={after} INFO: done" in worker.output(), what="its log line", log=worker.log
    )
    worker.send(signal.SIGTERM)
    assert worker.wait(30) == 0
    assert "bye" in worker.output()
