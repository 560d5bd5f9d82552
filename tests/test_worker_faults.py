"""Real ``djqueue worker`` processes meeting faults and hostile input: Redis out of reach at
start-up, impatient operators, threads a job leaves behind, forged log lines, secrets."""

from __future__ import annotations

import json
import signal
import stat

import pytest
import redis

import djqueue

from . import jobs_for_worker as jobs
from .redis_server import RedisServer, free_port
from .worker_support import wait_for

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_worker_started_with_redis_down_says_so_and_obeys_the_stop_signal(spawn, sig):
    url = f"redis://127.0.0.1:{free_port()}/0?password=hunter2"
    worker = spawn(url)
    wait_for(lambda: "cannot reach Redis" in worker.output(), what="the waiting message")
    worker.send(sig)
    assert worker.wait(10) == 0
    text = worker.output()
    assert "waiting (Ctrl-C to quit)" in text and "password=***" in text
    assert "lost Redis" not in text  # it never had it
    assert "hunter2" not in text


def test_a_second_ctrl_c_stops_at_once_and_the_job_goes_back(spawn, redis_url, r):
    jid = jobs.slow.perform_later("slow", 60)
    worker = spawn(redis_url, "-t", "25")
    wait_for(lambda: r.lrange("slow", 0, -1))
    worker.send(signal.SIGINT)
    wait_for(lambda: "shutting down" in worker.output())
    worker.send(signal.SIGINT)
    assert worker.wait(15) == 0  # not the 25 s of the timeout
    assert "INT again: stopping now" in worker.output()
    # Back in its queue, or (should an idle processor's wait have caught it) in a working list
    # whose index entry stayed, for the next sweep: never lost.
    found = [k for k in r.keys("*") if r.type(k) == "list" and jid in "".join(r.lrange(k, 0, -1))]
    assert len(found) == 1
    if found != ["queue:default"]:
        identity = found[0].split(":", 2)[2].rsplit(":", 1)[0]  # djqueue:working:ID:QUEUE
        assert r.hexists("djqueue:working_lists", identity)


def test_a_thread_a_job_leaves_behind_does_not_keep_the_process_alive(spawn, redis_url, r):
    jobs.linger.perform_later("lingered")
    worker = spawn(redis_url)
    wait_for(lambda: r.lrange("lingered", 0, -1))
    worker.send(signal.SIGTERM)
    assert worker.wait(15) == 0
    assert "exiting although a job left 1 thread(s) running: left-behind" in worker.output()


def test_a_job_class_cannot_forge_log_lines(spawn, redis_url, r):
    forged = "2020-01-01T00:00:00.000Z pid=1 tid=x INFO: all good"
    r.lpush("queue:default", json.dumps({"class": f"nope\n{forged}", "args": [], "jid": "f" * 24}))
    worker = spawn(redis_url)
    wait_for(lambda: r.zcard("retry") == 1, what="the unknown job in retry")
    worker.send(signal.SIGTERM)
    assert worker.wait(15) == 0
    lines = worker.output().splitlines()
    assert not any(line.startswith("2020-01-01") for line in lines)
    assert any("class=nope\\x0a2020-01-01" in line for line in lines)


def test_the_log_file_is_readable_by_its_owner_only(spawn, redis_url, tmp_path):
    path = tmp_path / "worker.log"
    worker = spawn(redis_url, "-L", str(path))
    wait_for(lambda: path.exists() and "starting" in path.read_text())
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    worker.send(signal.SIGTERM)
    assert worker.wait(15) == 0


def test_the_redis_url_can_come_from_a_file(spawn, redis_url, r, tmp_path):
    secret = tmp_path / "redis-url"
    secret.write_text(redis_url + "\n")
    jid = jobs.record.perform_later("from_file", "ok")
    worker = spawn(None, "--redis-url-file", str(secret))
    wait_for(lambda: r.lrange("from_file", 0, -1), what="the job run")
    worker.send(signal.SIGTERM)
    assert worker.wait(15) == 0
    assert jid in worker.output()


def test_a_job_that_kills_its_process_ends_in_dead_and_the_jobs_behind_it_run(
    spawn, redis_url, r, tmp_path
):
    record = tmp_path / "ran.txt"
    poison = jobs.die.perform_later()
    behind = set(jobs.mark.perform_bulk([[i] for i in range(12)]))
    deaths = 0
    for _ in range(8):
        worker = spawn(redis_url, "-c", "2", record=record)
        wait_for(
            lambda w=worker: w.process.poll() is not None or set(ran(record)) >= behind,
            timeout=30,
            what="a death or every job run",
        )
        if worker.process.poll() is None:
            break
        assert worker.process.returncode == 3  # the job's os._exit(3)
        deaths += 1
    # Then the restarted worker buried it instead of running it again: after 3 deaths (the
    # first, then 2 while it ran alone), and up to 3 more while it ran next to another job
    # (no evidence against it: which of them runs first is a race).
    assert 3 <= deaths <= 6
    assert set(ran(record)) == behind
    ((member, _score),) = r.zrange("dead", 0, -1, withscores=True)
    buried = json.loads(member)
    assert buried["jid"] == poison and buried["error_class"] == "djqueue.errors.ProcessDied"
    assert "died while running this job, 3 times" in buried["error_message"]
    assert not r.exists("djqueue:recoveries")  # every recovered job ran to its end or was buried
    worker.send(signal.SIGTERM)
    assert worker.wait(15) == 0


def test_a_job_whose_process_is_killed_while_other_jobs_run_too_is_not_buried(spawn, redis_url, r):
    """Three kill -9s from outside while an innocent job ran, each time next to another job
    started before it: no evidence against it, so it runs again and completes. (Counting every
    start buried it as ProcessDied at the fourth.) Each round's other job is on a queue of its
    own, which the next worker does not serve, so it is not the one that runs first."""
    innocent = jobs.hold.perform_later("innocent", 0)
    for round_ in range(1, 4):
        jobs.hold.set(queue=f"other{round_}").perform_later("others", round_)
        worker = spawn(redis_url, "-c", "3", "-q", f"other{round_}", "-q", "default")
        wait_for(
            lambda n=round_: r.llen("innocent") == n and str(n) in r.lrange("others", 0, -1),
            what=f"round {round_}: the innocent job and the other one running",
            log=worker.log,
        )
        worker.kill()
    r.set("release", 1)
    worker = spawn(redis_url)
    wait_for(lambda: r.llen("innocent") == 4 or r.zcard("dead"), what="a fourth run or a burial")
    wait_for(lambda: not r.hexists("recoveries", innocent), what="its end", log=worker.log)
    assert r.zcard("dead") == 0 and r.llen("innocent") == 4
    worker.send(signal.SIGTERM)
    assert worker.wait(15) == 0


def test_a_poison_job_that_always_starts_next_to_other_jobs_is_still_buried(spawn, redis_url, r):
    """Its deaths next to another running job are no evidence; after three of them it waits
    for the running jobs to end and runs alone, and two deaths alone bury it."""
    poison = jobs.die.perform_later()
    deaths = 0
    for round_ in range(1, 9):
        if round_ == 5:
            r.set("release", 1)  # the other jobs end now: a job waiting to run alone may
        jobs.hold.set(queue=f"other{round_}").perform_later("others", round_)
        worker = spawn(redis_url, "-c", "2", "-q", f"other{round_}", "-q", "default")
        wait_for(
            lambda w=worker: w.process.poll() is not None or r.zcard("dead"),
            what="a death or the burial",
            log=worker.log,
        )
        if worker.process.poll() is None:
            break
        assert worker.process.returncode == 3  # the job's os._exit(3)
        deaths += 1
    # The first death, three next to another job (rounds 2 to 4), two alone (5 and 6).
    assert deaths == 6
    ((member, _score),) = r.zrange("dead", 0, -1, withscores=True)
    buried = json.loads(member)
    assert buried["jid"] == poison and buried["error_class"] == "djqueue.errors.ProcessDied"
    worker.send(signal.SIGTERM)
    assert worker.wait(15) == 0


def ran(record) -> list[str]:
    return record.read_text().split() if record.exists() else []


def test_a_worker_drains_a_redis_that_is_out_of_memory(spawn, tmp_path):
    """With maxmemory reached (noeviction), Redis refuses writes; the scripts that only move
    jobs (take and acknowledge, push back, heartbeat) may still run, so a worker starts and
    drains the queue that frees the memory."""
    server = RedisServer().start()
    try:
        r = server.client(decode_responses=True)
        used = int(r.info("memory")["used_memory"])
        r.config_set("maxmemory-policy", "noeviction")
        r.config_set("maxmemory", used + 400_000)
        djqueue.configure(redis_url=server.url)
        jids = []
        with pytest.raises(redis.exceptions.ResponseError, match="maxmemory"):
            while True:
                jids += jobs.mark.perform_bulk([[n] for n in range(len(jids), len(jids) + 200)])
        assert len(jids) > 500
        # Well below what is used now: nothing but the jobs' going frees enough.
        r.config_set("maxmemory", int(r.info("memory")["used_memory"]) - 150_000)
        with pytest.raises(redis.exceptions.ResponseError, match="maxmemory"):
            r.set("more", "x")
        record = tmp_path / "ran.txt"
        worker = spawn(server.url, record=record)
        wait_for(lambda: set(ran(record)) >= set(jids), timeout=60, what="every job run")
        wait_for(
            lambda: (
                r.llen("queue:default") == 0
                and not any(r.llen(k) for k in r.keys("djqueue:working:*"))
            ),
            what="every job acknowledged",
        )
        # The upgrade step's lock is a write Redis refuses: skipped for this start, and said.
        assert "keys of layout 1 not upgraded at this start (command not allowed" in worker.output()
        worker.send(signal.SIGTERM)
        assert worker.wait(15) == 0
        r.close()
    finally:
        server.close()
