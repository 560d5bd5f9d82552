"""Bad entries both UIs must show the same way (the Django admin's and the Flask dashboard's
tests call these on their own pages): periodic entries djqueue cannot read, and queue keys of
each wrong type with the redis-cli read the page should advise."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
import redis

#: A queue key written as another type: what the page says it holds, and the read it advises.
ODD_QUEUE = pytest.mark.parametrize(
    ("write", "held", "read"),
    [
        (
            lambda r: r.zadd("queue:odd", {"x": 1}),
            "a sorted set",
            "ZRANGE queue:odd 0 -1 WITHSCORES",
        ),
        (lambda r: r.hset("queue:odd", "x", "1"), "a hash", "HGETALL queue:odd"),
        (lambda r: r.sadd("queue:odd", "x"), "a set", "SMEMBERS queue:odd"),
    ],
)

#: What the action menu says of a bad entry it was asked to run.
SKIPPED = "Skipped broken: djqueue cannot read it, so it can only be deleted."


def write_odd_queue(r: redis.Redis, write: Callable[[redis.Redis], Any]) -> None:
    write(r)
    r.sadd("queues", "odd")


def assert_advises(page: str, held: str, read: str) -> None:
    assert f"queue:odd holds {held}, not a list" in page
    assert f"Look at it with redis-cli {read}, then delete or fix it" in page


def write_bad_periodic(r: redis.Redis) -> None:
    """Beside ``cron_job:broken`` (a string): a hash without its cron, and a sound entry."""
    r.hset("cron_job:nocron", mapping={"name": "nocron", "klass": "t.fine"})
    r.hset("cron_job:fine", mapping={"name": "fine", "cron": "* * * * *", "klass": "t.fine"})
    r.sadd("cron_jobs", "cron_job:nocron", "cron_job:fine")


def assert_bad_periodic(listing: str, broken: str, nocron: str) -> None:
    """The list (its status, summary and row buttons) and the two bad entries' pages (banner,
    advice, Delete only, nothing made up), unescaped."""
    assert "3 periodic jobs · 1 enabled · 0 disabled · 2 bad" in listing
    assert listing.count('<span class="djqueue-tag djqueue-bad">bad</span>') == 2
    row = re.search(r'<tr data-name="broken">.*?</tr>', listing, re.S)[0]
    assert 'value="delete:broken"' in row and "run_now:" not in row and "able:" not in row
    assert "(none)" not in row and "queue default" not in row and "next: never" not in row
    assert "sidekiq-cron" not in row and "enabled" not in row
    assert 'value="run_now:fine"' in listing and 'value="disable:fine"' in listing
    assert "cron_job:broken holds a string, not a hash: delete or fix the key" in broken
    assert "Look at it with redis-cli GET cron_job:broken, then delete or fix it" in broken
    assert 'value="delete"' in broken and 'value="run_now"' not in broken
    assert 'value="disable"' not in broken and 'value="enable"' not in broken
    assert "Declared in" not in broken and "Catch up" not in broken and "Message" not in broken
    assert "cron_job:nocron cannot be read: no 'cron' field" in nocron
    assert "Look at it with redis-cli HGETALL cron_job:nocron, then" in nocron
