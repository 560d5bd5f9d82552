"""Batches (`djqueue.Batch`): the write, the counts, each callback exactly once, nesting, jobs
that add jobs, cancellation, retention, and a kill -9 of one of two workers."""

from __future__ import annotations

import asyncio
import json
import signal
import time

import pytest

import djqueue
from djqueue.batch import Batch
from djqueue.store import Keys
from djqueue.store.batches import BatchStore

from .batch_jobs import (
    anote,
    callback,
    doomed,
    dropped,
    fail_once,
    fan_out,
    note,
    pid_note,
    tally,
    wait_cancel,
)
from .worker_support import wait_for


def entries(r, key: str) -> list:
    return [json.loads(entry) for entry in r.lrange(key, 0, -1)]


def settled(r, key: str, count: int = 1, pause: float = 0.5) -> list:
    """The callbacks recorded under ``key`` once ``count`` came, after a pause for any extra
    one (exactly once is the point)."""
    wait_for(lambda: r.llen(key) >= count, what=f"{count} entries in {key}")
    time.sleep(pause)
    return entries(r, key)


def test_jobs_of_the_block_are_written_with_the_batch_at_its_end(r):
    with Batch(description="import 42", on_success=callback.s("cb", 42)) as batch:
        jid = note.perform_later("k", 1)
        jids = note.perform_bulk([["k", n] for n in range(3)])
        assert r.llen("queue:default") == 0 and not r.exists(f"djqueue:batch:{batch.bid}")
    jobs = [json.loads(job) for job in r.lrange("queue:default", 0, -1)]
    assert {job["jid"] for job in jobs} == {jid, *jids}
    assert {job["bid"] for job in jobs} == {batch.bid}
    assert not any("djqueue_batch" in job for job in jobs)  # the definition is not stored
    state = batch.status()
    assert state is not None
    assert (state.total, state.pending, state.remaining, state.failures) == (4, 4, 4, 0)
    assert state.description == "import 42" and not state.complete
    assert state.callbacks["success"][0]["args"] == ["cb", 42]
    assert set(state.pending_jids) == {jid, *jids}
    assert r.zscore("djqueue:batches", batch.bid) == pytest.approx(state.created_at)


def test_a_block_that_raises_writes_nothing(r):
    with pytest.raises(RuntimeError), Batch(on_success=callback.s("cb")) as batch:
        note.perform_later("k", 1)
        raise RuntimeError("changed my mind")
    assert r.llen("queue:default") == 0 and not r.exists(f"djqueue:batch:{batch.bid}")
    assert r.zcard("djqueue:batches") == 0


def test_each_callback_once_with_the_status_after_every_job(r, worker):
    worker(concurrency=4)
    with Batch(
        description="ten",
        on_complete=callback.s("complete"),
        on_success=[callback.s("success", "a"), callback.s("success", "b")],
    ) as batch:
        note.perform_bulk([["complete:jobs", n] for n in range(10)])
    got = settled(r, "success", 2)
    assert sorted(entry[0] for entry in got) == ["a", "b"]
    status = got[0][1]
    assert status == {
        "bid": batch.bid,
        "event": "success",
        "description": "ten",
        "total": 10,
        "pending": 0,
        "failures": 0,
        "dead": 0,
    }
    (complete,) = settled(r, "complete")
    assert complete[0]["event"] == "complete" and complete[1] == 10  # every job had run
    state = batch.status()
    assert state.successful and state.complete and (state.pending, state.remaining) == (0, 0)


def test_async_jobs_are_counted_as_thread_run_ones(r, worker):
    worker(concurrency=2)
    with Batch(on_success=callback.s("success")) as batch:
        anote.perform_bulk([["async:jobs", n] for n in range(20)])
        note.perform_later("async:jobs", "sync")
    (done,) = settled(r, "success")
    assert done[0]["total"] == 21 and r.llen("async:jobs") == 21
    assert batch.status().successful


def test_a_job_failing_once_gives_complete_with_its_failure_then_success(r, worker):
    worker(concurrency=2, poll_interval=0.1)
    with Batch(on_complete=callback.s("complete"), on_success=callback.s("success")) as batch:
        flaky = fail_once.perform_later("done:jobs", 1)
    (complete,) = settled(r, "complete", pause=0)
    assert complete[0]["failures"] == 1 and complete[0]["pending"] == 1
    (success,) = settled(r, "success")
    assert success[0]["failures"] == 1 and success[0]["pending"] == 0
    assert settled(r, "complete") == [complete]
    state = batch.status()
    assert state.complete_at < state.success_at and state.failures == 1
    assert state.failed == {}  # a job that succeeded later leaves the failures' list
    assert flaky not in state.pending_jids


def test_a_dead_job_gives_death_once_and_no_success(r, worker):
    worker(concurrency=2)
    with Batch(
        on_death=callback.s("death"),
        on_complete=callback.s("complete"),
        on_success=callback.s("success"),
    ) as batch:
        note.perform_later("x", 0)
        jid = doomed.perform_later("x")
        doomed.perform_later("x")
    (death,) = settled(r, "death")
    assert death[0]["event"] == "death"
    (complete,) = settled(r, "complete")
    assert complete[0]["dead"] == 2 and complete[0]["failures"] == 2
    assert settled(r, "death") == [death] and r.llen("success") == 0
    state = batch.status()
    assert state.dead == 2 and not state.successful
    assert state.failed[jid]["error_class"] == "RuntimeError"
    assert state.failed[jid]["dead"] is True and state.failed[jid]["class"] == "b.doomed"


def test_a_dropped_job_is_a_death_not_a_success(r, worker):
    """``retry: false``: acknowledged without a retry or a dead-set entry, and counted as
    dead in its batch (a plain acknowledgement would have counted a success)."""
    worker(concurrency=1)
    with Batch(on_death=callback.s("death"), on_success=callback.s("success")) as batch:
        jid = dropped.perform_later("x")
    (death,) = settled(r, "death")
    assert death[0]["dead"] == 1 and r.llen("success") == 0 and r.zcard("dead") == 0
    assert batch.status().failed[jid]["error_message"] == "dropped"


def test_nested_batches_the_parent_succeeds_after_its_child(r, worker):
    with Batch(description="parent", on_success=callback.s("parent")) as parent:
        note.perform_later("jobs", "p")
        with Batch(description="child", on_success=callback.s("child")) as child:
            note.perform_bulk([["jobs", f"c{n}"] for n in range(3)])
        with Batch(description="empty child", on_success=callback.s("empty")):
            pass
    state = parent.status()
    # The empty child succeeded at once: one child and the parent's own job are left.
    assert (state.children, state.total, state.pending) == (1, 1, 2)
    assert child.status().parent == parent.bid
    worker(concurrency=2)
    (done,) = settled(r, "parent")
    assert done[0]["total"] == 1 and r.llen("jobs") == 4
    assert r.llen("child") == 1 and r.llen("empty") == 1
    assert parent.status().children == 0 and parent.status().successful


def test_an_empty_batch_calls_back_at_once(r, worker):
    with Batch(on_complete=callback.s("complete"), on_success=callback.s("success")) as batch:
        pass
    assert batch.status().successful
    worker()
    assert settled(r, "success")[0][0]["total"] == 0 and r.llen("complete") == 1


def test_jobs_add_jobs_to_their_own_batch(r, worker):
    worker(concurrency=2)
    with Batch(on_success=callback.s("success")) as batch:
        fan_out.perform_later("fan", 5)
    (done,) = settled(r, "success")
    assert done[0]["total"] == 6 and r.llen("fan") == 6
    assert batch.status().total == 6


def test_a_job_run_twice_counts_once(r, worker):
    """The same job taken twice (as after a crash whose acknowledgement was lost): the pending
    set's SREM decides, so the batch counts one success and calls back once."""
    with Batch(on_success=callback.s("success")) as batch:
        note.perform_later("twice", "x")
    r.rpush("queue:default", r.lindex("queue:default", 0))
    with Batch(on_success=callback.s("other")) as other:
        note.perform_later("twice", "y")
    worker(concurrency=1)
    settled(r, "other")
    assert r.llen("twice") == 3
    assert len(settled(r, "success")) == 1
    assert (batch.status().total, batch.status().pending) == (1, 0)
    assert other.status().successful


def test_cancel_takes_the_waiting_jobs_out_and_stops_the_callbacks(r):
    with Batch(on_success=callback.s("success")) as batch:
        note.perform_bulk([["k", n] for n in range(5)])
        note.set(queue="other").perform_later("k", 5)
        note.perform_in(60, "k", 6)
    note.perform_later("k", "not in the batch")
    assert batch.cancel() == 7
    assert r.llen("queue:default") == 1 and r.llen("queue:other") == 0
    assert r.zcard("schedule") == 0
    assert batch.status().cancelled and batch.cancelled
    with pytest.raises(djqueue.BatchClosed, match=f"{batch.bid} was cancelled"), batch:
        note.perform_later("k", 7)
    assert r.llen("queue:default") == 1
    assert Batch(bid="f" * 24).cancel() is None


def test_a_running_job_sees_its_batch_cancelled(r, worker):
    with Batch(on_complete=callback.s("complete")) as batch:
        wait_cancel.perform_later("seen")
    worker()
    wait_for(lambda: r.llen("seen:started"), what="the job's start")
    batch.cancel()
    wait_for(lambda: r.llen("seen"), what="the job's end")
    assert r.lrange("seen", 0, -1) == ["saw cancelled"]
    time.sleep(0.5)
    assert r.llen("complete") == 0  # a cancelled batch calls nothing back


def test_reopening_a_batch_that_succeeded_or_is_unknown_is_refused(r, worker):
    with Batch() as batch:
        pass
    with pytest.raises(djqueue.BatchClosed, match="has succeeded"), Batch(bid=batch.bid):
        note.perform_later("k", 1)
    with pytest.raises(djqueue.BatchClosed, match="unknown or expired"), Batch(bid="a" * 24):
        note.perform_later("k", 1)
    assert r.llen("queue:default") == 0
    # A "bid" of a batch this Redis does not hold (Sidekiq Pro's) is written as it is.
    assert djqueue.Client().push({"class": "X", "args": [], "bid": "b" * 24})


def test_a_batch_key_of_the_wrong_type_is_named_and_stops_no_acknowledgement(r, worker, caplog):
    with Batch(on_success=callback.s("broken")) as broken:
        note.perform_later("k", "in the broken batch")
    with Batch(on_success=callback.s("sound")):
        note.perform_later("k", "in the sound batch")
    r.delete(f"djqueue:batch:{broken.bid}:pending")
    r.set(f"djqueue:batch:{broken.bid}:pending", "not a set")
    worker()
    ((status, _ran),) = settled(r, "sound")  # the sound batch succeeded, once
    assert status["event"] == "success" and status["pending"] == 0
    wait_for(lambda: r.llen("k") == 2, what="both jobs run")
    wait_for(lambda: not any(r.llen(k) for k in r.keys("djqueue:working:*")), what="both acked")
    assert r.llen("broken") == 0
    assert f"djqueue:batch:{broken.bid}:pending: it holds a string, not a set" in caplog.text
    with pytest.raises(djqueue.BatchClosed, match="wrong type"), Batch(bid=broken.bid):
        note.perform_later("k", "refused")
    assert r.llen("queue:default") == 0


def test_a_batch_hash_of_the_wrong_type_is_a_bad_key_to_status_cancel_and_cancelled(r):
    with Batch() as batch:
        note.perform_later("k", 1)
    r.delete(f"djqueue:batch:{batch.bid}")
    r.set(f"djqueue:batch:{batch.bid}", "not a hash")
    for read in (batch.status, batch.cancel, lambda: batch.cancelled):
        with pytest.raises(djqueue.BadKey, match=f"djqueue:batch:{batch.bid} holds a string"):
            read()


def test_batch_keys_expire_and_the_janitor_trims_the_listing(r):
    djqueue.configure(redis_url=djqueue.get_settings().redis_url, batch_retention=50)
    with Batch() as old:
        note.perform_later("k", 1)
    for key in (f"djqueue:batch:{old.bid}", f"djqueue:batch:{old.bid}:pending"):
        assert 0 < r.ttl(key) <= 50
    r.zadd("djqueue:batches", {"gone": time.time() - 100})
    assert BatchStore(r, Keys()).trim(time.time(), 50) == 1
    assert r.zrange("djqueue:batches", 0, -1) == [old.bid]


@pytest.mark.slow
def test_a_thousand_jobs_with_one_of_two_workers_killed(r, redis_url, spawn):
    """Every job runs, ``on_success`` is pushed once, after the last job, although one
    worker is killed -9 halfway and its jobs run again in the other."""
    with Batch(on_success=tally.s("done")) as batch:
        pid_note.perform_bulk([["done:jobs", n] for n in range(1000)])
    flags = ("-r", "tests.batch_jobs", "-c", "5")
    first, second = spawn(redis_url, *flags), spawn(redis_url, *flags)
    first.identity(r)
    second.identity(r)
    wait_for(lambda: r.llen("done:jobs") >= 500, timeout=60, what="half the jobs")
    first.send(signal.SIGKILL)
    first.wait()
    (done,) = settled(r, "done", pause=1.0)
    assert "left by dead process" in second.output()  # its jobs were recovered, and ran
    ran = {entry[0] for entry in entries(r, "done:jobs")}
    assert ran == set(range(1000))
    assert done[1] == 1000  # when it ran, every job had
    assert done[0]["total"] == 1000 and done[0]["pending"] == 0
    state = batch.status()
    assert state.successful and state.pending == 0 and state.failures == 0
    assert not r.exists(f"djqueue:batch:{batch.bid}:pending")
    assert entries(r, "done") == [done]


def test_an_async_push_inside_the_block_joins_the_batch(r):
    async def push() -> tuple[Batch, str | None]:
        with Batch(description="async") as batch:
            jid = await note.aperform_later("k", 1)
            assert r.llen("queue:default") == 0  # written with the batch, at the block's end
        return batch, jid

    batch, jid = asyncio.run(push())
    (job,) = [json.loads(raw) for raw in r.lrange("queue:default", 0, -1)]
    assert job["jid"] == jid and job["bid"] == batch.bid
    assert batch.status().total == 1


def test_the_fake_mode_records_a_batch_s_jobs_and_writes_nothing(r):
    from djqueue import testing

    with testing.fake() as fake:
        with Batch(on_success=callback.s("cb")) as batch:
            note.perform_later("k", 1)
        with Batch(on_success=callback.s("empty")):
            pass
        (job,) = fake.jobs_for(note)
        fake.clear_all()  # the fake queues outlive the block: a later test drains them
    assert job["bid"] == batch.bid and "djqueue_batch" not in job
    assert r.dbsize() == 0


def test_the_janitor_trims_the_listing_after_its_sweep(r, worker):
    r.zadd("djqueue:batches", {"old": time.time() - 100, "new": time.time()})
    worker(batch_retention=50)
    wait_for(lambda: r.zrange("djqueue:batches", 0, -1) == ["new"], what="the trim")
