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

from djqueue.cron import CronSchedule

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
    keys = ["queue:default", *r.scan_iter("working:*")]
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
    every_two = CronSchedule("*/2 * * * * *")
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
