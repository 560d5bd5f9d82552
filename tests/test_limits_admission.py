"""Parking at the push: a job whose concurrency limiters have no room (slots held, or promised
to jobs of theirs already queued) goes to the parked list instead of its queue, wherever a job
lands in a queue (a push, the poller's move, a slot given back); the fetch's refusal stays the
safety net, and the sweep sends parked jobs back when an admitted job never comes."""

from __future__ import annotations

import json
import time

import pytest
import redis

import djqueue
from djqueue import limits
from djqueue.client import get_client
from djqueue.store.jobs import JobStore
from djqueue.store.limits import LimitStore

pytestmark = pytest.mark.usefixtures("held_slots_forgotten")

PARKED = "djqueue:parked:job:adm.capped"
ADMITTED = "djqueue:admitted:job:adm.capped"
SLOTS = "djqueue:limit:job:adm.capped"


@djqueue.job(name="adm.capped", concurrency=3)
def capped(n: int) -> None:
    """Never run here: the tests look at where its pushes land."""


@djqueue.job(name="adm.free")
def free(n: int) -> None:
    """Never run here."""


def _args(jobs: list[str]) -> list[int]:
    return [json.loads(job)["args"][0] for job in jobs]


def _take(limit_store: LimitStore, r: redis.Redis) -> str:
    """What a worker does with the job at the front of ``default``: takes it under its jid
    (from its working list, as the limit step does)."""
    job = r.rpop("queue:default")
    working = "djqueue:working:host:1:abc:default"
    r.lpush(working, job)
    declared = capped.job_limits
    limits.enter(declared, json.loads(job)["jid"], limit_store, 30, (working, job.encode()))
    return job


def test_a_burst_into_an_idle_limiter_queues_its_limit_and_parks_the_rest_in_order(r):
    capped.perform_bulk([[n] for n in range(1000)])
    queued = r.lrange("queue:default", 0, -1)
    assert _args(queued[::-1]) == [0, 1, 2]  # the first three, taken first
    parked = r.lrange(PARKED, 0, -1)
    assert _args(parked[::-1]) == list(range(3, 1000))  # oldest at the right
    assert r.zcard(ADMITTED) == 3
    assert r.smembers("djqueue:parked") == {"job:adm.capped"}
    assert r.hget("djqueue:limiter_hits", "job:adm.capped") is None  # no refusal
    (figures,) = LimitStore(r, get_client().keys).figures()  # defined by the first parked
    assert (figures.kind, figures.limit, figures.parked) == ("concurrent", 3, 997)
    one = capped.set(retention=60).perform_later(1000)  # one push alone: parked behind them
    assert json.loads(r.lindex(PARKED, 0))["jid"] == one
    assert one.status().state == "pending"


def test_unlimited_jobs_and_jobs_without_the_field_go_to_their_queue(r):
    for n in range(3):
        limits.enter(capped.job_limits, f"holder{n}", LimitStore(r, get_client().keys), 30)
    free.perform_later(1)
    get_client().push({"class": "adm.capped", "args": [2]})  # a Ruby client's: no field
    capped.perform_later(3)
    assert _args(r.lrange("queue:default", 0, -1)) == [2, 1]
    assert _args(r.lrange(PARKED, 0, -1)) == [3]


def test_a_slot_given_back_admits_the_oldest_parked_job_and_a_push_meanwhile_is_parked(store, r):
    for n in range(3):
        limits.enter(capped.job_limits, f"holder{n}", store, 30)
    capped.perform_bulk([[n] for n in range(2)])
    assert r.llen("queue:default") == 0 and r.llen(PARKED) == 2
    limits.leave(capped.job_limits, "holder0", store)
    assert _args(r.lrange("queue:default", 0, -1)) == [0]
    assert r.zcard(ADMITTED) == 1  # on its way to the free slot
    capped.perform_later(2)  # the slot is promised: parked, after the one waiting
    assert _args(r.lrange(PARKED, 0, -1)) == [2, 1]
    _take(store, r)
    assert r.zcard(ADMITTED) == 0 and r.zcard(SLOTS) == 3


def test_parked_jobs_go_first_while_the_limiter_has_room(store, r):
    limits.enter(capped.job_limits, "holder", store, 30)
    r.lpush(PARKED, json.dumps({"class": "adm.capped", "args": [0], "jid": "0" * 24}))
    capped.perform_later(1)  # room for two, but one waits already: in line behind it
    assert _args(r.lrange(PARKED, 0, -1)) == [1, 0]
    r.sadd("djqueue:parked", "job:adm.capped")
    assert store.unpark(30) == 2  # the sweep: two free slots, the oldest first
    assert _args(r.lrange("queue:default", 0, -1)) == [1, 0]


def test_the_pollers_move_parks_a_due_job_whose_limiter_is_full(store, r):
    for n in range(3):
        limits.enter(capped.job_limits, f"holder{n}", store, 30)
    capped.perform_in(0.01, 1)
    free.perform_in(0.01, 2)
    client = get_client()
    jobs = JobStore(client.redis, client.keys)
    due = [(m, "default", m) for m in r.zrange("schedule", 0, -1)]
    assert jobs.move_to_queue("schedule", due).moved == 2
    assert _args(r.lrange("queue:default", 0, -1)) == [2]
    assert _args(r.lrange(PARKED, 0, -1)) == [1]


def test_an_admitted_job_that_never_comes_holds_room_for_a_lease_only(store, r):
    capped.perform_bulk([[n] for n in range(4)])
    r.delete("queue:default")  # deleted from its queue: their entries stay behind
    assert r.zcard(ADMITTED) == 3 and r.llen(PARKED) == 1
    assert store.unpark(30) == 0  # within a lease: still on their way, as far as one knows
    r.zadd(ADMITTED, {jid: time.time() - 31 for jid in r.zrange(ADMITTED, 0, -1)})
    assert store.unpark(30) == 1  # older than a lease: dropped, the parked job goes
    assert _args(r.lrange("queue:default", 0, -1)) == [3]
    assert r.zcard(ADMITTED) == 1


def test_too_many_admitted_costs_a_refusal_at_the_fetch_only(store, r):
    capped.perform_bulk([[n] for n in range(3)])
    for n in range(3):  # slots taken by others meanwhile (limit raised elsewhere, code entries)
        limits.enter([limits.concurrent("job:adm.capped", 6)], f"other{n}", store, 30)
    with pytest.raises(djqueue.OverLimit):
        _take(store, r)
    assert _args(r.lrange(PARKED, 0, -1)) == [0]  # refused and parked by the fetch
    assert r.zcard(ADMITTED) == 2  # no longer on its way


def test_a_slot_given_back_unparks_nothing_while_admitted_jobs_will_take_it(store, r):
    capped.perform_bulk([[n] for n in range(3)])  # three on their way to the three slots
    wider = [limits.concurrent("job:adm.capped", 6)]
    limits.enter(wider, "other", store, 30)  # a holder under another limit
    capped.perform_later(3)
    assert r.llen(PARKED) == 1
    limits.leave(capped.job_limits, "other", store)  # given back where the limit is 3
    assert r.llen(PARKED) == 1 and r.llen("queue:default") == 3


# -- what a payload cannot do --------------------------------------------------------------


def _raw(jid: str, limit: object) -> str:
    text = json.dumps(
        {
            "class": "adm.raw",
            "args": [jid],
            "jid": jid,
            "queue": "default",
            "concurrent_limits": [["job:adm.raw", limit]],
        }
    )
    return text.replace("Infinity", "1e999").replace("NaN", "1e999")


@pytest.mark.parametrize("limit", [0, -1, 1.5, float("inf"), "many", None, 1e12])
def test_a_payload_limit_that_is_no_number_of_slots_is_ignored_and_breaks_no_push(r, limit):
    """``concurrent_limits`` is written by djqueue's client, but a payload is only JSON: a
    limit of 0 would park every job of its limiter for good, inf fails the encoding of its
    definition after the job was parked (the script failing half-way). Such a pair is left to
    the fetch; the jobs beside it land as ever."""
    jobs = JobStore(r, get_client().keys)
    r.lpush("djqueue:parked:job:adm.raw", _raw("p" * 24, 2))  # one parked already
    r.sadd("djqueue:parked", "job:adm.raw")
    jobs.push({"default": [_raw("a" * 24, limit)]}, [])  # alone: push_one.lua
    jobs.push({"default": [_raw("b" * 24, limit), json.dumps({"class": "X", "jid": "c" * 24})]}, [])
    landed = [json.loads(job)["jid"] for job in r.lrange("queue:default", 0, -1)]
    assert landed == ["c" * 24, "b" * 24, "a" * 24]
    assert r.llen("djqueue:parked:job:adm.raw") == 1
    assert r.hget("djqueue:limiters", "job:adm.raw") is None
    assert not r.exists("djqueue:admitted:job:adm.raw")


def test_a_payload_naming_a_window_limiter_leaves_its_grants_alone(r):
    """A deploy turned limiter "api" into a window; jobs pushed before it still name it as a
    concurrency limiter. Their admission must not read the window's grants as slots (and
    drop them as run-out leases): the definition the workers wrote decides the kind."""
    store = LimitStore(r, get_client().keys)
    window = limits.window("api", 10, per=60)
    for n in range(10):
        limits.enter([window], f"g{n}", store)
    grants = r.zcard("djqueue:limit:api")
    assert grants == 10
    JobStore(r, get_client().keys).push(
        {"default": [_raw("d" * 24, 3).replace("job:adm.raw", "api")]}, []
    )
    assert r.zcard("djqueue:limit:api") == grants
    assert r.llen("queue:default") == 1
    assert not r.exists("djqueue:parked:api")


def test_a_parked_list_too_long_to_read_for_a_page_shows_a_floor(r, monkeypatch):
    """A burst parked at the push can hold millions of jobs: the Queues page, a queue's page
    and ``djqueue queues`` read a bounded part of each parked list and say the count is a
    floor ("5+"), where reading all would hold Redis for seconds at every view."""
    from djqueue import report
    from djqueue.api import Queue
    from djqueue.store import limits as limit_store
    from djqueue.web.queues import queues_page

    capped.perform_bulk([[n] for n in range(3 + 8)])  # 3 queued, 8 parked
    (summary,) = Queue.summary()
    assert (summary.parked, summary.parked_floor) == (8, False)
    monkeypatch.setattr(limit_store, "PARKED_READ", 5)
    (summary,) = Queue.summary()
    assert (summary.size, summary.parked, summary.parked_floor) == (3, 5, True)
    (row,) = queues_page()
    assert row.parked_text == "5+"
    assert "5+" in report.queues().splitlines()[1].split()
    assert Queue("default").parked == 5


def test_a_paused_queues_jobs_take_no_room_from_their_limiters_jobs_elsewhere(r):
    """Jobs pushed into a paused queue wait there, uncounted: counted, they would hold their
    limiter's room until the sweep dropped them, parking its jobs of running queues."""
    from djqueue.api import Queue

    Queue("default").pause()
    capped.perform_bulk([[n] for n in range(5)])
    assert r.llen("queue:default") == 5 and r.llen(PARKED) == 0
    assert r.zcard(ADMITTED) == 0
    elsewhere = [capped.set(queue="other").perform_later(n) for n in range(4)]
    assert r.llen("queue:other") == 3  # the limiter's three slots, for a running queue
    assert json.loads(r.lindex(PARKED, 0))["jid"] == elsewhere[3]
    Queue("default").resume()
