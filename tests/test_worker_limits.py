"""Limiters in a running worker: a refused job is put back rather than waiting in a thread,
the jobs behind it run, and the limit holds across worker processes."""

from __future__ import annotations

import json
import signal

import pytest

import djqueue
import djqueue.signals
from tests import limited_jobs as jobs
from tests.worker_support import wait_for


def _push(definition, *args):
    return definition.perform_later(*args)


def test_a_refused_job_waits_in_the_schedule_set_not_in_a_thread(worker, r):
    worker(concurrency=2, poll_interval=0.2)
    first = _push(jobs.hold, 1)
    wait_for(lambda: r.lrange("holding", 0, -1) == ["1"], what="first hold running")
    slot = "djqueue:limit:job:lim.hold"
    lease = r.zscore(slot, first)
    wait_for(lambda: r.zscore(slot, first) > lease, what="its lease renewed by the heartbeat")
    second = jobs.hold.set(retention=60).perform_later(2)
    for n in range(20):
        _push(jobs.free, n)
    # Two processor threads: one holds the slot, the other runs all the free jobs, so the
    # refused job is not keeping it.
    wait_for(lambda: r.llen("free_done") == 20, what="free jobs behind the refused one")
    scheduled = wait_for(lambda: r.zrange("schedule", 0, -1), what="refused job put back")
    assert [json.loads(job)["jid"] for job in scheduled] == [second]
    assert "retry_count" not in json.loads(scheduled[0])  # not a failure
    assert r.zcard("retry") == 0
    assert second.status().state == "scheduled"  # tracked: where it waits, not "active"
    assert r.lrange("holding", 0, -1) == ["1"]
    r.set("release", 1)
    wait_for(lambda: r.lrange("holding", 0, -1) == ["1", "2"], what="second hold after the first")
    wait_for(lambda: r.zcard("djqueue:limit:job:lim.hold") == 0, what="slot given back")
    assert int(r.hget("djqueue:limiter_hits", "job:lim.hold")) >= 1


def test_a_limiter_entered_in_code_puts_the_job_back_too(worker, r):
    worker(concurrency=6, poll_interval=0.2)
    for n in range(12):
        _push(jobs.in_code, n)
    failures: list[object] = []

    def failed(sender: object, **kwargs: object) -> None:
        failures.append(sender)

    djqueue.signals.job_failed.connect(failed)
    try:
        wait_for(lambda: r.llen("in_code_done") == 12, what="every in-code job")
    finally:
        djqueue.signals.job_failed.disconnect(failed)
    assert max(int(seen) for seen in r.lrange("stripe_seen", 0, -1)) <= jobs.STRIPE.limit
    assert r.zcard("retry") == 0 and r.zcard("dead") == 0
    assert int(r.hget("djqueue:limiter_hits", "t.stripe")) >= 1  # some were put back
    assert failures == []  # and none of those counted as failed
    wait_for(lambda: int(r.get("stat:processed") or 0) >= 12, what="counts flushed")
    assert int(r.get("stat:failed") or 0) == 0


@pytest.mark.slow
def test_a_concurrency_cap_holds_across_two_processes_and_the_free_jobs_finish(spawn, redis_url, r):
    for n in range(40):
        _push(jobs.capped, n)
    for n in range(200):
        _push(jobs.free, n)
    env = ("-r", "tests.limited_jobs", "-c", "10")
    workers = [spawn(redis_url, *env) for _ in range(2)]
    for process in workers:
        process.identity(r)
    wait_for(lambda: r.llen("free_done") == 200, what="free jobs", log=workers[0].log)
    wait_for(lambda: r.llen("capped_done") == 40, timeout=60, what="capped jobs")
    seen = [int(n) for n in r.lrange("seen", 0, -1)]
    assert max(seen) == 3, seen  # reached, never passed
    assert r.zcard("retry") == 0 and r.zcard("dead") == 0


@pytest.mark.slow
def test_a_window_of_ten_per_second_never_runs_eleven_in_a_second(spawn, redis_url, r):
    for n in range(35):
        _push(jobs.rated, n)
    env = ("-r", "tests.limited_jobs", "-c", "10")
    for _ in range(2):
        spawn(redis_url, *env)
    wait_for(lambda: r.llen("rated_at") == 35, timeout=60, what="rated jobs")
    granted = sorted(float(at) for at in r.lrange("rated_at", 0, -1))
    spans = [later - first for first, later in zip(granted, granted[10:], strict=False)]
    assert min(spans) >= 1.0, spans  # the 1st and 11th of any 11 are a second apart or more


@pytest.mark.slow
def test_a_killed_workers_slot_comes_back_within_its_lease(spawn, redis_url, r, monkeypatch):
    """The job holding the slot is run again by the other worker (at least once); the slot
    its dead run held stays taken until the lease runs out (three beats of 0.5 s here), then
    the job gets it."""
    monkeypatch.setenv("DJQ_TEST_FAST_BEATS", "1")
    env = ("-r", "tests.limited_jobs", "-c", "2")
    holder = spawn(redis_url, *env)
    holder.identity(r)
    _push(jobs.hold_in_code, 1)
    wait_for(lambda: r.lrange("holding", 0, -1) == ["1"], what="slot held")
    holder.send(signal.SIGKILL)
    holder.wait()
    assert r.zcard("djqueue:limit:t.kill") == 1  # the dead run's slot, not given back
    other = spawn(redis_url, *env)
    other.identity(r)
    wait_for(lambda: r.llen("holding") == 2, timeout=30, what="slot back", log=other.log)
    r.set("release", 1)
    wait_for(lambda: r.zcard("djqueue:limit:t.kill") == 0, what="slot given back at the end")


def test_an_async_job_over_its_limit_is_put_back_from_the_event_loop(worker, r):
    worker(concurrency=2, poll_interval=0.2)
    _push(jobs.ahold, 1)
    wait_for(lambda: r.lrange("aholding", 0, -1) == ["1"], what="first async hold running")
    second = _push(jobs.ahold, 2)
    scheduled = wait_for(lambda: r.zrange("schedule", 0, -1), what="refused job put back")
    assert [json.loads(job)["jid"] for job in scheduled] == [second]
    r.set("release", 1)
    wait_for(lambda: r.lrange("aholding", 0, -1) == ["1", "2"], what="second after the first")
    assert r.zcard("retry") == 0 and r.zcard("dead") == 0
