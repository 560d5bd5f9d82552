"""Wire compatibility checked against the real thing: Sidekiq 6.4 on Ruby (Debian's ruby-sidekiq).

Jobs pushed by djqueue run in Sidekiq; jobs pushed by Sidekiq's client are read by djqueue;
Sidekiq::API reads what djqueue writes.
"""

from __future__ import annotations

import json
import time

import pytest

import djqueue
from djqueue.payload import loads

from .sidekiq_support import require_sidekiq, ruby, sidekiq_process
from .worker_support import wait_for

require_sidekiq()


@pytest.fixture
def sidekiq(redis_url):
    """A real Sidekiq process on the test Redis, polling the schedule every second."""
    with sidekiq_process(redis_url, "app.rb", "default", env={"SIDEKIQ_POLL": "1"}) as process:
        yield process


def ran(r) -> list[dict]:
    return [json.loads(x) for x in r.lrange("ruby:ran", 0, -1)]


def test_djqueue_pushes_sidekiq_runs(redis_url, r, sidekiq):
    client = djqueue.Client()
    now_jid = client.push({"class": "RubyRecorder", "args": [1, "two", {"three": [3.5, None]}]})
    later_jid = client.push({"class": "RubyRecorder", "args": ["later"], "at": time.time() + 1})
    bulk = client.push_bulk({"class": "RubyRecorder", "args": [["b1"], ["b2"]]})

    results = wait_for(lambda: len(ran(r)) == 4 and ran(r), timeout=45)
    by_jid = {item["jid"]: item["args"] for item in results}
    assert by_jid[now_jid] == [1, "two", {"three": [3.5, None]}]
    assert by_jid[later_jid] == ["later"]
    assert by_jid[bulk[0]] == ["b1"] and by_jid[bulk[1]] == ["b2"]


def test_sidekiq_pushes_djqueue_reads(redis_url, r):
    jid = ruby(redis_url, "push.rb", "RubyRecorder", "critical", '[1, "x", {"y": [true]}]')
    assert r.smembers("queues") == {"critical"}
    payload = loads(r.lindex("queue:critical", 0))
    assert payload["jid"] == jid
    assert payload["class"] == "RubyRecorder"
    assert payload["args"] == [1, "x", {"y": [True]}]
    assert payload["queue"] == "critical"
    assert payload["retry"] is True
    assert isinstance(payload["created_at"], float)
    assert isinstance(payload["enqueued_at"], float)


def test_sidekiq_api_reads_djqueue_pushes(redis_url, r):
    @djqueue.job(name="compat.Reader", queue="default")
    def reader(x):
        return x

    reader.perform_later(1)
    reader.perform_later(2)
    at = time.time() + 3600
    scheduled_jid = reader.perform_at(at, 3)

    seen = json.loads(ruby(redis_url, "inspect.rb"))
    assert seen["enqueued"] == 2
    assert seen["queues"] == {"default": 2}
    assert seen["scheduled_size"] == 1
    assert seen["scheduled"][0]["jid"] == scheduled_jid
    assert seen["scheduled"][0]["at"] == pytest.approx(at, abs=0.001)
    assert 0 <= seen["default_latency"] < 60
