"""Upgrading a deployment from layout 1 (djqueue's own keys without a prefix, as d869405 wrote
them) to layout 2 (under ``djqueue:``), against a real Redis and a real worker: nothing the
earlier version wrote is lost. The old data is written here with raw commands, in the shapes
the earlier version's scripts gave it."""

from __future__ import annotations

import json
import logging
import time

import redis

import djqueue
from djqueue.store import Keys, upgrade

from . import jobs_for_worker  # registers t.record, which the old jobs name
from .worker_support import wait_for

#: Layout 1's in-flight status lifetime (30 days), as its scripts set it.
IN_FLIGHT = 30 * 24 * 3600


def job_json(jid: str, key: str, value: str, retention: int | None = None) -> str:
    job: dict[str, object] = {"class": "t.record", "args": [key, value], "jid": jid}
    job.update(queue="default", retry=True, created_at=1.0e9, enqueued_at=1.0e9)
    if retention is not None:
        job["retention"] = retention
    return json.dumps(job)


def old_status(r: redis.Redis, jid: str, state: str, **fields: object) -> None:
    """A status hash as layout 1's status.lua wrote it (``status:JID``)."""
    values = {"state": state, "class": "t.record", "queue": "default", "retention": "60"}
    r.hset(f"status:{jid}", mapping={**values, **fields})
    r.expire(f"status:{jid}", IN_FLIGHT)


def test_a_finished_jobs_status_and_result_are_found_after_the_upgrade(worker, r, caplog):
    caplog.set_level(logging.INFO, logger="djqueue.worker")
    jid = "a" * 24
    old_status(r, jid, "completed", result='{"total": 42}', attempts=1, finished_at="1.5e9")
    r.expire(f"status:{jid}", 600)  # finished: its retention
    r.rpush(f"status:{jid}:done", "completed")
    r.expire(f"status:{jid}:done", 600)
    worker()
    assert djqueue.status(jid).state == "completed"
    assert djqueue.result(jid, timeout=5) == {"total": 42}
    assert not r.exists(f"status:{jid}", f"status:{jid}:done")
    assert 0 < r.ttl(f"djqueue:status:{jid}") <= 600  # the lifetime it had
    assert 0 < r.ttl(f"djqueue:status:{jid}:done") <= 600
    assert "upgrade: 1 job statuses moved under djqueue:status:" in caplog.text


def test_a_dead_old_process_has_its_jobs_pushed_back_and_run_by_a_new_worker(worker, r):
    dead = "old-host:4242:0123456789ab"
    jid = "b" * 24
    tracked = job_json(jid, "ran", "recovered", retention=60)
    r.hset("working_lists", dead, '["default"]')
    r.lpush(f"working:{dead}:default", tracked)
    old_status(r, jid, "active", process=dead, workers=dead, attempts=1, payload=tracked)
    # An old-version process still running beside the new one keeps its job.
    live = "old-host:4343:ba9876543210"
    busy = job_json("c" * 24, "ran", "stolen")
    info = {"hostname": "old-host", "pid": 4343, "identity": live, "heartbeat_interval": 30}
    r.hset(live, mapping={"info": json.dumps(info), "beat": time.time()})
    r.expire(live, 60)
    r.hset("working_lists", live, '["default"]')
    r.lpush(f"working:{live}:default", busy)
    w = worker()
    assert wait_for(lambda: r.lrange("ran", 0, -1)) == ["['recovered']"]
    wait_for(lambda: djqueue.status(jid).state == "completed", what="completed")
    st = djqueue.status(jid)
    assert st.attempts == 2 and st.workers == (dead, w.identity)
    assert st.args == ["ran", "recovered"]  # the payload the old version kept
    assert not r.exists(f"working:{dead}:default") and not r.hexists("working_lists", dead)
    assert r.lrange(f"working:{live}:default", 0, -1) == [busy]
    assert r.hexists("working_lists", live)


def test_the_recoveries_an_old_process_counted_still_count(worker, r):
    """A job that killed its process twice under the old version is buried at its third start,
    not run: the counts were merged, not lost."""
    jid = "d" * 24
    r.hset("recoveries", jid, 2)
    r.expire("recoveries", 7 * 24 * 3600)
    r.lpush("queue:default", job_json(jid, "ran", "poison"))
    r.sadd("queues", "default")
    worker()
    ((member, _score),) = wait_for(lambda: r.zrange("dead", 0, -1, withscores=True))
    buried = json.loads(member)
    assert buried["jid"] == jid and buried["error_class"] == "djqueue.errors.ProcessDied"
    assert "3 times" in buried["error_message"]
    assert not r.exists("ran")
    assert not r.exists("recoveries", "djqueue:recoveries")


def test_a_status_an_old_process_writes_after_the_upgrade_is_read(worker, r):
    """A rolling deploy: an old worker still running finishes a job after the new worker's
    upgrade step. Its status is found, and an end it wrote beats the new name's earlier
    state."""
    worker()
    wait_for(lambda: r.get("djqueue:layout"), what="the upgrade step")
    late = "e" * 24
    old_status(r, late, "completed", result='"late"')
    assert djqueue.status(late).state == "completed"
    assert djqueue.result(late, timeout=5) == "late"
    both = "f" * 24
    r.hset(f"djqueue:status:{both}", mapping={"state": "retry", "retention": "60", "attempts": 1})
    old_status(r, both, "completed", result='"second try"', attempts=2)
    st = djqueue.status(both)
    assert st.state == "completed" and st.value == "second try" and st.attempts == 2


def test_the_upgrade_is_idempotent_keeps_other_apps_keys_and_knows_the_namespace(redis_url, r):
    client = redis.Redis.from_url(redis_url)
    keys = Keys("app")
    jid = "0" * 24
    r.hset(f"app:status:{jid}", mapping={"state": "pending", "retention": "60"})
    r.expire(f"app:status:{jid}", 1000)
    r.set("app:status:banner", "an app's own key")
    r.hset("app:status:report", mapping={"state": "draft"})  # an app's hash: no retention
    r.hset("status:" + "1" * 24, mapping={"state": "pending", "retention": "60"})  # not app:
    both = "2" * 24  # an old process wrote the old name after a new one wrote the new name
    r.hset(f"app:status:{both}", mapping={"state": "completed", "retention": "60"})
    r.hset(f"app:djqueue:status:{both}", mapping={"state": "active", "retention": "60"})
    done = upgrade(client, keys)
    assert done is not None and (done.statuses, done.statuses_left, done.scanned) == (1, 1, True)
    assert r.hget(f"app:status:{both}", "state") == "completed"  # left for the read to pick
    assert r.hget(f"app:djqueue:status:{both}", "state") == "active"
    assert r.hgetall(f"app:djqueue:status:{jid}") == {"state": "pending", "retention": "60"}
    assert 0 < r.ttl(f"app:djqueue:status:{jid}") <= 1000
    assert r.get("app:status:banner") == "an app's own key"
    assert r.hgetall("app:status:report") == {"state": "draft"}
    assert r.exists("status:" + "1" * 24)
    again = upgrade(client, keys)
    assert again is not None and (again.statuses, again.recoveries, again.scanned) == (0, 0, False)
    r.set("app:djqueue:upgrade", "1")  # another process is upgrading
    assert upgrade(client, keys) is None


def test_a_namespace_with_pattern_characters_is_matched_as_written(redis_url, r):
    client = redis.Redis.from_url(redis_url)
    jid = "3" * 24
    for namespace in ("[ns]", "n"):  # SCAN would read "[ns]:status:*" as "n:" or "s:"
        r.hset(f"{namespace}:status:{jid}", mapping={"state": "pending", "retention": "60"})
    done = upgrade(client, Keys("[ns]"))
    assert done is not None and done.statuses == 1
    assert r.exists(f"[ns]:djqueue:status:{jid}") and r.exists(f"n:status:{jid}")


def test_a_recoveries_key_of_the_wrong_type_is_named_and_the_worker_runs(worker, r, caplog):
    r.set("recoveries", "not a hash")
    jobs_for_worker.record.perform_later("ran", "after")
    worker()
    assert wait_for(lambda: r.lrange("ran", 0, -1)) == ["['after']"]
    assert "recoveries or djqueue:recoveries is not a hash: crash recoveries not merged" in (
        caplog.text
    )
    assert r.get("recoveries") == "not a hash"  # left for an operator to look at
