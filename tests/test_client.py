"""The public client, as in Sidekiq: ``Client().push(item)`` and ``push_bulk``, the atomic
write, round trips per batch, and the ``job_enqueued`` signal."""

from __future__ import annotations

import json
import re
import time

import pytest
import redis

import djqueue
from djqueue import signals
from djqueue.config import Settings


def commandstat(r: redis.Redis, command: str) -> int:
    return r.info("commandstats").get(f"cmdstat_{command}", {}).get("calls", 0)


def queue_jobs(r: redis.Redis, queue: str) -> list[dict]:
    """Jobs in the order a worker takes them (oldest first)."""
    return [json.loads(raw) for raw in reversed(r.lrange(f"queue:{queue}", 0, -1))]


@djqueue.job(name="core.client.noop")
def noop(*args):
    return None


def test_push_a_job_for_another_codebase(r):
    jid = djqueue.Client().push({"class": "HardWorker", "args": [1, "x"], "queue": "critical"})
    (payload,) = queue_jobs(r, "critical")
    assert payload["jid"] == jid
    assert payload["class"] == "HardWorker"
    assert payload["args"] == [1, "x"]
    assert payload["retry"] is True
    assert r.smembers("queues") == {"critical"}


def test_push_keeps_a_given_jid_and_unknown_fields(r):
    jid = djqueue.Client().push(
        {"class": "X", "args": [], "jid": "0123456789abcdef01234567", "bid": "batch-1"}
    )
    assert jid == "0123456789abcdef01234567"
    (payload,) = queue_jobs(r, "default")
    assert payload["jid"] == jid
    assert payload["bid"] == "batch-1"


def test_push_with_at_schedules_or_queues(r):
    client = djqueue.Client()
    later = time.time() + 120
    future = client.push({"class": "X", "args": [1], "at": later})
    past = client.push({"class": "X", "args": [2], "at": time.time() - 5})
    ((raw, score),) = r.zrange("schedule", 0, -1, withscores=True)
    assert json.loads(raw)["jid"] == future
    assert score == later
    (queued,) = queue_jobs(r, "default")
    assert queued["jid"] == past
    assert "at" not in queued


@pytest.mark.parametrize(
    "item, error",
    [
        ({"args": [1]}, ValueError),
        ({"class": "", "args": [1]}, ValueError),
        ({"class": "X", "args": (1,)}, TypeError),
        ({"class": "X", "args": [1], "queue": ""}, ValueError),
        ({"class": "X", "args": [1], "at": "tomorrow"}, TypeError),
        ({"class": "X", "args": [1], "at": float("nan")}, TypeError),
        ({"class": "X", "args": [1], "jid": 12345}, TypeError),
        ({"class": "X", "args": [1], "retry_queue": {1: "x"}}, TypeError),
        ("X", TypeError),
    ],
)
def test_bad_items_are_refused_before_writing(r, item, error):
    with pytest.raises(error):
        djqueue.Client().push(item)
    assert r.dbsize() == 0


def test_push_bulk_returns_jids_in_order(r):
    jids = djqueue.Client().push_bulk({"class": "X", "args": [[i] for i in range(5)], "queue": "b"})
    assert len(jids) == len(set(jids)) == 5
    jobs = queue_jobs(r, "b")
    assert [job["jid"] for job in jobs] == jids
    assert [job["args"] for job in jobs] == [[i] for i in range(5)]
    assert r.smembers("queues") == {"b"}


def test_push_bulk_with_one_time_per_job(r):
    later = time.time() + 600
    jids = djqueue.Client().push_bulk(
        {"class": "X", "args": [[1], [2], [3]], "at": [later, None, time.time() - 1]}
    )
    assert [job["jid"] for job in queue_jobs(r, "default")] == jids[1:]
    ((raw, score),) = r.zrange("schedule", 0, -1, withscores=True)
    assert json.loads(raw)["jid"] == jids[0]
    assert score == later


def test_push_bulk_refuses_a_bad_shape(r):
    client = djqueue.Client()
    with pytest.raises(TypeError):
        client.push_bulk({"class": "X", "args": [1, 2]})
    with pytest.raises(ValueError):
        client.push_bulk({"class": "X", "args": [[1], [2]], "at": [time.time()]})
    assert r.dbsize() == 0


def test_perform_bulk_is_one_round_trip_per_thousand(r):
    noop.perform_bulk([[0], [1]])  # the script loaded: a first NOSCRIPT answer is no trip
    r.delete("queue:default")
    r.config_resetstat()
    jids = noop.perform_bulk([[i] for i in range(2500)])
    assert len(jids) == 2500
    assert r.llen("queue:default") == 2500
    assert commandstat(r, "evalsha") == 3
    assert commandstat(r, "lpush") == 3  # called from the script, one per batch


def test_bulk_through_client_middleware_is_still_one_round_trip_per_thousand(r):
    class PassThrough:
        def __call__(self, job, payload, queue, call_next):
            return call_next()

    chain = djqueue.Chain()
    chain.add(PassThrough)
    r.config_resetstat()
    jids = djqueue.Client(middleware=chain).push_bulk(
        {"class": "X", "args": [[i] for i in range(2500)]}
    )
    assert len(jids) == 2500
    assert r.llen("queue:default") == 2500
    assert commandstat(r, "evalsha") == 3


def test_bulk_jobs_follow_the_wire_format(r):
    before = time.time()
    jids = noop.set(queue="bulk", tags=["t"]).perform_bulk([[1], [2], [3]])
    jobs = queue_jobs(r, "bulk")
    assert [job["jid"] for job in jobs] == jids
    for job, args in zip(jobs, [[1], [2], [3]], strict=True):
        assert set(job) == {
            "class",
            "args",
            "jid",
            "queue",
            "retry",
            "tags",
            "created_at",
            "enqueued_at",
        }
        assert re.fullmatch(r"[0-9a-f]{24}", job["jid"])
        assert job["args"] == args
        assert job["class"] == "core.client.noop"
        assert job["tags"] == ["t"]
        assert isinstance(job["created_at"], float) and before <= job["created_at"]
        assert isinstance(job["enqueued_at"], float)
        assert job["created_at"] <= job["enqueued_at"]
    # As in Sidekiq, the jobs of one bulk share created_at.
    assert len({job["created_at"] for job in jobs}) == 1
    assert r.smembers("queues") == {"bulk"}


def test_bulk_with_a_bad_time_names_the_job(r):
    with pytest.raises(TypeError, match="push_bulk job #1: 'at' must be epoch seconds"):
        djqueue.Client().push_bulk({"class": "X", "args": [[1], [2]], "at": [None, "soon"]})
    assert r.dbsize() == 0


def test_perform_later_is_one_command(r):
    noop.perform_later(1)  # loads the script on first use
    r.config_resetstat()
    noop.perform_later(2)
    noop.perform_in(60, 3)
    called = {
        name
        for name in r.info("commandstats")
        if not name.startswith(("cmdstat_config", "cmdstat_info"))
    }
    # SADD, LPUSH, ZADD and TYPE run inside the script; the client sends EVALSHA alone.
    assert called - {"cmdstat_sadd", "cmdstat_lpush", "cmdstat_zadd", "cmdstat_type"} == {
        "cmdstat_evalsha"
    }
    assert commandstat(r, "evalsha") == 2


def test_a_large_batch_fits_in_one_call(r):
    """Lua's unpack() is limited to a few thousand values; the script slices its writes."""
    jids = noop.perform_bulk([[i] for i in range(9000)], batch_size=9000)
    assert len(jids) == 9000
    assert r.llen("queue:default") == 9000
    later = time.time() + 60
    djqueue.Client().push_bulk({"class": "X", "args": [[i] for i in range(9000)], "at": later})
    assert r.zcard("schedule") == 9000


def test_script_is_reloaded_after_script_flush(r):
    noop.perform_later(1)
    r.script_flush()
    noop.perform_later(2)
    assert r.llen("queue:default") == 2


# -- nothing half-written ---------------------------------------------------------------------


def test_a_push_that_fails_in_redis_writes_nothing(r):
    r.set("queue:broken", "not a list")
    with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
        noop.set(queue="broken").perform_later(1)
    assert r.exists("queues") == 0
    assert r.get("queue:broken") == "not a list"


def test_a_push_with_a_broken_queues_set_writes_nothing(r):
    r.set("queues", "not a set")
    with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
        noop.perform_later(1)
    with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
        noop.perform_bulk([[1], [2]])
    assert r.exists("queue:default") == 0


def test_a_bulk_that_fails_partway_writes_nothing(r):
    """Jobs routed to two queues by a middleware; the second queue's key is not a list."""

    class Route:
        def __call__(self, job, payload, queue, call_next):
            payload["queue"] = "good" if payload["args"][0] % 2 else "broken"
            return call_next()

    r.sadd("queues", "old")
    r.set("queue:broken", "not a list")
    chain = djqueue.Chain()
    chain.add(Route)
    client = djqueue.Client(middleware=chain)
    with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
        client.push_bulk({"class": "X", "args": [[i] for i in range(10)]})
    assert r.exists("queue:good") == 0
    assert r.smembers("queues") == {"old"}


def test_a_bulk_with_a_broken_schedule_writes_nothing(r):
    r.set("schedule", "not a zset")
    with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
        djqueue.Client().push_bulk(
            {"class": "X", "args": [[1], [2]], "at": [None, time.time() + 60]}
        )
    assert r.exists("queue:default") == 0
    assert r.exists("queues") == 0


# -- explicit settings, explicit connection -----------------------------------------------------


def test_client_with_its_own_settings(r, redis_url):
    client = djqueue.Client(Settings(redis_url=redis_url, namespace="other", default_queue="q"))
    client.push({"class": "X", "args": []})
    assert r.llen("other:queue:q") == 1
    assert r.smembers("other:queues") == {"q"}


def test_client_with_its_own_redis_client(r, redis_server):
    db1 = redis_server.client(db=1)
    try:
        djqueue.Client(redis_client=db1).push({"class": "X", "args": [1]})
        assert db1.llen("queue:default") == 1
        assert r.dbsize() == 0
    finally:
        db1.flushdb()
        db1.close()


# -- the job_enqueued signal --------------------------------------------------------------------


def test_job_enqueued_is_sent_for_each_job_written(r):
    seen: list[tuple[str, dict]] = []

    def receiver(sender, payload):
        seen.append((sender, payload))

    signals.job_enqueued.connect(receiver)
    try:
        jid = noop.perform_later(1)
        scheduled = noop.perform_in(60, 2)
        bulk = noop.perform_bulk([[3], [4]])
    finally:
        signals.job_enqueued.disconnect(receiver)
    assert [sender for sender, _ in seen] == ["core.client.noop"] * 4
    assert [payload["jid"] for _, payload in seen] == [jid, scheduled, *bulk]
    queued = {job["jid"]: job for job in queue_jobs(r, "default")}
    assert seen[0][1] == queued[jid]
    assert "enqueued_at" not in seen[1][1]


def test_job_enqueued_is_not_sent_for_a_stopped_push(r):
    class Stop:
        def __call__(self, job, payload, queue, call_next):
            return None

    seen: list[str] = []
    chain = djqueue.Chain()
    chain.add(Stop)

    def receiver(sender, payload):
        seen.append(sender)

    signals.job_enqueued.connect(receiver)
    try:
        assert djqueue.Client(middleware=chain).push({"class": "X", "args": []}) is None
    finally:
        signals.job_enqueued.disconnect(receiver)
    assert seen == []
    assert r.dbsize() == 0


# -- errors that say what happened --------------------------------------------------------------


def test_a_payload_over_the_size_setting_is_refused_with_its_size(r):
    """Redis drops the connection on a value over 512 MB, which read as "Redis unavailable"."""
    djqueue.configure(redis_url=djqueue.get_settings().redis_url, max_payload_bytes=1000)
    with pytest.raises(
        djqueue.PayloadTooLarge,
        match=r"JSON is 1,\d\d\d bytes, over the max_payload_bytes setting \(1,000\)",
    ):
        djqueue.Client().push({"class": "Big", "args": ["x" * 990]})
    with pytest.raises(djqueue.PayloadTooLarge):  # counted in bytes, not characters
        djqueue.Client().push({"class": "Big", "args": ["é" * 480]})
    with pytest.raises(djqueue.PayloadTooLarge):  # nothing of a bulk is written
        djqueue.Client().push_bulk({"class": "Big", "args": [["small"], ["x" * 990]]})
    assert r.keys("*") == []
    djqueue.Client().push({"class": "Big", "args": ["x" * 700]})
    assert r.llen("queue:default") == 1


def test_an_argument_nested_too_deep_is_a_type_error_naming_the_depth(r):
    deep: list = []
    for _ in range(100_000):
        deep = [deep]
    with pytest.raises(TypeError, match="nested 100002 levels deep"):
        djqueue.Client().push({"class": "Deep", "args": [deep]})
    assert r.keys("*") == []


@pytest.mark.parametrize("name", ["a,b", "two words", "tab\there", "trailing "])
def test_queue_names_a_worker_could_not_be_told_about_are_refused(r, name):
    with pytest.raises(ValueError, match="comma or white space"):
        djqueue.Client().push({"class": "X", "args": [], "queue": name})
    with pytest.raises(ValueError, match="comma or white space"):
        djqueue.job(queue=name)(lambda: None)
    assert r.keys("*") == []
