"""Parking in Redis: a job a concurrency limiter refuses leaves its working list for the
limiter's parked list in the refusing step, a slot given back sends the oldest one to the
front of its queue in the giving step, and the janitor's sweep sends them back when slots are
free without that; a window or a bucket puts its refused job back for when it opens."""

from __future__ import annotations

import json

import pytest
import redis

import djqueue
from djqueue import limits
from djqueue.store.limits import PARKED, LimitStore

WORKING = "djqueue:working:host:1:abc:default"
PARKED_LIST = "djqueue:parked:stripe"


# The slots these tests take and do not give back are no process's to renew.
pytestmark = pytest.mark.usefixtures("held_slots_forgotten")


def _job(n: int, queue: str = "default", **fields: object) -> str:
    return json.dumps({"class": "T", "args": [n], "jid": f"{n:024x}", "queue": queue, **fields})


def _taken(r: redis.Redis, job: str, working: str = WORKING) -> tuple[str, bytes]:
    """``job`` as a worker holds it: in its working list."""
    r.lpush(working, job)
    return working, job.encode()


def _refused(store: LimitStore, r: redis.Redis, job: str, holder: str, limit: int = 1):
    stripe = limits.concurrent("stripe", limit)
    with pytest.raises(djqueue.OverLimit) as refused:
        limits.enter([stripe], holder, store, lease=30, job=_taken(r, job))
    return refused.value


def test_a_refused_job_is_parked_and_a_slot_given_back_sends_it_to_the_front(store, r):
    stripe = limits.concurrent("stripe", 1)
    limits.enter([stripe], "holder", store, lease=30)
    first, second = _job(1), _job(2, retention=60)
    assert _refused(store, r, first, "1").parked
    assert _refused(store, r, second, "2").parked
    assert r.lrange(WORKING, 0, -1) == []
    assert r.lrange(PARKED_LIST, 0, -1) == [second, first]  # oldest at the right
    assert r.smembers("djqueue:parked") == {"stripe"}
    assert r.zcard("schedule") == 0
    assert r.hget("djqueue:status:" + json.loads(second)["jid"], "state") == "pending"
    assert int(r.hget("djqueue:limiter_hits", "stripe")) == 2
    r.rpush("queue:default", _job(3))  # waiting in the queue: taken from the right
    limits.leave([stripe], "holder", store)
    assert r.lrange("queue:default", 0, -1) == [_job(3), first]  # the oldest, taken next
    assert r.lrange(PARKED_LIST, 0, -1) == [second]
    assert r.zrange("djqueue:admitted:stripe", 0, -1) == [json.loads(first)["jid"]]
    taken = r.rpop("queue:default")  # the worker takes it under its jid: no longer on its way
    limits.enter([stripe], json.loads(taken)["jid"], store, lease=30, job=_taken(r, taken))
    assert r.zcard("djqueue:admitted:stripe") == 0
    limits.leave([stripe], json.loads(taken)["jid"], store)
    assert r.lrange(PARKED_LIST, 0, -1) == []
    assert r.smembers("djqueue:parked") == set()  # nothing parked: the sweep skips it


def test_a_slot_not_held_any_more_unparks_nothing(store, r):
    limits.enter([limits.concurrent("stripe", 1)], "holder", store, lease=30)
    _refused(store, r, _job(1), "1")
    r.zadd("djqueue:limit:stripe", {"holder": 1.0, "other": 9e9})  # its lease ran out: taken
    assert store.leave([("stripe", 1)], "holder") == 0
    assert r.llen(PARKED_LIST) == 1
    assert store.leave([("stripe", 1)], "other") == 1
    assert r.llen("queue:default") == 1


def test_a_slot_given_back_under_a_lowered_limit_unparks_nothing_while_still_full(store, r):
    for holder in "abc":
        limits.enter([limits.concurrent("stripe", 3)], holder, store, lease=30)
    _refused(store, r, _job(1), "1", limit=2)
    assert store.leave([("stripe", 2)], "a") == 0  # two still hold slots of two
    assert store.leave([("stripe", 2)], "b") == 1
    assert r.llen("queue:default") == 1


def test_parked_jobs_of_a_paused_queue_wait_in_it_and_the_slot_goes_to_a_running_one(store, r):
    limits.enter([limits.concurrent("stripe", 1)], "holder", store, lease=30)
    paused = [_job(n, queue="mail") for n in (1, 2)]
    for n, job in enumerate(paused):
        _refused(store, r, job, str(n))
    running = _job(3)
    _refused(store, r, running, "3")
    djqueue.api.Queue("mail").pause()
    assert store.leave([("stripe", 1)], "holder") == 1
    assert r.lrange("queue:mail", 0, -1) == paused[::-1]  # at its front, in their order
    assert r.lrange("queue:default", 0, -1) == [running]
    assert r.llen(PARKED_LIST) == 0


def test_the_sweep_unparks_when_a_dead_holders_lease_runs_out(store, r):
    limits.enter([limits.concurrent("stripe", 2)], "dead", store, lease=30)
    limits.enter([limits.concurrent("stripe", 2)], "alive", store, lease=30)
    for n in range(3):
        _refused(store, r, _job(n), str(n), limit=2)
    assert store.unpark(30) == 0  # full: nothing moves
    r.zadd("djqueue:limit:stripe", {"dead": 1.0})  # killed: its lease ran out
    assert store.unpark(30) == 1
    assert r.lrange("queue:default", 0, -1) == [_job(0)]
    assert r.llen(PARKED_LIST) == 2


def test_the_sweep_sends_back_the_jobs_of_a_limiter_no_longer_defined(store, r):
    limits.enter([limits.concurrent("stripe", 1)], "holder", store, lease=30)
    for n in range(3):
        _refused(store, r, _job(n), str(n))
    r.delete("djqueue:limiters")  # a week unused: its definition expired
    (figures,) = store.figures()
    assert (figures.name, figures.parked) == ("stripe", 3)
    assert "no definition" in figures.problem
    assert store.unpark(30, most=2) == 2
    assert store.unpark(30, most=2) == 1
    assert r.llen("queue:default") == 3
    assert r.smembers("djqueue:parked") == set()
    assert store.figures() == []


def test_the_figures_count_parked_jobs_per_limiter(store, r):
    limits.enter([limits.concurrent("stripe", 1)], "holder", store, lease=30)
    for n in range(2):
        _refused(store, r, _job(n), str(n))
    (figures,) = store.figures()
    assert (figures.used, figures.hits, figures.parked, figures.problem) == (1, 2, 2, "")


def test_a_parked_list_of_the_wrong_type_puts_the_job_back_in_time(store, r, caplog):
    limits.enter([limits.concurrent("stripe", 1)], "holder", store, lease=30)
    r.set(PARKED_LIST, "not a list")
    refused = _refused(store, r, _job(1), "1")
    assert not refused.parked
    assert r.zrange("schedule", 0, -1) == [_job(1)]
    assert "djqueue:parked:stripe: it holds a string, not a list" in caplog.text


def test_a_window_puts_its_refused_job_back_for_when_it_opens(store, r):
    mail = limits.window("mail", 2, per=30)
    limits.enter([mail], "a", store)
    limits.enter([mail], "b", store)
    (first, granted), _ = r.zrange("djqueue:limit:mail", 0, -1, withscores=True)
    with pytest.raises(djqueue.OverLimit) as refused:
        limits.enter([mail], "c", store, job=_taken(r, _job(1)))
    ((job, at),) = r.zrange("schedule", 0, -1, withscores=True)
    assert job == _job(1)
    assert at == pytest.approx(granted + 30, abs=0.002)  # when the first grant leaves
    assert refused.value.retry_after == pytest.approx(at - float(r.time()[0]), abs=1.1)


def test_a_bucket_puts_its_refused_job_back_for_its_next_token(store, r):
    api = limits.bucket("api", 2, per=20)  # a token every 10 s
    for holder in "ab":
        limits.enter([api], holder, store)
    with pytest.raises(djqueue.OverLimit):
        limits.enter([api], "c", store, job=_taken(r, _job(1)))
    ((_, at),) = r.zrange("schedule", 0, -1, withscores=True)
    seconds, micros = r.time()
    assert 9.9 < at - (seconds + micros / 1e6) <= 10.01


def test_a_limiter_entered_in_code_parks_the_job_only_while_still_full(store, r):
    limits.enter([limits.concurrent("stripe", 1)], "holder", store, lease=30)
    working, raw = _taken(r, _job(1))
    assert store.put_back(working, raw, 0.0, ("stripe", 1)) == PARKED
    assert r.lrange(PARKED_LIST, 0, -1) == [_job(1)]
    limits.leave([limits.concurrent("stripe", 1)], "holder", store)
    r.delete("queue:default")
    working, raw = _taken(r, _job(2))
    assert store.put_back(working, raw, 123.0, ("stripe", 1)) == 1  # a slot is free now
    assert r.zrange("schedule", 0, -1, withscores=True) == [(_job(2), 123.0)]


def test_a_parked_job_can_be_cancelled(store, r):
    limits.enter([limits.concurrent("stripe", 1)], "holder", store, lease=30)
    tracked, untracked = _job(1, retention=60), _job(2)
    for job in (tracked, untracked):
        _refused(store, r, job, "x")
    assert djqueue.cancel(json.loads(tracked)["jid"]) == "cancelled"
    assert djqueue.status(json.loads(tracked)["jid"]).state == "cancelled"
    assert djqueue.cancel(json.loads(untracked)["jid"]) == "cancelled"
    assert r.llen(PARKED_LIST) == 0


def test_jobs_a_window_refuses_together_are_due_a_turn_apart(store, r):
    mail = limits.window("mail", 2, per=10)  # a turn every 5 s
    limits.enter([mail], "a", store)
    limits.enter([mail], "b", store)
    (_, granted), _ = r.zrange("djqueue:limit:mail", 0, -1, withscores=True)
    for n in range(3):
        with pytest.raises(djqueue.OverLimit):
            limits.enter([mail], str(n), store, job=_taken(r, _job(n)))
    due = [at for _, at in r.zrange("schedule", 0, -1, withscores=True)]
    opens = granted + 10
    assert due == pytest.approx([opens, opens + 5, opens + 10], abs=0.002)


def test_an_index_of_the_wrong_type_is_named_and_the_figures_still_answer(store, r, caplog):
    limits.enter([limits.concurrent("stripe", 1)], "holder", store, lease=30)
    r.set("djqueue:parked", "not a set")
    assert _refused(store, r, _job(1), "1").parked  # parked all the same, not indexed
    (figures,) = store.figures()
    assert (figures.name, figures.used, figures.parked) == ("stripe", 1, 1)
    assert "bad key djqueue:parked: it holds a string, not a set" in caplog.text
    assert store.unpark(30) == 0  # the sweep cannot find it; a slot given back still can
    assert store.leave([("stripe", 1)], "holder") == 1


def test_a_turns_hash_of_the_wrong_type_still_puts_the_refused_job_back_at_the_opening(
    store, r, caplog
):
    mail = limits.window("mail", 1, per=30)
    limits.enter([mail], "a", store)
    r.set("djqueue:limiter_turns", "not a hash")
    with pytest.raises(djqueue.OverLimit):
        limits.enter([mail], "b", store, job=_taken(r, _job(1)))
    ((job, at),) = r.zrange("schedule", 0, -1, withscores=True)
    ((_, granted),) = r.zrange("djqueue:limit:mail", 0, -1, withscores=True)
    assert job == _job(1) and at == pytest.approx(granted + 30, abs=0.002)
    assert "djqueue:limiter_turns: it holds a string, not a hash" in caplog.text


def test_one_limiter_key_of_the_wrong_type_does_not_keep_the_other_slots(store, r, caplog):
    declared = [limits.concurrent("broken", 1), limits.concurrent("stripe", 1)]
    limits.enter(declared, "holder", store, lease=30)
    r.set("djqueue:limit:broken", "not a sorted set")
    limits.leave(declared, "holder", store)
    assert r.zcard("djqueue:limit:stripe") == 0
    assert "djqueue:limit:broken: it holds a string, not a sorted set" in caplog.text
