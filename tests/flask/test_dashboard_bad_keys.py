"""The Flask dashboard meeting keys of the wrong type: every page answers, and the page that
reads the bad key names it and its type, instead of a 500 (the Django admin shows the same
pages, `tests/django/test_admin_bad_keys.py`)."""

from __future__ import annotations

import html
import json
import logging
import time
from typing import Any

import pytest
import redis

import djqueue
from djqueue.periodic_cron import iso, parse
from djqueue.periodic_declaration import build
from djqueue.store import Keys
from djqueue.store.periodic import PeriodicStore
from tests.bad_entries import ODD_QUEUE, assert_advises, write_odd_queue
from tests.flask import test_dashboard_lifecycle

#: The dashboard open to everyone, as the lifecycle tests mount it.
client = test_dashboard_lifecycle.client


@djqueue.job(name="flask_bad.ok")
def ok(n: int) -> None:
    pass


def page(client: Any, url: str, **query: str) -> str:
    answer = client.get(url, query_string=query)
    assert answer.status_code == 200, (url, answer.status_code)
    return html.unescape(answer.text)


def test_a_queue_key_of_the_wrong_type(client: Any, r: redis.Redis) -> None:
    ok.perform_later(1)
    r.set("queue:broken", "x")
    r.sadd("queues", "broken")
    broken = page(client, "/jobs/queues/broken")
    assert "queue:broken holds a string, not a list" in broken
    assert "Look at it with redis-cli GET queue:broken, then delete or fix it" in broken
    queues = page(client, "/jobs/queues")
    assert "queue:broken holds a string, not a list" in queues and "default" in queues
    dashboard = page(client, "/jobs/")
    assert "queue:broken holds a string, not a list" in dashboard
    assert 'data-figure="enqueued">1<' in dashboard


@pytest.mark.parametrize(
    ("key", "url"), [("retry", "retries"), ("schedule", "scheduled"), ("dead", "dead")]
)
def test_a_job_set_of_the_wrong_type(client: Any, r: redis.Redis, key: str, url: str) -> None:
    r.rpush(key, "x")
    listing = page(client, f"/jobs/{url}")
    assert f"{key} holds a list, not a sorted set" in listing
    assert f"redis-cli LRANGE {key} 0 -1," in listing
    assert f"{key} holds a list, not a sorted set" in page(client, f"/jobs/{url}/1-{'a' * 24}")
    dashboard = page(client, "/jobs/")
    assert f"{key} holds a list, not a sorted set" in dashboard
    assert "Processed" in dashboard


def test_counters_and_processes_of_the_wrong_type(client: Any, r: redis.Redis) -> None:
    r.set("stat:processed", "lots")
    r.hset("stat:failed", "x", "1")
    r.set("processes", "x")
    today = time.strftime("%Y-%m-%d", time.gmtime())
    r.set(f"stat:processed:{today}", "many")
    dashboard = page(client, "/jobs/")
    assert 'stat:processed holds "lots", not an integer' in dashboard
    assert "stat:failed holds a hash, not a string" in dashboard
    assert "processes holds a string, not a set" in dashboard
    assert f'stat:processed:{today} holds "many", not an integer' in dashboard
    assert "processes holds a string, not a set" in page(client, "/jobs/busy")
    assert client.get("/jobs/live").status_code == 200


def test_a_process_hash_of_the_wrong_type(client: Any, r: redis.Redis) -> None:
    """Not a heartbeat: the member is pruned as dead (a live process replaces its own hash at
    its next beat), and the pages answer."""
    r.sadd("processes", "host:1:abcdefabcdef")
    r.set("host:1:abcdefabcdef", "x")
    r.set("host:1:abcdefabcdef:work", "x")
    assert "Nothing is running" in page(client, "/jobs/busy")
    assert not r.sismember("processes", "host:1:abcdefabcdef")
    assert "Processed" in page(client, "/jobs/")


def test_find_a_job_whose_status_is_bad(client: Any, r: redis.Redis) -> None:
    r.set(f"djqueue:status:{'a' * 24}", "x")
    found = page(client, "/jobs/job", jid="a" * 24)
    assert f"djqueue:status:{'a' * 24} holds a string, not a hash" in found
    assert "redis-cli (TYPE, then GET for a string, LRANGE for a list" in found
    r.hset(f"djqueue:status:{'b' * 24}", mapping={"state": "pending", "attempts": "many"})
    found = page(client, "/jobs/job", jid="b" * 24)
    assert "pending" in found
    assert f'djqueue:status:{"b" * 24} has attempts "many", not an integer' in found


def test_a_periodic_job_whose_pushed_job_has_a_bad_status(
    client: Any, r: redis.Redis, caplog: pytest.LogCaptureFixture
) -> None:
    """An entry's page reads the state of each job its history names: one status key of the
    wrong type shows no state, is logged once by name, and the rest of the page still shows."""
    keys = Keys()
    entry = build(name="p.bad_status", cron="*/5 * * * *", job="flask_bad.ok", args=[1])
    tick = parse(entry.cron).previous(time.time())
    PeriodicStore(r, keys).save(entry.name, entry.fields(), (tick, iso(tick)))
    good, bad = "c" * 24, "d" * 24
    for jid in (good, bad):
        r.lpush(keys.cron_history(entry.name), json.dumps({"jid": jid, "enqueued": iso(tick)}))
    r.hset(keys.status(good), mapping={"state": "completed"})
    r.set(keys.status(bad), "x")
    with caplog.at_level(logging.ERROR, logger="djqueue.store"):
        found = page(client, "/jobs/periodic/p.bad_status")
    assert f'<tr data-jid="{good}">' in found and f'<tr data-jid="{bad}">' in found
    assert "completed" in found
    assert f"bad key {keys.status(bad)}: it holds a string, not a hash" in caplog.text


@ODD_QUEUE
def test_the_advice_names_the_read_that_fits(
    client: Any, r: redis.Redis, write: Any, held: str, read: str
) -> None:
    write_odd_queue(r, write)
    assert_advises(page(client, "/jobs/queues/odd"), held, read)
