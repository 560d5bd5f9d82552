"""The admin meeting keys of the wrong type: every page answers, and the page that reads the
bad key names it and its type, instead of a 500 (the same pages as the Flask dashboard's,
`tests/flask/test_dashboard_bad_keys.py`)."""

from __future__ import annotations

import html
import time
from typing import Any

import pytest
import redis
from django.test import Client

from tests.bad_entries import ODD_QUEUE, assert_advises, write_odd_queue

#: The dashboard reads the outbox's figures from every database that may hold its table.
pytestmark = pytest.mark.django_db(databases=["default", "other"])

ADMIN = "/admin/djqueue"


def page(client: Client, url: str, **query: str) -> str:
    answer = client.get(url, query)
    assert answer.status_code == 200, (url, answer.status_code)
    return html.unescape(answer.content.decode())


def test_a_queue_key_of_the_wrong_type(root_client: Client, r: redis.Redis) -> None:
    r.set("queue:broken", "x")
    r.sadd("queues", "broken")
    broken = page(root_client, f"{ADMIN}/queue/broken/")
    assert "queue:broken holds a string, not a list" in broken
    assert "Look at it with redis-cli GET queue:broken, then delete or fix it" in broken
    assert "queue:broken holds a string, not a list" in page(root_client, f"{ADMIN}/queue/")
    assert "queue:broken holds a string, not a list" in page(root_client, f"{ADMIN}/dashboard/")


@pytest.mark.parametrize(
    ("key", "model"), [("retry", "retryjob"), ("schedule", "scheduledjob"), ("dead", "deadjob")]
)
def test_a_job_set_of_the_wrong_type(
    root_client: Client, r: redis.Redis, key: str, model: str
) -> None:
    r.rpush(key, "x")
    listing = page(root_client, f"{ADMIN}/{model}/")
    assert f"{key} holds a list, not a sorted set" in listing
    assert f"redis-cli LRANGE {key} 0 -1," in listing
    assert f"{key} holds a list, not a sorted set" in page(
        root_client, f"{ADMIN}/{model}/1-{'a' * 24}/"
    )
    assert f"{key} holds a list, not a sorted set" in page(root_client, f"{ADMIN}/dashboard/")


def test_counters_and_processes_of_the_wrong_type(root_client: Client, r: redis.Redis) -> None:
    r.set("stat:processed", "lots")
    r.set("processes", "x")
    today = time.strftime("%Y-%m-%d", time.gmtime())
    r.hset(f"stat:failed:{today}", "x", "1")
    dashboard = page(root_client, f"{ADMIN}/dashboard/")
    assert 'stat:processed holds "lots", not an integer' in dashboard
    assert "processes holds a string, not a set" in dashboard
    assert "processes holds a string, not a set" in page(root_client, f"{ADMIN}/busy/")
    assert root_client.get(f"{ADMIN}/dashboard/live/").status_code == 200


def test_find_a_job_whose_status_is_bad(root_client: Client, r: redis.Redis) -> None:
    r.set(f"djqueue:status:{'a' * 24}", "x")
    found = page(root_client, f"{ADMIN}/dashboard/job/", jid="a" * 24)
    assert f"djqueue:status:{'a' * 24} holds a string, not a hash" in found
    assert "redis-cli (TYPE, then GET for a string, LRANGE for a list" in found
    r.hset(f"djqueue:status:{'b' * 24}", mapping={"state": "pending", "attempts": "many"})
    found = page(root_client, f"{ADMIN}/dashboard/job/", jid="b" * 24)
    assert f'djqueue:status:{"b" * 24} has attempts "many", not an integer' in found


@ODD_QUEUE
def test_the_advice_names_the_read_that_fits(
    root_client: Client, r: redis.Redis, write: Any, held: str, read: str
) -> None:
    write_odd_queue(r, write)
    assert_advises(page(root_client, f"{ADMIN}/queue/odd/"), held, read)
