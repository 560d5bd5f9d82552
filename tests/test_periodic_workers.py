"""Periodic jobs fired by real ``djqueue worker`` processes: several at once, one of them
killed with SIGKILL, and one restarted after a gap.

Every push claims its tick in ``cron_job:NAME:enqueued`` in the same Lua step, so the claims
are the ticks pushed; the jobs record their jid, so a job run twice (its worker killed before
the acknowledgement) still counts as one push.
"""

from __future__ import annotations

import calendar
import json
import math
import re
import signal
import time

import pytest

from djqueue.periodic_cron import CronExpression

from .worker_support import wait_for

pytestmark = [pytest.mark.slow, pytest.mark.long]


def claims(r, name="p.tick") -> list[float]:
    return sorted(
        score for _, score in r.zrange(f"cron_job:{name}:enqueued", 0, -1, withscores=True)
    )


def pushes(r) -> dict[str, float]:
    """jid -> enqueued_at of every p.tick job pushed: run, waiting, or held by a worker."""
    found = {}
    for line in r.lrange("ticks", 0, -1):
        jid, enqueued_at, _ran = line.split()
        found[jid] = float(enqueued_at)
    keys = ["queue:default", *r.scan_iter("djqueue:working:*")]
    for key in keys:
        for raw in r.lrange(key, 0, -1):
            job = json.loads(raw)
            if job.get("class") == "p.tick":
                found[job["jid"]] = job["enqueued_at"]
    return found


def test_three_workers_fire_every_tick_once_while_one_is_killed(spawn, redis_url, r):
    workers = [spawn(redis_url, "-r", "tests.periodic_jobs", "-c", "2") for _ in range(3)]
    for worker in workers:
        worker.identity(r)
    time.sleep(8)
    workers[1].send(signal.SIGKILL)
    workers[1].wait()
    time.sleep(12)
    for worker in (workers[0], workers[2]):
        worker.send(signal.SIGTERM)
        assert worker.wait(30) == 0
    declared, *fired = claims(r)  # the first claim is the tick current when it was declared
    assert len(fired) >= 18, fired
    assert [b - a for a, b in zip(fired, fired[1:], strict=False)] == [1.0] * (len(fired) - 1), (
        "a tick missed"
    )
    jobs = pushes(r)
    assert len(jobs) == len(fired), "a tick pushed twice, or a push without its claim"
    # Each push belongs to its own tick, in order: pushed at or soon after it.
    for tick, at in zip(fired, sorted(jobs.values()), strict=True):
        assert 0 <= at - tick < 2, (tick, at)
    for worker in (workers[0], workers[2]):
        assert "Traceback" not in worker.output()


def test_a_worker_back_after_a_gap_runs_the_latest_missed_tick_once(
    spawn, redis_url, r, monkeypatch
):
    monkeypatch.setenv("DJQ_TEST_CRON", "*/2 * * * * *")  # every two seconds
    every_two = CronExpression("*/2 * * * * *")
    first = spawn(redis_url, "-r", "tests.periodic_jobs")
    wait_for(lambda: r.llen("ticks") >= 2, what="two ticks")
    first.send(signal.SIGTERM)
    assert first.wait(30) == 0
    stopped = time.time()
    time.sleep(5.5)  # two or three ticks go by with no worker
    restarted = time.time()
    again = spawn(redis_url, "-r", "tests.periodic_jobs")
    wait_for(lambda: "pushed" in again.output(), what="the restarted worker's first push")
    time.sleep(2.5)
    again.send(signal.SIGTERM)
    assert again.wait(30) == 0

    first_push = re.search(r"periodic p\.tick: pushed (\w+) for (\S+)", again.output())
    assert first_push is not None
    jid, tick_text = first_push.groups()
    caught_up = float(calendar.timegm(time.strptime(tick_text, "%Y-%m-%dT%H:%M:%SZ")))
    gap = [tick for tick in every_two.upcoming(stopped, 10) if tick < restarted]
    assert len(gap) >= 2, "the gap should span several ticks"
    assert caught_up >= gap[-1], "the first push is for the latest tick missed"
    older = [tick for tick in every_two.upcoming(stopped, 10) if tick < caught_up]
    claimed = set(claims(r))
    assert caught_up in claimed
    assert not claimed & set(older), "an older missed tick was run too"
    jobs = pushes(r)
    assert jobs[jid] >= restarted
    # One push between the restart and the next tick: the catch-up, however slow the start.
    later = min((tick for tick in claimed if tick > caught_up), default=math.inf)
    assert sum(1 for at in jobs.values() if restarted <= at < later) == 1


def test_wrong_type_keys_stop_neither_the_worker_nor_the_healthy_jobs(spawn, redis_url, r):
    # A foreign entry whose hash is a string: skipped. This worker's own entry as a string:
    # written again at start.
    r.sadd("cron_jobs", "cron_job:broken", "cron_job:p.tick")
    r.set("cron_job:broken", "not a hash")
    r.set("cron_job:p.tick", "not a hash either")
    worker = spawn(redis_url, "-r", "tests.periodic_jobs")
    wait_for(lambda: r.llen("ticks") >= 3, what="three ticks", log=worker.log)
    assert r.get("cron_job:broken") == "not a hash"
    # Gone bad under the running worker: repaired at the poller's next read of the schedule.
    r.delete("cron_job:p.tick:jid_history")
    r.set("cron_job:p.tick:jid_history", "oops")
    wait_for(lambda: r.type("cron_job:p.tick:jid_history") == "list", log=worker.log)
    done = r.llen("ticks")
    wait_for(lambda: r.llen("ticks") >= done + 2, what="ticks after the repair", log=worker.log)
    worker.send(signal.SIGTERM)
    assert worker.wait(30) == 0
    log = worker.output()
    says = "periodic broken: not fired by djqueue: cron_job:broken is a string, not a hash"
    assert log.count(says) == 1, log
    assert "periodic p.tick: cron_job:p.tick was a string; written again as declared" in log
    assert "periodic p.tick: cron_job:p.tick:jid_history was a string" in log
    assert "lost Redis" not in log and "Traceback" not in log


def test_a_worker_declares_its_schedule_again_when_redis_is_flushed(spawn, redis_url, r):
    worker = spawn(redis_url, "-r", "tests.periodic_jobs")
    wait_for(lambda: r.llen("ticks") >= 2, what="two ticks", log=worker.log)
    r.flushall()
    wait_for(lambda: r.llen("ticks") >= 2, timeout=30, what="ticks after FLUSHALL", log=worker.log)
    assert r.smembers("cron_jobs") == {"cron_job:p.tick"}
    worker.send(signal.SIGTERM)
    assert worker.wait(30) == 0
    assert "declaring its periodic jobs again" in worker.output()


def test_a_worker_declares_its_schedule_again_when_redis_restarts_empty(spawn, tmp_path):
    from .redis_server import RedisServer

    server = RedisServer().start()  # no persistence: a restart comes back empty
    try:
        r = server.client(decode_responses=True)
        worker = spawn(server.url, "-r", "tests.periodic_jobs")
        wait_for(lambda: r.llen("ticks") >= 2, what="two ticks", log=worker.log)
        server.stop()
        wait_for(lambda: "lost Redis" in worker.output(), log=worker.log)
        server.start()
        r = server.client(decode_responses=True)
        wait_for(
            lambda: r.llen("ticks") >= 2, timeout=40, what="ticks after the restart", log=worker.log
        )
        assert r.smembers("cron_jobs") == {"cron_job:p.tick"}
        worker.send(signal.SIGTERM)
        assert worker.wait(30) == 0
        assert "reachable again" in worker.output()
    finally:
        server.close()


def test_a_worker_whose_clock_runs_ahead_fires_no_tick_early_and_none_is_missed(
    spawn, redis_url, r, monkeypatch
):
    monkeypatch.setenv("DJQ_TEST_CLOCK_SKEW", "30")  # this host's clock is 30 s fast
    fast = spawn(redis_url, "-r", "tests.skewed_clock", "-r", "tests.periodic_jobs")
    monkeypatch.delenv("DJQ_TEST_CLOCK_SKEW")
    right = spawn(redis_url, "-r", "tests.periodic_jobs")
    for worker in (fast, right):
        worker.identity(r)
    wait_for(lambda: len(claims(r)) >= 10, what="ten claimed ticks", log=fast.log)
    seconds, micros = r.time()
    declared, *fired = claims(r)
    # Ticks are decided by Redis's clock: none is claimed before its time comes.
    assert max(claims(r)) <= seconds + micros / 1_000_000, "a tick was fired early"
    for worker in (fast, right):
        worker.send(signal.SIGTERM)
        assert worker.wait(30) == 0
    fired = claims(r)[1:]
    steps = [b - a for a, b in zip(fired, fired[1:], strict=False)]
    assert steps == [1.0] * len(steps), "a tick missed"
    jobs = pushes(r)
    assert len(jobs) == len(fired), "a tick pushed twice, or a push without its claim"
    # Each job ran after its tick, by Redis's clock.
    ran = sorted(float(line.split()[2]) for line in r.lrange("ticks", 0, -1))
    for tick, at in zip(fired, ran, strict=False):
        assert at >= tick, (tick, at)
