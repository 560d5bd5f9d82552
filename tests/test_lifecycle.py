"""A tracked job's lifecycle against a real Redis and a real worker: every state observed in
turn, retention, results (sync and async), cancellation wherever the job is, and a status that
survives a kill -9 of the worker running the job."""

from __future__ import annotations

import asyncio
import json
import time

import pytest

import djqueue
from djqueue import lifecycle
from djqueue.api import DeadSet
from djqueue.retry_policy import ERROR_HISTORY
from djqueue.store import Keys, StatusStore

from . import jobs_for_worker as jobs
from .worker_support import wait_for


def state(jid: str) -> str:
    return djqueue.status(jid).state


def test_scheduled_then_pending_then_active_then_completed(worker, r):
    jid = jobs.hold.set(retention=60).perform_in(0.5, "held", 1)
    st = djqueue.status(jid)
    assert st.state == "scheduled"
    assert st.scheduled_at and st.scheduled_at > time.time() - 1
    assert st.job_class == "t.hold" and st.queue == "default" and st.attempts == 0
    # A worker on another queue only moves the due job to its queue: pending.
    elsewhere = worker(queues=(("other", 0),))
    wait_for(lambda: state(jid) == "pending", what="pending")
    assert r.llen("queue:default") == 1
    assert djqueue.status(jid).enqueued_at
    elsewhere.stop()
    w = worker()
    wait_for(lambda: state(jid) == "active", what="active")
    st = djqueue.status(jid)
    assert st.process == w.identity and st.attempts == 1 and st.started_at
    assert st.finished_at is None
    r.set("release", 1)
    wait_for(lambda: state(jid) == "completed", what="completed")
    st = djqueue.status(jid)
    assert st.finished_at and st.started_at and st.finished_at >= st.started_at
    assert st.attempts == 1 and st.error_class is None
    assert djqueue.result(jid) is None  # hold returns nothing
    assert not r.llen(f"djqueue:working:{w.identity}:default")


def test_failing_then_retry_then_dead(worker, r):
    jid = jobs.flaky_later.perform_later("missing")
    running = worker()
    wait_for(lambda: state(jid) == "retry", what="retry")
    st = djqueue.status(jid)
    assert st.error_class == "KeyError" and st.error_message == "'missing'"
    assert st.retry_at and st.attempts == 1
    wait_for(lambda: state(jid) == "dead", what="dead")
    st = djqueue.status(jid)
    assert st.attempts == 2 and st.finished_at and st.error_class == "KeyError"
    # Each failed attempt, with the traceback as Python prints it.
    assert [e["class"] for e in st.errors] == ["KeyError", "KeyError"]
    assert all(e["traceback"].startswith("Traceback (most recent") for e in st.errors)
    assert all(e["traceback"].endswith("KeyError: 'missing'\n") for e in st.errors)
    assert [json.loads(m)["jid"] for m in r.zrange("dead", 0, -1)] == [jid]
    with pytest.raises(djqueue.JobFailed) as failed:
        djqueue.result(jid, timeout=1)
    assert failed.value.error_class == "KeyError"
    assert failed.value.error_message == "'missing'"
    # Retried from the dead set, it runs afresh: no end carried over from the last run (the
    # worker is stopped first, so the job waits in its queue to be looked at).
    running.stop()
    r.hset(f"djqueue:status:{jid}", "cancel", "1")  # as if a cancel had been asked of that run
    assert DeadSet().retry_all() == 1
    st = djqueue.status(jid)
    assert st.state == "pending" and st.finished_at is None
    assert not st.cancel_requested and st.error_class == "KeyError"


def test_retention_is_capped_at_ten_years():
    with pytest.raises(ValueError, match="ten years"):
        jobs.add.set(retention=10**17)


def test_untracked_jobs_write_no_status(worker, r):
    jid = jobs.record.perform_later("out", 1)
    assert djqueue.status(jid).state == "unknown"
    worker()
    wait_for(lambda: r.llen("out"))
    assert not r.keys("djqueue:status:*")
    with pytest.raises(djqueue.JobNotTracked):
        djqueue.result(jid, timeout=0.1)


def test_a_completed_job_and_its_result_expire_after_the_retention(worker, r):
    jid = jobs.add.set(retention=1).perform_later(2, 3)
    worker()
    assert djqueue.result(jid, timeout=10) == 5
    assert 0 < r.ttl(f"djqueue:status:{jid}") <= 1
    wait_for(lambda: state(jid) == "unknown", timeout=5, what="expiry")
    assert not r.exists(f"djqueue:status:{jid}", f"djqueue:status:{jid}:done")


def test_result_of_a_successful_job_sync_and_async(worker):
    first = jobs.add.perform_later(2, 3)
    assert first == str(first) and isinstance(first, str)  # still the jid string
    second = jobs.add.perform_later(40, 2)
    worker()
    assert djqueue.result(first, timeout=10) == 5
    assert first.result() == 5  # the handle, and a finished job answers at once
    assert asyncio.run(djqueue.aresult(second, timeout=10)) == 42
    st = second.status()
    assert st.state == "completed" and st.value == 42 and st.attempts == 1


def test_result_waits_in_redis_for_a_job_that_runs_later(worker):
    jid = jobs.add.perform_later(1, 1)
    with pytest.raises(djqueue.ResultTimeout):
        djqueue.result(jid, timeout=0.2)

    async def wait_many():
        return await asyncio.gather(*(djqueue.aresult(jid, timeout=10) for _ in range(3)))

    worker()
    assert asyncio.run(wait_many()) == [2, 2, 2]  # many waiters, one end


def test_result_of_a_failing_job_sync_and_async(worker):
    jid = jobs.fail.set(retry=False, retention=60).perform_later("no luck")
    worker()
    with pytest.raises(djqueue.JobFailed) as failed:
        djqueue.result(jid, timeout=10)
    assert (failed.value.error_class, failed.value.error_message) == ("ValueError", "no luck")
    assert failed.value.state == "dead"
    with pytest.raises(djqueue.JobFailed, match="ValueError: no luck"):
        asyncio.run(djqueue.aresult(jid, timeout=10))


def test_cancel_a_scheduled_and_a_pending_job(r):
    scheduled = jobs.add.perform_in(3600, 1, 2)
    pending = jobs.add.perform_later(1, 2)
    untracked = jobs.record.perform_later("out", 1)
    untracked_scheduled = jobs.record.perform_in(3600, "out", 2)
    assert djqueue.cancel(scheduled) == lifecycle.CANCELLED
    assert pending.cancel() == lifecycle.CANCELLED
    assert djqueue.cancel(untracked) == lifecycle.CANCELLED  # found by a scan of the queues
    assert djqueue.cancel(untracked_scheduled) == lifecycle.CANCELLED  # and of the schedule
    assert r.zcard("schedule") == 0 and r.llen("queue:default") == 0
    assert state(scheduled) == "cancelled" and state(pending) == "cancelled"
    with pytest.raises(djqueue.JobCancelled):
        djqueue.result(pending, timeout=1)
    assert djqueue.cancel(pending) == lifecycle.ALREADY_FINISHED
    assert djqueue.cancel("0" * 24) == lifecycle.UNKNOWN


def test_cancel_a_retrying_job(worker, r):
    jid = jobs.fail.set(retention=60).perform_later("again")
    w = worker()
    wait_for(lambda: state(jid) == "retry", what="retry")
    w.stop()
    assert djqueue.cancel(jid) == lifecycle.CANCELLED
    assert r.zcard("retry") == 0
    st = djqueue.status(jid)
    assert st.state == "cancelled" and st.error_class == "ValueError"


def test_cancel_a_running_job(worker, r):
    jid = jobs.stoppable.perform_later("log")
    worker()
    wait_for(lambda: r.lrange("log", 0, -1) == ["started"], what="start")
    assert djqueue.cancel(jid) == lifecycle.CANCELLING
    assert djqueue.status(jid).cancel_requested
    wait_for(lambda: state(jid) == "cancelled", what="cancelled")
    assert r.lrange("log", 0, -1) == ["started", "saw cancel"]
    assert r.zcard("retry") == 0 and r.zcard("dead") == 0
    assert djqueue.cancel(jid) == lifecycle.ALREADY_FINISHED


@pytest.mark.parametrize("retry", [3, 0, False], ids=["retried", "buried", "dropped"])
def test_a_running_job_cancelled_before_it_fails_is_not_retried(worker, r, retry):
    """The failure comes before the worker's heartbeat has read the request (beats are a
    minute apart here): the write that ends the run (retry later, bury, or the end of a job
    dropped by ``retry: False``) sees it itself, and the job ends cancelled."""
    jid = jobs.hold_then_fail.set(retry=retry).perform_later("log")
    worker(heartbeat_interval=60)
    wait_for(lambda: r.lrange("log", 0, -1) == ["started"], what="start")
    assert djqueue.cancel(jid) == lifecycle.CANCELLING
    r.set("release", 1)
    wait_for(lambda: state(jid) == "cancelled", what="cancelled")
    st = djqueue.status(jid)
    assert st.error_class == "ValueError" and st.error_message == "failed after the cancel"
    assert r.zcard("retry") == 0 and r.zcard("dead") == 0


def test_a_job_told_to_cancel_ends_cancelled_even_when_it_returns_first(worker, r):
    """The job returns before its worker's heartbeat has read the request (beats are a minute
    apart here): the end written with its acknowledgement sees the request itself."""
    jid = jobs.hold.set(retention=60).perform_later("log", 1)
    worker(heartbeat_interval=60)
    wait_for(lambda: r.lrange("log", 0, -1) == ["1"], what="start")
    assert djqueue.cancel(jid) == lifecycle.CANCELLING
    r.set("release", 1)
    wait_for(lambda: djqueue.status(jid).finished, what="the end")
    assert state(jid) == "cancelled"
    with pytest.raises(djqueue.JobCancelled):
        djqueue.result(jid, timeout=1)
    assert djqueue.cancel(jid) == lifecycle.ALREADY_FINISHED


def test_cancel_of_a_job_in_a_workers_hands_but_not_yet_active(worker, r):
    """Taken by an idle worker's BLMOVE, a job is 'pending' until its start is written, and
    in no queue: cancel flags it (it used to answer "unknown"), and it ends cancelled. Here
    its worker died at that moment; the next one pushes it back and runs it."""
    jid = jobs.add.perform_later(1, 2)
    dead = "gone-host:4242:0123456789ab"
    r.hset("working_lists", dead, '["default"]')
    r.lmove("queue:default", f"working:{dead}:default", "RIGHT", "LEFT")  # what BLMOVE does
    assert state(jid) == "pending"
    assert djqueue.cancel(jid) == lifecycle.CANCELLING
    worker()
    wait_for(lambda: djqueue.status(jid).finished, what="the end")
    assert state(jid) == "cancelled"
    assert djqueue.cancel(jid) == lifecycle.ALREADY_FINISHED


def test_racing_cancels_answer_what_the_job_ends_as(worker, r):
    """Cancels racing a worker that drains short tracked jobs: whatever each one answered,
    the job's end agrees with it."""
    worker(heartbeat_interval=60, concurrency=4)
    jids: list[str] = []
    answers = {}
    for n in range(400):  # each job is cancelled right after the next one is pushed
        jids.append(jobs.add.perform_later(n, 1))
        if n:
            answers[jids[-2]] = djqueue.cancel(jids[-2])
    answers[jids[-1]] = djqueue.cancel(jids[-1])
    wait_for(lambda: all(djqueue.status(j).finished for j in jids), what="every end")
    expected = {
        lifecycle.CANCELLED: "cancelled",
        lifecycle.CANCELLING: "cancelled",
        lifecycle.ALREADY_FINISHED: "completed",
    }
    wrong = {j: (a, state(j)) for j, a in answers.items() if expected.get(a) != state(j)}
    assert not wrong


@pytest.mark.slow
def test_status_survives_a_kill_9_of_the_worker(spawn, redis_url, r):
    jid = jobs.hold.set(retention=60).perform_later("held", 1)
    first = spawn(redis_url)
    identity = first.identity(r)
    wait_for(lambda: state(jid) == "active", what="active")
    assert djqueue.status(jid).process == identity
    first.kill()
    assert state(jid) == "active"  # nobody knows yet
    # A worker starting on this host pushes the dead one's jobs back: pending again. It
    # serves another queue, so the job waits there to be seen.
    second = spawn(redis_url, "-q", "other")
    wait_for(lambda: state(jid) == "pending", what="pending after the recovery")
    assert r.llen("queue:default") == 1
    r.set("release", 1)
    third = spawn(redis_url)
    wait_for(lambda: state(jid) == "completed", what="completed")
    st = djqueue.status(jid)
    assert st.attempts == 2 and st.process == third.identity(r)
    second.kill()


def test_djqueue_status_on_the_command_line(worker, redis_url):
    import subprocess
    import sys

    from .worker_support import ROOT

    def cli(jid: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "djqueue.worker.cli", "status", jid, "--redis-url", redis_url],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )

    jid = jobs.add.perform_later(20, 22)
    w = worker()
    djqueue.result(jid, timeout=10)
    shown = cli(jid)
    assert shown.returncode == 0
    rows = dict(line.split(None, 1) for line in shown.stdout.splitlines())
    assert rows["jid"] == jid and rows["state"] == "completed" and rows["job"] == "t.add"
    assert rows["result"] == "42" and rows["attempts"] == "1" and rows["process"] == w.identity
    assert rows["finished"].endswith(" UTC")
    missing = cli("f" * 24)
    assert missing.returncode == 1 and "unknown" in missing.stdout


def test_a_bad_status_key_is_named_by_status(r):
    """A status key that is not a hash raises `BadKey` naming it; an ``attempts`` that is not
    a number reads as 0 and is named among the status's problems."""
    bad, odd = "a" * 24, "b" * 24
    r.set(Keys().status(bad), "x")
    with pytest.raises(djqueue.BadKey) as raised:
        lifecycle.status(bad)
    assert str(raised.value) == (
        f"{Keys().status(bad)} holds a string, not a hash: delete or fix the key"
    )
    r.hset(Keys().status(odd), mapping={"state": "pending", "attempts": "many"})
    found = lifecycle.status(odd)
    assert (found.state, found.attempts) == ("pending", 0)
    assert found.problems == (
        f'{Keys().status(odd)} has attempts "many", not an integer: delete or fix the key',
    )


def test_the_error_history_keeps_the_last_attempts_of_tracked_jobs_only(r):
    store = StatusStore(r, Keys())
    r.hset(Keys().status("a" * 24), "state", "active")
    for n in range(ERROR_HISTORY + 2):
        assert store.note_error("a" * 24, {"class": "E", "traceback": f"t{n}"}, ERROR_HISTORY)
    found = djqueue.status("a" * 24).errors
    assert [e["traceback"] for e in found] == [f"t{n}" for n in range(2, ERROR_HISTORY + 2)]
    assert not store.note_error("b" * 24, {"class": "E"}, ERROR_HISTORY)  # untracked
    assert not r.exists(Keys().status("b" * 24))
    r.hset(Keys().status("a" * 24), "errors", "not json")  # written by hand: starts afresh
    assert store.note_error("a" * 24, {"class": "F"}, ERROR_HISTORY)
    assert [e["class"] for e in djqueue.status("a" * 24).errors] == ["F"]
