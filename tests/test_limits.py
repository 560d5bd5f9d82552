"""Limiters in Redis: what each kind lets in and refuses, across callers, and what it shows."""

from __future__ import annotations

import json
import re

import pytest
import redis

import djqueue
from djqueue import limits
from djqueue.api import Queue
from djqueue.client import get_client
from djqueue.store.limits import LimitStore

pytestmark = pytest.mark.usefixtures("held_slots_forgotten")


def test_a_concurrency_limiter_lets_in_its_limit_and_refuses_the_next(store):
    stripe = limits.concurrent("stripe", 2)
    limits.enter([stripe], "a", store, lease=30)
    limits.enter([stripe], "b", store, lease=30)
    with pytest.raises(djqueue.OverLimit, match="'stripe'"):
        limits.enter([stripe], "c", store, lease=30)
    limits.leave([stripe], "a", store)
    limits.enter([stripe], "c", store, lease=30)
    (figures,) = store.figures()
    assert (figures.name, figures.kind, figures.limit, figures.used, figures.hits) == (
        "stripe",
        "concurrent",
        2,
        2,
        1,
    )


def test_a_slot_whose_lease_ran_out_is_free_again(store, r):
    stripe = limits.concurrent("stripe", 1)
    limits.enter([stripe], "dead-worker", store, lease=0.2)
    with pytest.raises(djqueue.OverLimit):
        limits.enter([stripe], "other", store, lease=30)
    r.zadd("djqueue:limit:stripe", {"dead-worker": 1.0})  # its lease, long past
    limits.enter([stripe], "other", store, lease=30)
    assert r.zrange("djqueue:limit:stripe", 0, -1) == ["other"]


def test_a_renewed_lease_outlives_its_first_expiry(store, r):
    stripe = limits.concurrent("stripe", 1)
    limits.enter([stripe], "alive", store, lease=1)
    first = r.zscore("djqueue:limit:stripe", "alive")
    assert store.renew(limits.held(), 60) == 1
    assert r.zscore("djqueue:limit:stripe", "alive") > first + 50
    limits.leave([stripe], "alive", store)
    assert ("stripe", "alive") not in limits.held()


def test_a_window_refuses_past_its_limit_and_a_refusal_takes_nothing(store, r):
    mail = limits.window("mailgun", 3, per=60)
    stripe = limits.concurrent("stripe", 5)
    for holder in "abc":
        limits.enter([mail], holder, store)
    with pytest.raises(djqueue.OverLimit) as refused:
        limits.enter([stripe, mail], "d", store)
    assert refused.value.name == "mailgun"
    assert r.zcard("djqueue:limit:stripe") == 0  # all or nothing
    figures = {f.name: f for f in store.figures()}
    assert (figures["mailgun"].used, figures["mailgun"].hits) == (3, 1)
    assert figures["stripe"].hits == 0


def test_a_bucket_allows_a_burst_then_refuses(store):
    api = limits.bucket("api", 4, per=3600)
    for holder in "abcd":
        limits.enter([api], holder, store)
    with pytest.raises(djqueue.OverLimit):
        limits.enter([api], "e", store)
    (figures,) = store.figures()
    assert (figures.kind, figures.used, figures.hits) == ("bucket", 4, 1)


def test_entered_in_code_the_slot_is_held_inside_the_block_only(redis_url, r):
    stripe = limits.concurrent("stripe", 1)
    before = limits.held()
    with stripe:
        assert len(limits.held()) == len(before) + 1
        assert r.zcard("djqueue:limit:stripe") == 1
        with pytest.raises(djqueue.OverLimit), limits.concurrent("stripe", 1):
            pass
    assert r.zcard("djqueue:limit:stripe") == 0
    assert limits.held() == before


def test_a_limit_is_no_option_of_one_push():
    @djqueue.job(name="limits_test.capped", concurrency=2)
    def capped() -> None:
        pass

    assert capped.job_limits == (limits.concurrent("job:limits_test.capped", 2),)
    with pytest.raises(TypeError, match=r"concurrency belongs to the job's declaration"):
        capped.set(concurrency=5)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: limits.concurrent("", 1), "name"),
        (lambda: limits.concurrent("x", 0), "limit"),
        (lambda: limits.window("x", 5, per=0), "per"),
        (lambda: djqueue.job(concurrency=0)(lambda: None), "concurrency"),
        (lambda: djqueue.job(limits=limits.concurrent("x", 1))(lambda: None), "limits"),
    ],
)
def test_a_bad_limit_is_refused_where_it_is_declared(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def fill_limiters(r: redis.Redis) -> None:
    """Three limiters as workers leave them: three of three slots held and a job parked, a
    window with one refusal, a bucket with a hostile name; and a definition no version
    wrote."""
    client = get_client()
    store = LimitStore(client.redis, client.keys)
    stripe = limits.concurrent("stripe", 3)
    for holder in ("a", "b", "c"):
        limits.enter([stripe], holder, store, lease=60)
    working = "djqueue:working:host:1:abc:default"
    r.lpush(working, '{"class": "T", "args": [], "jid": "0123456789abcdef01234567"}')
    with pytest.raises(djqueue.OverLimit):
        limits.enter(
            [stripe], "0123456789abcdef01234567", store, 60, (working, r.lindex(working, 0))
        )
    mail = limits.window("mailgun", 1, per=60)
    limits.enter([mail], "c", store)
    with pytest.raises(djqueue.OverLimit):
        limits.enter([mail], "d", store)
    limits.enter([limits.bucket("<b>api</b>", 5, per=3600)], "e", store)
    r.hset("djqueue:limiters", "broken", "{not json")
    # The slots stay held, as by a worker elsewhere: this process does not renew them.
    with limits._lock:
        for holder in ("a", "b", "c"):
            del limits._held[("stripe", holder)]


def _cells(page: str, name: str) -> list[str]:
    row = re.search(rf'<tr data-name="{re.escape(name)}">(.*?)</tr>', page, re.S)
    assert row is not None, f"no row for {name}"
    return [
        (re.sub(r"<[^>]+>", " ", cell).split() or [""])[-1]
        for cell in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row[1], re.S)
    ]


def check_limits_page(page: str) -> None:
    """What the Limits page shows for `fill_limiters`, whichever mount serves it."""
    assert re.findall(r'<tr data-name="([^"]+)"', page) == [
        "&lt;b&gt;api&lt;/b&gt;",
        "mailgun",
        "stripe",
    ]
    assert _cells(page, "stripe")[3:] == ["3", "1", "1"]  # in use, refused, parked
    assert "3 at once" in page
    assert _cells(page, "mailgun")[3:] == ["1", "1", ""]  # a window parks nothing
    assert "1 per 60 s" in page and "sliding window" in page
    assert _cells(page, "&lt;b&gt;api&lt;/b&gt;")[3:] == ["1", "0", ""]
    assert "<b>api" not in page
    assert "broken" in page and "unreadable definition" in page


def check_queue_pages(queues: str, default: str) -> None:
    """What the Queues page and the default queue's page show of `fill_limiters`'s parked
    job, whichever mount serves them: beside the size, linked to the Limits page."""
    assert _cells(queues, "default")[1:3] == ["0", "1"]  # size, parked
    assert re.search(r'href="[^"]*/limits/?"[^>]*>1 job parked, waiting for a limiter', default)


def test_the_limits_command_prints_each_limiter(redis_url, r, capsys):
    from djqueue.worker import cli

    fill_limiters(r)
    assert cli.main(["limits", "--redis-url", redis_url]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["limiter", "kind", "limit", "in", "use", "refused", "parked"]
    assert lines[1].split() == ["<b>api</b>", "bucket", "5", "per", "3600s", "1", "0"]
    assert lines[2].split() == ["mailgun", "window", "1", "per", "60s", "1", "1"]
    assert lines[3].split() == ["stripe", "concurrent", "3", "at", "once", "3", "1", "1"]
    assert lines[4].startswith("bad limiter broken: unreadable definition")
    assert cli.main(["queues", "--redis-url", redis_url]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["queue", "size", "parked", "latency"]
    assert lines[1].split() == ["default", "0", "1", "0.0s"]  # listed for its parked job


def test_a_queues_parked_jobs_are_counted_beside_its_size(redis_url, r):
    store = LimitStore(r, get_client().keys)
    stripe = limits.concurrent("stripe", 1)
    limits.enter([stripe], "holder", store, lease=60)
    working = "djqueue:working:host:1:abc:mail"
    for n, queue in enumerate(["mail", "mail", None, "mail"]):
        job = {"class": "T", "args": [n], "jid": f"{n:024x}", **({"queue": queue} if queue else {})}
        r.lpush(working, json.dumps(job))
        with pytest.raises(djqueue.OverLimit):
            limits.enter([stripe], job["jid"], store, 60, (working, r.lindex(working, 0)))
    r.lpush("djqueue:parked:other", '{"class": "T", "args": [], "queue": "mail"}')
    r.sadd("djqueue:parked", "other", "gone")
    r.lpush("queue:mail", '{"class": "T", "args": []}')
    r.sadd("queues", "mail")
    assert store.parked_by_queue().counts == {"mail": 4, "default": 1}
    assert [(q.name, q.size, q.parked) for q in Queue.summary()] == [
        ("default", 0, 1),
        ("mail", 1, 4),
    ]
    assert Queue("mail").parked == 4 and Queue("empty").parked == 0
