"""Limiters in a running worker: a refused job is parked (or put back) rather than waiting in
a thread, the jobs behind it run, and the limit holds across worker processes."""

from __future__ import annotations

import json
import signal

import pytest

import djqueue
import djqueue.api
import djqueue.signals
from djqueue.client import get_client
from tests import limited_jobs as jobs
from tests.worker_support import beats, wait_for

#: Where the jobs `jobs.hold`'s limiter refused wait for its slot.
PARKED = "djqueue:parked:job:lim.hold"


def _push(definition, *args):
    return definition.perform_later(*args)


def _jids(jobs_as_stored: list[str]) -> list[str]:
    return [json.loads(job)["jid"] for job in jobs_as_stored]


def test_a_blocked_job_is_parked_not_in_a_thread_and_runs_once_the_slot_is_back(worker, r):
    """The second job is parked at its push (its payload names its limiter); the third, pushed
    as a Ruby client would (no such field), reaches the queue and is refused once at the
    fetch, then parked behind it."""
    worker(concurrency=2, poll_interval=0.2)
    first = _push(jobs.hold, 1)
    wait_for(lambda: r.lrange("holding", 0, -1) == ["1"], what="first hold running")
    slot = "djqueue:limit:job:lim.hold"
    lease = r.zscore(slot, first)
    wait_for(lambda: r.zscore(slot, first) > lease, what="its lease renewed by the heartbeat")
    second = jobs.hold.set(retention=60).perform_later(2)
    assert _jids(r.lrange(PARKED, 0, -1)) == [second]  # at the push: never in the queue
    third = get_client().push({"class": "lim.hold", "args": [3]})
    for n in range(20):
        _push(jobs.free, n)
    # Two processor threads: one holds the slot, the other runs all the free jobs, so the
    # refused job is not keeping it.
    wait_for(lambda: r.llen("free_done") == 20, what="free jobs behind the refused one")
    parked = wait_for(lambda: r.lrange(PARKED, 0, -1)[:-1], what="refused job parked")
    assert _jids(r.lrange(PARKED, 0, -1)) == [third, second]
    assert "retry_count" not in json.loads(parked[0])  # not a failure
    assert r.zcard("schedule") == 0 and r.zcard("retry") == 0
    assert second.status().state == "pending"  # tracked: waiting for its turn, not "active"
    assert r.lrange("holding", 0, -1) == ["1"]
    assert r.hget("djqueue:limiter_hits", "job:lim.hold") == "1"  # the third, once
    r.set("release", 1)
    wait_for(lambda: r.lrange("holding", 0, -1) == ["1", "2", "3"], what="the others in turn")
    wait_for(lambda: r.zcard("djqueue:limit:job:lim.hold") == 0, what="slot given back")
    assert r.llen(PARKED) == 0 and r.smembers("djqueue:parked") == set()
    assert r.hget("djqueue:limiter_hits", "job:lim.hold") == "1"


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
    # Every parked job ran in the end, once.
    assert sorted(int(n) for n in r.lrange("capped_done", 0, -1)) == list(range(40))
    assert r.llen("djqueue:parked:job:lim.capped") == 0
    # Parked at the push and sent back one per slot given back: none reached a worker
    # without a slot for it.
    assert r.hget("djqueue:limiter_hits", "job:lim.capped") is None
    assert r.zcard("retry") == 0 and r.zcard("dead") == 0 and r.zcard("schedule") == 0


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
def test_a_killed_holders_slot_comes_back_and_the_jobs_parked_for_it_run(
    spawn, redis_url, r, monkeypatch
):
    """Three jobs enter one slot in their code: the first holds it, the others are parked. Its
    worker is killed, and its job with it (its working list deleted, so that nothing but the
    lease frees the slot: run again, the job would race the lease under load). Nobody gives
    the slot back: once the lease runs out (three beats of 0.5 s here) the janitor's sweep of
    the other worker sends the oldest parked job to its queue; the last follows when that one
    gives the slot back."""
    monkeypatch.setenv("DJQ_TEST_FAST_BEATS", "1")
    env = ("-r", "tests.limited_jobs", "-c", "3")
    holder = spawn(redis_url, *env)
    identity = holder.identity(r)
    for n in (1, 2, 3):
        _push(jobs.hold_in_code, n)
    wait_for(lambda: r.llen("holding") == 1, what="slot held")  # by whichever entered first
    wait_for(lambda: r.llen("djqueue:parked:t.kill") == 2, what="the others parked")
    first = r.lindex("holding", 0)
    oldest = json.loads(r.lindex("djqueue:parked:t.kill", -1))["args"][0]  # parked first
    holder.send(signal.SIGKILL)
    holder.wait()
    r.delete(f"djqueue:working:{identity}:default")
    assert r.zcard("djqueue:limit:t.kill") == 1  # the dead run's slot, not given back
    other = spawn(redis_url, *env)
    other.identity(r)
    wait_for(lambda: r.llen("holding") == 2, timeout=30, what="slot back", log=other.log)
    assert r.lrange("holding", 0, -1) == [first, str(oldest)]  # the oldest parked job first
    assert r.llen("djqueue:parked:t.kill") == 1
    r.set("release", 1)
    wait_for(lambda: r.llen("holding") == 3, what="the last parked job run", log=other.log)
    assert sorted(r.lrange("holding", 0, -1)) == ["1", "2", "3"]
    wait_for(lambda: r.zcard("djqueue:limit:t.kill") == 0, what="slot given back at the end")
    assert r.llen("djqueue:parked:t.kill") == 0
    assert r.zcard("retry") == 0 and r.zcard("dead") == 0


@pytest.mark.slow
def test_jobs_parked_at_the_push_run_after_the_holders_worker_is_killed(
    spawn, redis_url, r, monkeypatch
):
    """The holder of a declared slot is killed with its job (its working list deleted: only
    the lease frees the slot), while two jobs wait parked at their push. Nobody gives the
    slot back: the other worker's sweep sends the oldest back once the lease runs out (three
    beats of 0.5 s), and the last follows when that one gives the slot back."""
    monkeypatch.setenv("DJQ_TEST_FAST_BEATS", "1")
    env = ("-r", "tests.limited_jobs", "-c", "3")
    holder = spawn(redis_url, *env)
    identity = holder.identity(r)
    _push(jobs.hold, 1)
    wait_for(lambda: r.lrange("holding", 0, -1) == ["1"], what="slot held")
    second, third = _push(jobs.hold, 2), _push(jobs.hold, 3)
    assert _jids(r.lrange(PARKED, 0, -1)) == [third, second]  # parked at the push
    holder.send(signal.SIGKILL)
    holder.wait()
    r.delete(f"djqueue:working:{identity}:default")
    r.set("release", 1)
    other = spawn(redis_url, *env)
    other.identity(r)
    wait_for(lambda: r.llen("holding") == 3, timeout=30, what="both parked jobs", log=other.log)
    assert r.lrange("holding", 0, -1) == ["1", "2", "3"]  # the oldest parked job first
    assert r.hget("djqueue:limiter_hits", "job:lim.hold") is None  # none refused at the fetch
    wait_for(lambda: r.zcard("djqueue:limit:job:lim.hold") == 0, what="slot given back")
    assert r.llen(PARKED) == 0 and r.zcard("djqueue:admitted:job:lim.hold") == 0


def test_a_job_parked_for_a_paused_queue_waits_in_it_until_the_resume(worker, r):
    running = worker(concurrency=2, poll_interval=0.2)
    _push(jobs.hold, 1)
    wait_for(lambda: r.lrange("holding", 0, -1) == ["1"], what="first hold running")
    second = _push(jobs.hold, 2)
    wait_for(lambda: r.llen(PARKED) == 1, what="second parked")
    djqueue.api.Queue("default").pause()
    wait_for(lambda: "default" in running.launcher.fetcher.paused, what="pause seen")
    # A blocking wait begun before the pause was seen catches a job and sends it back, unrun:
    # two beats (of 0.3 s, waits of 0.2 s) see them over.
    beats(r, running, 2)
    r.set("release", 1)  # the slot is given back: the parked job goes to its (paused) queue
    wait_for(lambda: r.llen(PARKED) == 0, what="unparked")
    wait_for(lambda: _jids(r.lrange("queue:default", 0, -1)) == [second], what="in its queue")
    beats(r, running, 2)
    assert r.lrange("holding", 0, -1) == ["1"] and r.llen("queue:default") == 1
    djqueue.api.Queue("default").resume()
    wait_for(lambda: r.lrange("holding", 0, -1) == ["1", "2"], what="run after the resume")


def test_an_async_job_over_its_limit_is_parked_from_the_event_loop(worker, r):
    worker(concurrency=2, poll_interval=0.2)
    _push(jobs.ahold, 1)
    wait_for(lambda: r.lrange("aholding", 0, -1) == ["1"], what="first async hold running")
    second = _push(jobs.ahold, 2)
    parked = wait_for(lambda: r.lrange("djqueue:parked:job:lim.ahold", 0, -1), what="parked")
    assert [json.loads(job)["jid"] for job in parked] == [second]
    r.set("release", 1)
    wait_for(lambda: r.lrange("aholding", 0, -1) == ["1", "2"], what="second after the first")
    assert r.zcard("retry") == 0 and r.zcard("dead") == 0
