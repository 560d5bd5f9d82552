"""A key of the wrong type (or a counter that is not a number) never stops a subsystem of the
worker: the bad entry is skipped or repaired, logged once by name, and healthy work goes on.
An in-process worker against the session's real Redis."""

from __future__ import annotations

import logging
import time

from . import jobs_for_worker as jobs
from .worker_support import wait_for


def messages(caplog) -> list[str]:
    return [rec.getMessage() for rec in caplog.records]


def test_a_recoveries_key_of_the_wrong_type_does_not_stall_fetching(worker, r, caplog):
    """It used to fail every fetch after its first move: jobs cycled through the working
    lists, most never ran, and the log blamed the queue."""
    r.set("djqueue:recoveries", "not a hash")
    jobs.order.perform_bulk([["seen", str(i)] for i in range(300)])
    worker(concurrency=5)
    wait_for(lambda: r.llen("seen") == 300, what="every job run", timeout=60)
    assert sorted(r.lrange("seen", 0, -1), key=int) == [str(i) for i in range(300)]
    assert r.get("djqueue:recoveries") == "not a hash"
    found = [m for m in messages(caplog) if "djqueue:recoveries" in m]
    assert len(found) == 1, found
    assert "holds a string, not a hash" in found[0]
    assert not any("queue:default" in m for m in messages(caplog))


def test_a_stat_counter_that_is_not_a_number_does_not_stop_the_heartbeat(worker, r, caplog):
    """A non-integer stat:processed failed every beat: the process vanished from the UIs
    within a minute while it still ran jobs."""
    r.set("stat:processed", "lots")
    r.hset("stat:failed:" + time.strftime("%Y-%m-%d", time.gmtime()), "x", "1")
    w = worker()
    jobs.record.perform_later("out", 1)
    jobs.fail.perform_later("boom")
    wait_for(lambda: r.llen("out") == 1 and r.zcard("retry") == 1)
    # Two beats after the jobs ended: the process is still there, its stats flushed.
    for _ in range(2):
        beat = float(r.hget(w.identity, "beat"))
        wait_for(lambda b=beat: float(r.hget(w.identity, "beat")) > b, what="a later beat")
    assert w.identity in r.smembers("processes")
    assert r.get("stat:failed") == "1"
    today = time.strftime("%Y-%m-%d", time.gmtime())
    assert r.get(f"stat:processed:{today}") == "2"
    assert r.get("stat:processed") == "lots"
    found = messages(caplog)
    assert sum("stat:processed" in m and "not an integer" in m for m in found) == 1
    assert sum(f"stat:failed:{today}" in m and "holds a hash" in m for m in found) == 1
    assert not any("heartbeat failed" in m for m in found)
    w.stop()
    assert r.get("stat:processed") == "lots"  # the last flush at shutdown skips it too


def test_a_status_hash_with_a_bad_attempts_count_lets_its_job_run(worker, r, caplog):
    """A status:JID whose ``attempts`` is not an integer failed the take after the move: the
    job cycled between its queue and a working list for ever, never run, never dead."""
    jid = jobs.add.set(retention=60).perform_later(2, 3)
    r.hset(f"djqueue:status:{jid}", "attempts", "many")
    worker()
    wait_for(
        lambda: r.hget(f"djqueue:status:{jid}", "state") == "completed", what="the job completed"
    )
    assert r.hget(f"djqueue:status:{jid}", "result") == "5"
    assert r.hget(f"djqueue:status:{jid}", "attempts") == "1"
    found = [m for m in messages(caplog) if f"djqueue:status:{jid}" in m]
    assert len(found) == 1, found


def test_a_status_key_of_the_wrong_type_lets_its_job_run(worker, r, caplog):
    jid = jobs.add.set(retention=60).perform_later(2, 3)
    r.set(f"djqueue:status:{jid}", "not a hash")
    jobs.record.perform_later("out", "after")
    worker()
    wait_for(lambda: r.type(f"djqueue:status:{jid}") == "hash", what="the status replaced")
    wait_for(
        lambda: r.hget(f"djqueue:status:{jid}", "state") == "completed", what="the job completed"
    )
    assert wait_for(lambda: r.lrange("out", 0, -1)) == ["['after']"]
    found = [m for m in messages(caplog) if f"djqueue:status:{jid}" in m]
    assert len(found) == 1 and "string" in found[0], found


def test_a_retry_set_of_the_wrong_type_loses_no_failed_job(worker, r, caplog):
    """The failed job left its working list, then the write to ``retry`` failed: it was gone.
    Now it goes to the dead set, and the scheduled jobs still move."""
    r.set("retry", "not a zset")
    jid = jobs.fail.perform_later("boom")
    jobs.record.perform_in(0.5, "out", "scheduled")
    worker()
    wait_for(lambda: r.zcard("dead") == 1, what="the failed job in dead")
    assert jid in r.zrange("dead", 0, -1)[0]
    wait_for(lambda: r.lrange("out", 0, -1) == ["['scheduled']"], what="the scheduled job run")
    found = [m for m in messages(caplog) if "bad key retry" in m]
    assert len(found) == 1 and "holds a string, not a sorted set" in found[0], found


def test_a_dead_set_of_the_wrong_type_loses_no_job(worker, r, caplog):
    """Burying removed the job from its working list before the write to ``dead`` failed."""
    r.set("dead", "not a zset")
    r.lpush("queue:default", "{not json")
    jobs.record.perform_later("out", "healthy")
    w = worker()
    wait_for(lambda: r.lrange("out", 0, -1) == ["['healthy']"], what="the healthy job run")
    wait_for(lambda: any("bad key dead" in m for m in messages(caplog)), what="the log line")
    w.stop()
    # Not lost: back in its queue (or still in the working list, for the next sweep).
    assert r.lrange("queue:default", 0, -1) + r.lrange(
        f"djqueue:working:{w.identity}:default", 0, -1
    ) == ["{not json"]
    assert sum("bad key dead" in m for m in messages(caplog)) == 1


def test_a_queues_key_of_the_wrong_type_loses_no_scheduled_job(worker, r, caplog):
    """Moving a due job removed it from the schedule, then failed to list its queue."""
    jobs.record.perform_in(0.3, "out", "scheduled")
    r.set("queues", "not a set")
    worker()
    wait_for(lambda: r.lrange("out", 0, -1) == ["['scheduled']"], what="the scheduled job run")
    assert r.get("queues") == "not a set"
    found = [m for m in messages(caplog) if "bad key queues" in m]
    assert len(found) == 1 and "holds a string, not a set" in found[0], found


def test_an_unreadable_working_lists_entry_still_gives_back_its_jobs(worker, r, caplog):
    """An entry that is not a JSON list read as no queues: the dead process's entry was
    dropped and the jobs in its working lists stayed there for ever."""
    job = '{"class": "t.record", "args": ["out", "recovered"], "jid": "%s"}' % ("c" * 24)
    r.hset("djqueue:working_lists", "gone:1:abcdefabcdef", "{not json")
    r.lpush("djqueue:working:gone:1:abcdefabcdef:default", job)
    worker()
    wait_for(lambda: r.lrange("out", 0, -1) == ["['recovered']"], what="the job recovered")
    wait_for(lambda: not r.hexists("djqueue:working_lists", "gone:1:abcdefabcdef"))
    found = [m for m in messages(caplog) if "bad key djqueue:working_lists" in m]
    assert len(found) == 1 and "gone:1:abcdefabcdef" in found[0], found


def test_a_working_lists_key_of_the_wrong_type_stops_no_duty(worker, r, caplog):
    r.set("djqueue:working_lists", "not a hash")
    r.sadd("processes", "gone:1:abcdefabcdef")
    w = worker()
    jobs.record.perform_later("out", "ran")
    wait_for(lambda: r.lrange("out", 0, -1) == ["['ran']"], what="the job run")
    # The janitor's other duty still runs: the dead member is pruned.
    wait_for(lambda: r.smembers("processes") == {w.identity}, what="the dead member pruned")
    found = [m for m in messages(caplog) if "bad key djqueue:working_lists" in m]
    assert len(found) == 1 and "holds a string, not a hash" in found[0], found
    assert not any("janitor failed" in m for m in messages(caplog))


def test_a_processes_set_and_signal_list_of_the_wrong_type_stop_no_beat(worker, r, caplog):
    r.set("processes", "not a set")
    w = worker()
    r.set(f"{w.identity}-signals", "not a list")  # the process's own key: replaced
    beat = float(r.hget(w.identity, "beat"))
    wait_for(lambda: float(r.hget(w.identity, "beat")) > beat, what="a later beat")
    wait_for(lambda: r.type(f"{w.identity}-signals") == "none", what="the signal list replaced")
    jobs.record.perform_later("out", "ran")
    wait_for(lambda: r.lrange("out", 0, -1) == ["['ran']"], what="the job run")
    found = [m for m in messages(caplog) if "bad key processes" in m]
    assert len(found) == 1 and "holds a string, not a set" in found[0], found
    assert not any("heartbeat failed" in m or "janitor failed" in m for m in messages(caplog))


def test_a_bad_queue_is_logged_once_then_once_more_when_sound(worker, r, caplog):
    caplog.set_level(logging.INFO, "djqueue.store")
    r.set("queue:broken", "not a list")
    worker(queues=(("broken", 0), ("default", 0)))
    for n in range(20):
        jobs.record.perform_later("out", n)
    wait_for(lambda: r.llen("out") == 20, what="the healthy queue served")
    r.delete("queue:broken")
    jobs.record.set(queue="broken").perform_later("fixed", "ran")
    wait_for(lambda: r.lrange("fixed", 0, -1) == ["['ran']"], what="the fixed queue served")
    found = [m for m in messages(caplog) if "queue:broken" in m]
    assert len(found) == 2, found
    assert "bad key queue:broken: it holds a string, not a list" in found[0]
    assert found[1] == "key queue:broken is sound again"


def test_a_running_jobs_status_turned_bad_stops_no_beat(worker, r, caplog):
    """The heartbeat reads the cancel flags of the tracked jobs running; a status key of the
    wrong type made every beat fail while the job ran."""
    jid = jobs.hold.set(retention=60).perform_later("started", 1)
    w = worker()
    wait_for(lambda: r.lrange("started", 0, -1) == ["1"], what="the job started")
    r.delete(f"djqueue:status:{jid}")
    r.set(f"djqueue:status:{jid}", "not a hash")
    for _ in range(2):
        beat = float(r.hget(w.identity, "beat"))
        wait_for(lambda b=beat: float(r.hget(w.identity, "beat")) > b, what="a later beat")
    r.set("release", "1")
    wait_for(
        lambda: r.type(f"djqueue:status:{jid}") == "hash", what="the status replaced at the end"
    )
    wait_for(
        lambda: r.hget(f"djqueue:status:{jid}", "state") == "completed", what="the job completed"
    )
    assert not any("lost Redis" in m or "heartbeat failed" in m for m in messages(caplog))
