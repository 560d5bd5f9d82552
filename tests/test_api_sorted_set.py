"""The schedule, retry and dead sets through djqueue.api: listing, finding and moving jobs."""

from __future__ import annotations

import json
import threading
import time

import pytest

import djqueue
from djqueue import client_middleware
from djqueue.api import DeadSet, Queue, RetrySet, ScheduledSet


def failed_job(n: int, **extra) -> dict:
    """A job as a worker leaves it in ``retry`` after its second failure (Sidekiq's fields)."""
    t = time.time()
    return {
        "class": "Flaky",
        "args": [n],
        "jid": f"{n:024x}",
        "queue": "default",
        "retry": True,
        "created_at": t - 100,
        "enqueued_at": t - 50,
        "error_message": f"boom {n}",
        "error_class": "RuntimeError",
        "failed_at": t - 90,
        "retried_at": t - 40,
        "retry_count": 1,
        **extra,
    }


def add(r, key: str, job: dict, score: float) -> str:
    raw = json.dumps(job, separators=(",", ":"))
    r.zadd(key, {raw: score})
    return raw


def queued(r, queue: str = "default") -> list[dict]:
    """The queue's jobs, oldest first."""
    return [json.loads(x) for x in reversed(r.lrange(f"queue:{queue}", 0, -1))]


def test_scheduled_jobs_listed_soonest_first_and_found(redis_url, r):
    now = time.time()
    later = djqueue.Client().push({"class": "S", "args": ["later"], "at": now + 3600})
    soon = djqueue.Client().push({"class": "S", "args": ["soon"], "at": now + 60})
    scheduled = ScheduledSet()

    assert scheduled.size == 2 and len(scheduled) == 2
    assert [e.jid for e in scheduled.jobs()] == [soon, later]
    assert [e.jid for e in scheduled.jobs(newest_first=True)] == [later, soon]
    assert [e.args for e in scheduled.jobs(offset=1, limit=1)] == [["later"]]
    entry = scheduled.find_job(later)
    assert entry.at == pytest.approx(now + 3600) and entry.queue == "default"
    assert entry.enqueued_at is None
    assert scheduled.find_job("f" * 24) is None


def test_add_to_queue_runs_a_scheduled_job_now(redis_url, r):
    jid = djqueue.Client().push({"class": "S", "args": [1], "at": time.time() + 3600})
    entry = ScheduledSet().find_job(jid)

    assert entry.add_to_queue() is True
    assert entry.add_to_queue() is False  # already moved: nothing pushed twice

    assert r.zcard("schedule") == 0
    (job,) = queued(r)
    assert job["jid"] == jid and job["args"] == [1] and "enqueued_at" in job
    assert r.smembers("queues") == {"default"}


def test_retry_now_keeps_counting_like_sidekiq(redis_url, r):
    add(r, "retry", failed_job(1, retry_count=3), time.time() + 100)
    entry = RetrySet().find_job(f"{1:024x}")

    assert entry.error_message == "boom 1" and entry.error_class == "RuntimeError"
    assert entry.retry_count == 3 and entry.has_error
    assert entry.retry() is True

    (job,) = queued(r)
    # Lowered by one: the worker adds one at the next failure, so the count goes on from 3.
    assert job["retry_count"] == 2
    assert job["error_message"] == "boom 1" and job["failed_at"] == entry.failed_at
    assert job["enqueued_at"] > entry.enqueued_at
    assert RetrySet().size == 0


def test_retry_goes_to_retry_queue(redis_url, r):
    add(r, "retry", failed_job(2, retry_queue="slow"), time.time())
    entry = RetrySet().jobs()[0]
    assert entry.queue == "slow"
    entry.retry()
    assert queued(r, "slow")[0]["queue"] == "slow"
    assert r.smembers("queues") == {"slow"}


def test_two_admins_retrying_at_once_push_once(redis_url, r):
    for n in range(20):
        add(r, "retry", failed_job(n), time.time() + n)
    entries = RetrySet().jobs(limit=20)
    results: list[bool] = []
    barrier = threading.Barrier(2)

    def click() -> None:
        barrier.wait()
        results.extend(e.retry() for e in entries)

    threads = [threading.Thread(target=click) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    assert results.count(True) == 20
    assert sorted(j["args"][0] for j in queued(r)) == list(range(20))


def test_retry_all_and_dead_retry_all(redis_url, r):
    for n in range(250):
        add(r, "retry", failed_job(n), time.time() + n)
    add(r, "dead", failed_job(999, queue="critical"), time.time())

    assert RetrySet().retry_all() == 250
    assert DeadSet().retry_all() == 1

    assert RetrySet().size == 0 and DeadSet().size == 0
    assert sorted(j["args"][0] for j in queued(r)) == list(range(250))
    assert queued(r, "critical")[0]["jid"] == f"{999:024x}"


def test_retry_all_steps_over_what_cannot_move(redis_url, r):
    r.zadd("dead", {"raw text from a bad push": time.time()})
    add(r, "dead", failed_job(1), time.time() + 1)

    assert DeadSet().retry_all() == 1

    (left,) = DeadSet().jobs()
    assert left.is_malformed and left.value == "raw text from a bad push"
    with pytest.raises(ValueError, match="not a job"):
        left.retry()
    assert left.delete()


def test_retry_runs_client_middleware(redis_url, r):
    add(r, "retry", failed_job(1), time.time())
    add(r, "retry", failed_job(2), time.time() + 1)

    def stamp(job, payload, queue, call_next):
        if payload["args"] == [2]:
            return None  # stop this push
        payload["stamped"] = True
        return call_next()

    client_middleware.add(stamp)
    try:
        assert RetrySet().retry_all() == 1
    finally:
        client_middleware.remove(stamp)
    (job,) = queued(r)
    assert job["args"] == [1] and job["stamped"] is True
    assert [e.args for e in RetrySet().jobs()] == [[2]]


def test_a_middleware_holding_the_push_does_not_delay_a_retry(redis_url, r):
    """Enqueue-on-commit holds a push until the transaction commits; an admin's retry is one
    atomic move, not part of the page's transaction, so it goes at once, and the held call
    made later writes nothing more."""
    add(r, "retry", failed_job(1), time.time())
    held = []

    def hold(job, payload, queue, call_next):
        held.append(call_next)
        return payload

    client_middleware.add(hold)
    try:
        assert RetrySet().retry_all() == 1
    finally:
        client_middleware.remove(hold)
    assert [job["args"] for job in queued(r)] == [[1]] and RetrySet().size == 0
    held[0]()
    assert [job["args"] for job in queued(r)] == [[1]]


def test_kill_moves_to_dead(redis_url, r):
    add(r, "retry", failed_job(1), time.time() + 10)
    entry = RetrySet().jobs()[0]

    assert entry.kill() is True
    assert entry.kill() is False

    (dead,) = DeadSet().jobs()
    assert dead.jid == entry.jid and dead.error_message == "boom 1"
    assert time.time() - 5 < dead.at <= time.time()
    with pytest.raises(ValueError):
        dead.kill()


def test_kill_all_trims_the_dead_set(redis_url, r):
    djqueue.configure(redis_url=redis_url, dead_max_jobs=5, dead_timeout=3600)
    add(r, "dead", failed_job(100), time.time() - 7200)  # older than dead_timeout
    for n in range(8):
        add(r, "retry", failed_job(n), time.time() + n)

    assert RetrySet().kill_all() == 8

    assert RetrySet().size == 0
    assert DeadSet().size == 5
    assert DeadSet().find_job(f"{100:024x}") is None


def test_dead_set_kill_and_trim(redis_url, r):
    djqueue.configure(redis_url=redis_url, dead_max_jobs=3)
    for n in range(5):
        DeadSet().kill(failed_job(n))
    assert DeadSet().size == 3
    assert sorted(e.args[0] for e in DeadSet()) == [2, 3, 4]
    assert [e.args[0] for e in DeadSet().jobs()][0] == 4  # newest first


def test_dead_set_trim_drops_old_jobs_then_keeps_the_newest(redis_url, r):
    djqueue.configure(redis_url=redis_url, dead_max_jobs=3, dead_timeout=3600)
    add(r, "dead", failed_job(100), time.time() - 7200)  # older than dead_timeout
    for n in range(5):
        add(r, "dead", failed_job(n), time.time() - 60 + n)
    DeadSet().trim()
    assert sorted(e.args[0] for e in DeadSet()) == [2, 3, 4]


def test_delete_and_fetch_by_score_and_jid(redis_url, r):
    score = time.time() + 50
    add(r, "retry", failed_job(1), score)
    add(r, "retry", failed_job(2), score)  # same score, another job
    retries = RetrySet()

    both = retries.fetch(score)
    assert sorted(e.args[0] for e in both) == [1, 2]
    (one,) = retries.fetch(score, f"{1:024x}")
    assert retries.entry(one.key).jid == one.jid

    assert retries.delete_by_jid(score, one.jid) is True
    assert retries.entry(one.key) is None
    assert [e.args for e in retries.jobs()] == [[2]]
    assert retries.jobs()[0].delete() is True
    assert retries.size == 0


def test_iteration_and_scan(redis_url, r):
    for n in range(230):
        add(r, "retry", failed_job(n, error_message="disk full" if n % 50 == 0 else "x"), n)
    retries = RetrySet()

    assert [e.args[0] for e in retries] == list(range(229, -1, -1))
    assert sorted(e.args[0] for e in retries.scan("disk full")) == [0, 50, 100, 150, 200]
    # The text is matched as it is, not as a glob: "[x]" is no character class, "*" no wildcard.
    add(r, "retry", failed_job(900, error_message="rate[x] *?"), 900)
    add(r, "retry", failed_job(901, error_message="ratex and more"), 901)
    assert [e.args[0] for e in retries.scan("rate[x] *?")] == [900]
    assert [e.args[0] for e in retries.scan("rate[x]")] == [900]
    assert list(retries.scan("rat*more")) == []
    r.zrem("retry", *[m for m in r.zrange("retry", 0, -1) if json.loads(m)["args"][0] >= 900])

    for entry in retries:  # deleting while iterating skips nothing
        if entry.args[0] % 3:
            entry.delete()
    assert sorted(e.args[0] for e in retries) == list(range(0, 230, 3))


def test_clear(redis_url, r):
    for n in range(3):
        add(r, "dead", failed_job(n), n)
    assert DeadSet().clear() == 3
    assert not r.exists("dead")


def test_sidekiq8_entries(redis_url, r):
    """Sidekiq 8 writes integer milliseconds inside the job (scores stay float seconds)."""
    ms = int(time.time() * 1000)
    job = failed_job(1, created_at=ms - 5000, enqueued_at=ms - 4000, failed_at=ms - 3000)
    job["retried_at"] = ms - 2000
    add(r, "retry", job, time.time() + 30)
    (entry,) = RetrySet().jobs()
    assert entry.created_at == pytest.approx(ms / 1000 - 5)
    assert entry.failed_at == pytest.approx(ms / 1000 - 3)
    assert entry.retried_at == pytest.approx(ms / 1000 - 2)
    assert entry.retry()
    assert Queue("default").jobs()[0].created_at == pytest.approx(ms / 1000 - 5)


def test_backtrace_in_sidekiq_form(redis_url, r):
    import base64
    import zlib

    lines = ["app/jobs/flaky.rb:3:in `perform'", "lib/sidekiq/processor.rb:196"]
    packed = base64.b64encode(zlib.compress(json.dumps(lines).encode())).decode()
    # Sidekiq up to 7.2.0 wrote it with Base64.encode64, which breaks lines every 60 chars.
    wrapped = "\n".join(packed[i : i + 60] for i in range(0, len(packed), 60)) + "\n"
    add(r, "retry", failed_job(1, error_backtrace=wrapped), 1)
    add(r, "retry", failed_job(2, error_backtrace=lines), 2)
    add(r, "retry", failed_job(3, error_backtrace="garbage"), 3)
    first, second, third = RetrySet().jobs()
    assert first.error_backtrace == lines
    assert second.error_backtrace == lines
    assert third.error_backtrace is None
