"""Batches as Redis holds them, read back: the keys are written here directly, in the layout
the batch runtime writes (docs/design.md "Batches"), and read through `read_batch`,
`list_batches` and `djqueue.api`; `fill_batches` and the page checks serve both mounts' tests."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from typing import Any

import pytest
import redis

import djqueue
from djqueue.api import Batch, Batches, Queue
from djqueue.client import get_client
from djqueue.store import Keys
from djqueue.store.batch_read import (
    FAILED_READ,
    PENDING_SHOWN,
    BatchState,
    child_batches,
    list_batches,
    read_batch,
)

PARENT, CHILD, DONE, GONE, EXPIRED, BAD = (n * 12 for n in "a1 c2 d3 e4 f5 b6".split())
#: The child batch's jobs not yet succeeded; the first two failed (one waits to retry, one died).
PENDING = [f"{n:024x}" for n in range(1, 7)]
RETRYING, DIED = PENDING[0], PENDING[1]
#: The rows of the listing, newest first (EXPIRED's hash is gone: left out).
LISTED = [BAD, GONE, DONE, CHILD, PARENT]
STATUSES = {GONE: "cancelled", DONE: "success", CHILD: "dead", PARENT: "complete"}


def write_batch(r: redis.Redis, bid: str, **fields: Any) -> None:
    """A batch's hash and listing entry as the runtime writes them (every value a string)."""
    keys = Keys()
    values = {k: json.dumps(v) if isinstance(v, dict) else str(v) for k, v in fields.items()}
    r.hset(keys.batch(bid), mapping=values)
    r.zadd(keys.batches, {bid: float(fields["created_at"])})


def waiting(r: redis.Redis, bid: str, jid: str, queue: str = "default", **job: Any) -> str:
    """A job of batch ``bid`` waiting in ``queue``, as the batch's push leaves it: in the queue
    with its ``bid``, and among the batch's pending jids. Returns the jid."""
    keys = Keys()
    now = time.time()
    job = {"class": "reports.part", "args": [], **job, "jid": jid, "queue": queue, "bid": bid}
    r.lpush(keys.queue(queue), json.dumps({**job, "created_at": now, "enqueued_at": now}))
    r.sadd(keys.queues, queue)
    r.sadd(keys.batch_pending(bid), jid)
    return jid


def fill_batches(r: redis.Redis, now: float | None = None) -> float:
    """Five batches in every state, a listed one that expired and one of the wrong type; the
    child's failed jobs in the retry and dead sets, with its ``bid``. Returns the time used."""
    now = now or time.time()
    keys = Keys()
    write_batch(
        r,
        PARENT,
        description="nightly report",
        created_at=now - 300,
        total=2,
        pending=0,
        remaining=0,
        failures=0,
        dead=0,
        children=1,
        callbacks={
            "complete": [{"class": "reports.log", "args": ["done"], "queue": "low"}],
            "success": [{"class": "reports.notify", "args": [7], "queue": "default"}],
        },
        complete_at=now - 200,
    )
    write_batch(
        r,
        CHILD,
        description="<b>part 1</b>",
        created_at=now - 250,
        total=10,
        pending=6,
        remaining=3,
        failures=2,
        dead=1,
        children=0,
        parent=PARENT,
        callbacks={
            "death": [
                {"class": "reports.alert", "args": [{"password": "s3cret"}], "queue": "default"}
            ]
        },
        death_at=now - 100,
    )
    r.sadd(keys.batch_pending(CHILD), *PENDING)
    failure = {"class": "reports.part", "error_class": "ValueError"}
    r.hset(
        keys.batch_failed(CHILD),
        mapping={
            RETRYING: json.dumps({**failure, "error_message": "bad row 17", "at": now - 150}),
            DIED: json.dumps({**failure, "error_class": "KeyError", "at": now - 120}),
        },
    )
    job = {"class": "reports.part", "queue": "default", "bid": CHILD, "retry": True}
    job |= {"error_class": "ValueError", "error_message": "bad row 17", "failed_at": now - 150}
    r.zadd(keys.retry, {json.dumps({**job, "args": [17], "jid": RETRYING}): now + 60})
    r.zadd(keys.dead, {json.dumps({**job, "args": [18], "jid": DIED}): now - 120})
    write_batch(
        r,
        DONE,
        description="welcome mails",
        created_at=now - 100,
        total=5,
        pending=0,
        remaining=0,
        failures=1,
        dead=0,
        complete_at=now - 60,
        success_at=now - 50,
    )
    write_batch(
        r,
        GONE,
        description="old import",
        created_at=now - 50,
        total=4,
        pending=4,
        remaining=4,
        failures=0,
        dead=0,
        cancelled_at=now - 40,
    )
    r.zadd(keys.batches, {EXPIRED: now - 20, BAD: now - 10})
    r.set(keys.batch(BAD), "not a hash")
    return now


def check_batches_page(page: str, link: Callable[[str], str]) -> None:
    """What the Batches list shows for `fill_batches`, whichever mount serves it (``link``:
    the mount's URL below the tab, ``CHILD`` -> ``/jobs/batches/CHILD``)."""
    assert re.findall(r'<tr data-bid="([^"]+)"', page) == LISTED
    rows = dict(re.findall(r'<tr data-bid="([^"]+)">(.*?)</tr>', page, re.S))
    for bid, status in STATUSES.items():
        assert f'data-status="{status}"' in rows[bid], bid
        assert f'href="{link(bid)}"' in rows[bid]
    assert "&lt;b&gt;part 1&lt;/b&gt;" in rows[CHILD] and "<b>part" not in page
    assert "4 of 10 succeeded" in rows[CHILD]
    assert 'data-figure="failures">2<' in rows[CHILD] and 'data-figure="dead">1<' in rows[CHILD]
    # The succeeded part of the bar, then the dead part after it.
    assert 'class="djqueue-progress-succeeded" width="40.0"' in rows[CHILD]
    assert 'class="djqueue-progress-dead" x="40.0" width="10.0"' in rows[CHILD]
    assert "holds a string, not a hash" in rows[BAD] and f'href="{link(BAD)}"' in rows[BAD]
    assert "data-status" not in rows[BAD] and "djqueue-progress" not in rows[BAD]
    assert "5 of 5 succeeded" in rows[DONE]
    assert "of 6 batches" in page  # the expired one is counted until the janitor trims it


def check_batch_page(page: str, link: Callable[[str], str]) -> None:
    """What CHILD's page shows, whichever mount serves it."""
    assert "&lt;b&gt;part 1&lt;/b&gt;" in page and "<b>part" not in page
    assert 'data-status="dead"' in page and "4 of 10 succeeded" in page
    assert f'href="{link(PARENT)}" data-link="parent"' in page
    assert "On death" in page and "reports.alert" in page
    assert "s3cret" not in page and "********" in page
    jids = re.findall(r'<tr data-jid="([^"]+)">', page)
    assert jids == [DIED, RETRYING]  # the latest failure first
    assert "ValueError: bad row 17" in page and "KeyError" in page
    assert f'href="{link(CHILD + "/job/" + RETRYING)}"' in page
    pending = re.search(r'class="djqueue-batch-jids">(.*?)</p>', page, re.S)
    assert pending is not None and re.findall(r'data-jid="([^"]+)"', pending[1]) == PENDING
    for label, value in (("Jobs", "10"), ("Pending", "6"), ("Failures", "2"), ("Dead", "1")):
        assert re.search(rf"<th scope=\"row\">{label}</th><td><code>{value}</code>", page), label


@pytest.fixture
def keys(redis_url: str) -> Keys:
    return Keys()


@pytest.fixture
def client(redis_url: str) -> redis.Redis:
    return get_client().redis


def test_a_batch_reads_back_every_field_the_runtime_writes(client, keys, r):
    now = fill_batches(r)
    state = read_batch(client, keys, CHILD)
    assert state is not None
    assert (state.bid, state.description, state.parent) == (CHILD, "<b>part 1</b>", PARENT)
    assert state.created_at == pytest.approx(now - 250)
    figures = (state.total, state.pending, state.remaining, state.failures, state.dead)
    assert figures == (10, 6, 3, 2, 1)
    assert (state.children, state.succeeded) == (0, 4)
    assert state.callbacks == {
        "death": [{"class": "reports.alert", "args": [{"password": "s3cret"}], "queue": "default"}]
    }
    assert state.death_at == pytest.approx(now - 100)
    assert (state.complete_at, state.success_at, state.cancelled_at) == (None, None, None)
    assert state.pending_jids == PENDING
    assert set(state.failed) == {RETRYING, DIED}
    assert state.failed[RETRYING]["error_message"] == "bad row 17"
    assert state.failed[DIED]["at"] == pytest.approx(now - 120)
    assert state.problems == () and state.failing == 2
    assert (state.complete, state.successful, state.cancelled) == (False, False, False)
    assert state.status == "dead"


def test_each_state_reads_as_its_word(client, keys, r):
    fill_batches(r)
    for bid, status in STATUSES.items():
        state = read_batch(client, keys, bid)
        assert state is not None and state.status == status, bid
    parent = read_batch(client, keys, PARENT)
    assert parent is not None and parent.complete and not parent.successful
    assert parent.callbacks["success"][0]["args"] == [7]
    done = read_batch(client, keys, DONE)
    assert done is not None and done.complete and done.successful
    gone = read_batch(client, keys, GONE)
    assert gone is not None and gone.cancelled and not gone.complete


def test_the_words_follow_the_counts(client, keys, r):
    """Without the callbacks' times: complete once every job ran, success once every job and
    child batch succeeded, dead while a dead job keeps it from success."""

    def status(**fields: Any) -> str:
        write_batch(r, "x" * 24, created_at=1, **fields)
        state = read_batch(client, keys, "x" * 24)
        assert state is not None
        return state.status

    assert status(total=3, pending=3, remaining=3) == "pending"
    assert status(total=3, pending=1, remaining=0) == "complete"
    assert status(total=3, pending=0, remaining=0, children=1) == "complete"
    assert status(total=3, pending=0, remaining=0, children=0) == "success"
    assert status(total=3, pending=1, remaining=0, dead=1) == "dead"
    assert status(total=3, pending=0, remaining=0, dead=1) == "success"  # retried by hand
    r.delete(keys.batch("x" * 24))
    assert status(total=0, pending=0, remaining=0) == "pending"  # nothing added yet


def test_a_missing_batch_is_none(client, keys, r):
    fill_batches(r)
    assert read_batch(client, keys, EXPIRED) is None
    assert Batch(EXPIRED).state() is None
    assert read_batch(client, keys, "nope") is None


def test_the_listing_is_newest_first_paged_and_leaves_out_expired_batches(client, keys, r):
    fill_batches(r)
    states, total = list_batches(client, keys, 0, 25)
    assert total == 6
    assert [s.bid for s in states] == LISTED
    assert states[0].problems == ((keys.batch(BAD), "holds a string, not a hash"),)
    assert not states[0].readable and all(s.readable for s in states[1:])
    # The listing reads the hashes only.
    child = states[3]
    assert (child.total, child.failed, child.pending_jids) == (10, {}, [])
    assert [s.bid for s in list_batches(client, keys, 2, 2)[0]] == [GONE, DONE]
    assert list_batches(client, keys, 6, 25) == ([], 6)
    assert list_batches(client, keys, 0, 0) == ([], 6)
    states, total = Batches().page(3, 10)
    assert ([s.bid for s in states], total) == ([DONE, CHILD, PARENT], 6)
    assert Batches().size == 6


def test_a_batch_lists_its_children(client, keys, r):
    fill_batches(r)
    parent = read_batch(client, keys, PARENT)
    assert parent is not None
    assert child_batches(client, keys, parent) == [CHILD]
    assert Batch(PARENT).children(parent) == [CHILD]
    child = read_batch(client, keys, CHILD)
    assert child is not None and child_batches(client, keys, child) == []


def test_pending_jids_and_failures_are_capped(client, keys, r):
    write_batch(r, CHILD, created_at=1, total=1500, pending=1500, remaining=0, failures=1500)
    jids = [f"{n:024x}" for n in range(1500)]
    r.sadd(keys.batch_pending(CHILD), *jids)
    failure = json.dumps({"class": "x", "error_class": "E", "at": 1})
    r.hset(keys.batch_failed(CHILD), mapping=dict.fromkeys(jids, failure))
    state = read_batch(client, keys, CHILD)
    assert state is not None and len(state.pending_jids) == PENDING_SHOWN
    assert state.pending_jids == sorted(state.pending_jids)
    assert len(set(state.pending_jids)) == PENDING_SHOWN
    assert (len(state.failed), state.failing) == (FAILED_READ, 1500)
    assert set(state.failed) < set(jids) and state.problems == ()


def test_bad_keys_and_fields_are_named_and_the_rest_reads(client, keys, r):
    fill_batches(r)
    r.hset(keys.batch(CHILD), mapping={"total": "ten", "death_at": "soon", "callbacks": "[1"})
    r.delete(keys.batch_pending(CHILD))
    r.set(keys.batch_pending(CHILD), "x")
    r.hset(keys.batch_failed(CHILD), "zz", "{not json")
    state = read_batch(client, keys, CHILD)
    assert state is not None and state.failing == 3
    assert state is not None
    assert (state.total, state.pending, state.death_at, state.callbacks) == (0, 6, None, {})
    assert state.pending_jids == [] and state.failed["zz"] == {}
    assert set(state.failed) == {RETRYING, DIED, "zz"}
    assert set(state.problems) == {
        (keys.batch_pending(CHILD), "holds a string, not a set"),
        (keys.batch(CHILD), 'has total "ten", not an integer'),
        (keys.batch(CHILD), 'has death_at "soon", not a time'),
        (keys.batch(CHILD), "has callbacks that are not a JSON object of job lists"),
        (keys.batch_failed(CHILD), 'has zz "{not json", not a JSON object'),
    }
    assert Batch(CHILD).state() == state  # the batch's own hash reads: no BadKey
    r.delete(keys.batch_failed(CHILD))
    r.set(keys.batch_failed(CHILD), "x")
    state = read_batch(client, keys, CHILD)
    assert state is not None and (state.failed, state.failing) == ({}, 0)
    assert [p for p in state.problems if p[0] == keys.batch_failed(CHILD)] == [
        (keys.batch_failed(CHILD), "holds a string, not a hash")
    ]


def test_a_batch_hash_of_the_wrong_type_is_a_bad_key(client, keys, r):
    fill_batches(r)
    state = read_batch(client, keys, BAD)
    problem = (keys.batch(BAD), "holds a string, not a hash")
    assert state == BatchState(BAD, problems=(problem,), readable=False)
    with pytest.raises(djqueue.BadKey) as caught:
        Batch(BAD).state()
    assert (caught.value.key, caught.value.held) == (keys.batch(BAD), "string")
    r.delete(keys.batches)
    r.set(keys.batches, "x")
    with pytest.raises(djqueue.BadKey, match="holds a string, not a sorted set"):
        Batches().page()


def test_cancel_marks_the_batch_and_takes_its_waiting_jobs_out(client, keys, r):
    fill_batches(r)
    for jid in PENDING[2:4]:
        waiting(r, CHILD, jid)
    other = waiting(r, DONE, "9" * 24, args=[CHILD])  # another batch's, mentioning this one
    Batch(CHILD).cancel()
    state = Batch(CHILD).state()
    assert state is not None and state.cancelled and state.status == "cancelled"
    assert [job.jid for job in Queue("default")] == [other]
    assert r.zcard(keys.dead) == 1  # the dead job stays where it lies
