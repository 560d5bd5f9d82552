"""Where djqueue used to part from Sidekiq 6.4.1, checked against the real thing (Debian's
ruby-sidekiq): how the ``retry`` field is read, what a malformed entry becomes in ``dead`` (and
whether Sidekiq's Web UI still renders it), and floats written byte for byte as Ruby writes
them, so Sidekiq's API finds djqueue's entries."""

from __future__ import annotations

import json
import math
import random
import time

import pytest

import djqueue
from djqueue.payload import dumps

from .sidekiq_support import require_sidekiq, ruby, sidekiq_process
from .worker_support import wait_for

require_sidekiq()


@djqueue.job(name="FailsRetryOff", retry=False)
def fails_retry_off(*args: object) -> None:
    raise ValueError("failing on purpose")


@djqueue.job(name="FailsDefault")
def fails_default(*args: object) -> None:
    raise ValueError("failing on purpose")


#: (job, payload fields besides class/args/jid, where Sidekiq leaves the failed job)
RETRY_CASES = [
    ("FailsRetryOff", {}, "dropped"),  # no retry field: the job's own option, false
    ("FailsRetryOff", {"retry": None}, "dropped"),
    ("FailsDefault", {}, "retry"),  # no retry field: the job's own option, default true
    ("FailsDefault", {"retry": False}, "dropped"),
    ("FailsDefault", {"retry": "True"}, "retry"),  # a truthy non-integer: default retries
    ("FailsDefault", {"retry": 0}, "dead"),
    ("FailsDefault", {"retry": 2}, "retry"),
]


def where(r, jid: str) -> str:
    for key in ("retry", "dead"):
        if any(json.loads(m).get("jid") == jid for m in r.zrange(key, 0, -1)):
            return key
    return "dropped"


def test_the_retry_field_means_what_it_means_to_sidekiq(redis_url, r, worker):
    """The same payloads, written as another client writes them, fail in Sidekiq and in
    djqueue; each ends in the same place in both."""
    jids = {"ruby": [], "py": []}
    for side in jids:
        for n, (name, fields, _) in enumerate(RETRY_CASES):
            jid = f"{side}{n:02d}".ljust(24, "0")
            payload = {"class": name, "args": [n], "jid": jid, "queue": side, **fields}
            r.sadd("queues", side)
            r.lpush(f"queue:{side}", json.dumps(payload))
            jids[side].append(jid)

    with sidekiq_process(redis_url, "retry_app.rb", "ruby"):
        worker(queues=(("py", 0),), concurrency=2)
        wait_for(
            lambda: len(set(r.lrange("ran", 0, -1))) == len(RETRY_CASES),
            timeout=60,
            what="every Ruby job run",
        )
        wait_for(lambda: r.llen("queue:py") == 0, what="every djqueue job run")
        expected = [case[2] for case in RETRY_CASES]

        def placed(side: str) -> list[str]:
            return [where(r, jid) for jid in jids[side]]

        try:  # a dropped job leaves no trace: give the others time to land, then compare
            wait_for(lambda: placed("ruby") == expected == placed("py"), timeout=30)
        except AssertionError:
            pass
        assert placed("ruby") == expected  # what Sidekiq 6.4.1 itself does
        assert placed("py") == expected  # and djqueue does the same


def test_a_bare_array_in_a_queue_leaves_sidekiqs_dead_page_working(redis_url, r, worker):
    r.lpush("queue:default", "[1,2]")
    r.lpush("queue:default", '{"no": "class"}')
    worker()
    wait_for(lambda: r.zcard("dead") == 2 and r.llen("queue:default") == 0)

    page = json.loads(ruby(redis_url, "web_page.rb", "/morgue"))

    assert page["status"] == 200, page["body"][:2000]
    assert page["body"].count("djqueue.Malformed") == 2
    assert "&quot;[1,2]&quot;" in page["body"]
    assert "djqueue.errors.MalformedJob: not a JSON object but a list" in page["body"]
    # What the wrapping prevents: the same page with the bare array in it fails.
    r.zadd("dead", {"[1,2]": time.time()})
    assert json.loads(ruby(redis_url, "web_page.rb", "/morgue"))["status"] == 500


def interesting_floats(n: int) -> list[float]:
    """Edges of Ruby's notation switches, whole numbers, and random values of every size."""
    rng = random.Random(7)
    values = [
        1e-05,
        1e-4,
        9.999e-05,
        0.0001,
        2.5e15,
        1e15,
        1e16,
        999999999999999.9,
        1234567890123456.8,
        12345678901234567.0,
        5e-324,
        1.7976931348623157e308,
        0.1,
        -0.0,
        0.0,
        1.0,
        -2.5e15,
        123456789012345.6,
    ]
    while len(values) < n:
        mantissa = rng.uniform(-10, 10)
        exponent = rng.randint(-330, 308)
        value = mantissa * 10.0**exponent if -300 < exponent < 300 else mantissa
        if rng.random() < 0.2:
            value = float(round(value))
        if math.isfinite(value):
            values.append(value)
    return values


def test_floats_are_written_byte_for_byte_as_ruby_writes_them(redis_url):
    values = interesting_floats(4000)
    ours = dumps({"class": "X", "args": values, "nested": {"f": values[:50]}, "s": "1e-05"})
    assert ruby(redis_url, "regenerate.rb", stdin=ours) == ours


def test_a_ruby_reschedule_finds_djqueues_entry(redis_url, r):
    """Sidekiq's SortedEntry#reschedule re-encodes the job and ZINCRBYs that member: a byte of
    difference would add a second copy, and the job would run twice."""
    at = time.time() + 3600
    jid = fails_default.perform_at(at, 1e-05, 2.5e15, 0.1, -1e300, [1e16], {"x": 3.0e-7})
    later = at + 1800.0

    assert ruby(redis_url, "reschedule.rb", repr(later)) == "1"

    ((member, score),) = r.zrange("schedule", 0, -1, withscores=True)
    assert json.loads(member)["jid"] == jid
    assert score == pytest.approx(later)
