"""``djqueue worker --processes N``: a parent forking N worker processes, replacing the ones that
die or outgrow their limits, and passing signals on; real processes, a real Redis."""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from collections.abc import Callable

import pytest

from djqueue import signals
from djqueue.api import ProcessSet
from djqueue.worker import parent_line
from djqueue.worker.launcher import RECYCLED
from djqueue.worker.swarm import Swarm

from . import jobs_for_worker as jobs
from .sidekiq_support import require_sidekiq, ruby
from .worker_support import wait_for

pytestmark = pytest.mark.slow


def identities(r) -> set[str]:
    return set(r.smembers("processes"))


def pids(r) -> set[int]:
    return {int(identity.split(":")[1]) for identity in identities(r)}


def test_three_children_each_a_process_of_their_own(spawn, redis_url, r):
    parent = spawn(redis_url, "--processes", "3", "-c", "2")
    wait_for(lambda: len(identities(r)) == 3, what="three processes")
    assert parent.pid not in pids(r)
    jobs.record.perform_bulk([["done", n] for n in range(300)])
    wait_for(lambda: r.llen("done") == 300, what="the jobs run")
    parent.send(signal.SIGTERM)
    assert parent.wait(30) == 0
    assert identities(r) == set()
    assert parent.output().count("djqueue 0.1.0 starting") == 3


def test_a_killed_child_is_replaced_and_its_job_runs(spawn, redis_url, r):
    parent = spawn(redis_url, "--processes", "2", "-c", "1")
    wait_for(lambda: len(identities(r)) == 2, what="two processes")
    jobs.slow.perform_later("slow", 3)
    wait_for(lambda: r.lrange("slow", 0, -1) == ["started"], what="the job starts")
    (holding,) = [key for key in r.scan_iter("djqueue:working:*") if r.llen(key)]
    victim = holding.split(":")[3]  # djqueue:working:HOST:PID:TOKEN:QUEUE
    before = identities(r)
    os.kill(int(victim), signal.SIGKILL)
    wait_for(lambda: len(identities(r) - before) == 1, what="a replacement", timeout=30)
    wait_for(lambda: r.lrange("slow", 0, -1)[-1:] == ["finished"], what="the job run again")
    assert r.lrange("slow", 0, -1) == ["started", "started", "finished"]
    assert "was killed by SIGKILL" in parent.output()
    parent.send(signal.SIGTERM)
    assert parent.wait(30) == 0


def test_term_lets_every_child_finish_its_job_then_the_parent_exits_0(spawn, redis_url, r):
    parent = spawn(redis_url, "--processes", "2", "-c", "1")
    wait_for(lambda: len(identities(r)) == 2, what="two processes")
    jobs.slow.perform_later("a", 2)
    jobs.slow.perform_later("b", 2)
    wait_for(lambda: r.llen("a") and r.llen("b"), what="both jobs start")
    parent.send(signal.SIGTERM)
    assert parent.wait(30) == 0
    assert r.lrange("a", 0, -1) == ["started", "finished"]
    assert r.lrange("b", 0, -1) == ["started", "finished"]
    assert "INT again" not in parent.output() and "TERM again" not in parent.output()


def pid_of(identity: str) -> int:
    return int(identity.split(":")[1])


def test_stop_on_a_child_shrinks_the_swarm_and_stop_all_ends_it(spawn, redis_url, r):
    require_sidekiq()
    parent = spawn(redis_url, "--processes", "2", "-c", "1")
    wait_for(lambda: len(identities(r)) == 2, what="two processes")
    first, second = sorted(identities(r))
    # Sidekiq's Busy page: Stop on one process.
    ruby(redis_url, "signal.rb", first, "stop")
    wait_for(lambda: identities(r) == {second}, what="the stopped one gone")
    wait_for(lambda: "stopped as it was told; not replaced" in parent.output(), what="no restart")
    jobs.record.perform_later("done", 1)
    wait_for(lambda: r.llen("done") == 1, what="the job run by the other one")
    assert identities(r) == {second}
    # djqueue's API: Stop All; the swarm ends with its last process.
    ProcessSet().stop_all()
    assert parent.wait(30) == 0
    assert "every worker process was told to stop" in parent.output()
    assert parent.output().count("djqueue 0.1.0 starting") == 2


def test_a_quiet_child_that_dies_is_not_replaced(spawn, redis_url, r):
    parent = spawn(redis_url, "--processes", "2", "-c", "1")
    wait_for(lambda: len(identities(r)) == 2, what="two processes")
    first, _second = sorted(identities(r))
    (process,) = [p for p in ProcessSet() if p.identity == first]
    process.quiet_down()
    told = f"worker {pid_of(first)} was told to quiet"
    wait_for(lambda: told in parent.output(), what="the parent hears it")
    os.kill(pid_of(first), signal.SIGKILL)
    wait_for(lambda: "while quiet; not replaced" in parent.output(), what="no replacement")
    jobs.record.perform_later("done", 1)
    wait_for(lambda: r.llen("done") == 1, what="the job run by the other one")
    parent.send(signal.SIGTERM)
    assert parent.wait(30) == 0
    assert parent.output().count("djqueue 0.1.0 starting") == 2


def kill_one_then_stop_with_a_job_waiting(parent, r) -> None:
    """In a quiet swarm: a child killed is not replaced, and a job pushed then is run by no
    one (it is still queued once the swarm has stopped)."""
    os.kill(pid_of(min(identities(r))), signal.SIGKILL)
    wait_for(lambda: "while quiet; not replaced" in parent.output(), what="no replacement")
    jobs.record.perform_later("done", 1)
    parent.send(signal.SIGTERM)
    assert parent.wait(30) == 0
    assert r.llen("done") == 0 and r.llen("queue:default") == 1


def test_after_quiet_all_no_fresh_child_takes_jobs(spawn, redis_url, r):
    require_sidekiq()
    parent = spawn(redis_url, "--processes", "2", "-c", "1")
    wait_for(lambda: len(identities(r)) == 2, what="two processes")
    ruby(redis_url, "quiet.rb")  # Sidekiq's Busy page: Quiet All
    wait_for(lambda: "every worker process is quiet" in parent.output(), what="a quiet swarm")
    kill_one_then_stop_with_a_job_waiting(parent, r)
    assert parent.output().count("djqueue 0.1.0 starting") == 2


def test_tstp_to_the_parent_quiets_the_swarm_for_good(spawn, redis_url, r):
    parent = spawn(redis_url, "--processes", "2", "-c", "1")
    wait_for(lambda: len(identities(r)) == 2, what="two processes")
    parent.send(signal.SIGTSTP)
    wait_for(lambda: parent.output().count("was told to quiet") == 2, what="both quiet")
    kill_one_then_stop_with_a_job_waiting(parent, r)
    assert "TSTP: quieting every worker process" in parent.output()


@pytest.mark.long
def test_a_child_over_max_memory_is_replaced_and_no_job_is_lost(spawn, redis_url, r):
    parent = spawn(redis_url, "--processes", "1", "--max-memory", "150", "-c", "2")
    wait_for(lambda: len(identities(r)) == 1, what="the worker")
    first = identities(r)
    jobs.hog.perform_later("hog", 200)
    # Jobs running and waiting in the worker's hands when it outgrows its limit.
    for n in range(20):
        jobs.slow.perform_later(f"s{n}", 0.5)
    wait_for(lambda: identities(r) and identities(r) != first, what="a replacement", timeout=30)
    for n in range(20):
        wait_for(lambda n=n: r.lrange(f"s{n}", -1, -1) == ["finished"], what=f"job {n}")
    text = parent.output()
    assert "recycling: " in text and "MB resident (--max-memory 150)" in text
    assert "recycled; starting its replacement" in text
    parent.send(signal.SIGTERM)
    assert parent.wait(30) == 0


@pytest.mark.long
def test_max_jobs_replaces_a_child_after_that_many_jobs(spawn, redis_url, r):
    parent = spawn(redis_url, "--max-jobs", "50", "-c", "2")
    wait_for(lambda: len(identities(r)) == 1, what="the worker")
    jobs.record.perform_bulk([["done", n] for n in range(200)])
    wait_for(lambda: r.llen("done") >= 200, what="every job", timeout=60)
    # Counted at the next heartbeat (5 s): the process has run at least 50 jobs by then.
    wait_for(lambda: "jobs run (--max-jobs 50)" in parent.output(), what="the recycling")
    wait_for(lambda: "recycled; starting its replacement" in parent.output(), what="a new one")
    parent.send(signal.SIGTERM)
    assert parent.wait(30) == 0


def run_swarm(swarm: Swarm, until: Callable[[], object]) -> int:
    """``swarm.run()`` in this thread (it installs signal handlers), with a TERM to this
    process once ``until()`` holds (or after 30 s), as an operator would send it; none once
    the swarm has ended by itself."""
    ended = threading.Event()

    def stop() -> None:
        try:
            wait_for(lambda: ended.is_set() or until(), timeout=30)
        finally:
            if not ended.is_set():
                os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=stop, daemon=True).start()
    try:
        return swarm.run()
    finally:
        ended.set()


FORK_IN_TESTS = "ignore:This process .* is multi-threaded:DeprecationWarning"


@pytest.mark.filterwarnings(FORK_IN_TESTS)
def test_a_child_that_dies_at_start_each_time_is_restarted_after_a_growing_pause(tmp_path, caplog):
    starts = tmp_path / "starts"

    def crash(_parent: int) -> int:
        with starts.open("a") as f:
            f.write(f"{time.monotonic()}\n")
        return 1

    def started() -> list[float]:
        return [float(t) for t in starts.read_text().split()] if starts.exists() else []

    caplog.set_level(logging.INFO, "djqueue")
    run_swarm(Swarm(1, crash), until=lambda: len(started()) >= 3)
    first, second, third = started()[:3]
    # Not a tight loop: 1 s before the second start, then twice that.
    assert second - first >= 1.0 and third - second >= 2.0
    assert "exited with code 1 after 0 s; starting another in 1 s" in caplog.text
    assert "starting another in 2 s" in caplog.text


@pytest.mark.filterwarnings(FORK_IN_TESTS)
def test_a_child_failing_during_shutdown_makes_the_parent_exit_1(tmp_path, caplog):
    ready = tmp_path / "ready"

    def fail_on_term(_parent: int) -> int:
        stopping = threading.Event()
        signal.signal(signal.SIGTERM, lambda *_: stopping.set())
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
        ready.write_text("ready")
        stopping.wait(30)
        return 3  # as a worker whose shutdown failed

    caplog.set_level(logging.INFO, "djqueue")
    assert run_swarm(Swarm(1, fail_on_term), until=ready.exists) == 1
    assert "exited with code 3 while stopping; exiting with 1" in caplog.text


@pytest.mark.filterwarnings(FORK_IN_TESTS)
def test_a_bug_in_the_parents_loop_is_logged_and_the_slot_filled_at_the_next_pass(tmp_path, caplog):
    starts = tmp_path / "starts"
    calls = []

    def breaks_once(_sender, **_kwargs) -> None:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("a forking hook that fails once")

    def run(_parent: int) -> int:
        stopping = threading.Event()
        signal.signal(signal.SIGTERM, lambda *_: stopping.set())
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
        with starts.open("a") as f:
            f.write("started\n")
        stopping.wait(30)
        return 0

    caplog.set_level(logging.INFO, "djqueue")
    signals.worker_forking.connect(breaks_once)
    try:
        code = run_swarm(Swarm(1, run), until=starts.exists)
    finally:
        signals.worker_forking.disconnect(breaks_once)
    assert code == 0
    assert "swarm failed; trying again" in caplog.text
    assert "a forking hook that fails once" in caplog.text
    assert starts.read_text() == "started\n"


@pytest.mark.filterwarnings(FORK_IN_TESTS)
def test_a_child_quieted_then_recycled_is_not_replaced_and_the_swarm_ends(tmp_path, caplog):
    starts = tmp_path / "starts"

    def quiet_then_recycle(_parent: int) -> int:
        with starts.open("a") as f:
            f.write("started\n")
        parent_line.tell(parent_line.QUIET)
        return RECYCLED

    caplog.set_level(logging.INFO, "djqueue")
    # No TERM needed: with its only child quiet and gone, the swarm has nothing left to run.
    assert (
        run_swarm(
            Swarm(1, quiet_then_recycle),
            until=lambda: starts.exists() and starts.read_text().count("started") > 1,
        )
        == 0
    )
    assert starts.read_text() == "started\n"
    assert "recycled while quiet; not replaced" in caplog.text
