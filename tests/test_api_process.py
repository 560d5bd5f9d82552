"""Processes, busy work and counters, read from heartbeats written here in Sidekiq's format.

Each helper writes what a Sidekiq (or djqueue) heartbeat writes, so these tests do not need a
running worker; the variants cover what Sidekiq 6.4.1, 7 and 8 write.
"""

from __future__ import annotations

import datetime as dt
import json
import time

import pytest

import djqueue
from djqueue.api import ProcessSet, Stats, WorkSet
from djqueue.errors import EmbeddedProcess


def heartbeat(r, identity: str, busy: int = 0, quiet: bool = False, **info) -> None:
    hostname, pid, _ = identity.split(":")
    data = {
        "hostname": hostname,
        "started_at": time.time() - 3600,
        "pid": int(pid),
        "tag": "shop",
        "concurrency": 10,
        "queues": ["critical", "default"],
        "labels": ["blue"],
        "identity": identity,
        "version": "7.3.2",
        **info,
    }
    r.sadd("processes", identity)
    r.hset(
        identity,
        mapping={
            "info": json.dumps(data),
            "busy": busy,
            "beat": repr(time.time()),
            "quiet": "true" if quiet else "false",
            "rss": 204800,
            "rtt_us": 310,
        },
    )
    r.expire(identity, 60)


def working(r, identity: str, tid: str, job: dict, key: str = "work", run_at=None) -> None:
    run_at = int(time.time()) if run_at is None else run_at
    value = {"queue": job["queue"], "payload": json.dumps(job), "run_at": run_at}
    r.hset(f"{identity}:{key}", tid, json.dumps(value))
    r.expire(f"{identity}:{key}", 60)


def job(jid_char: str, name: str = "Report", queue: str = "default") -> dict:
    return {"class": name, "args": [1], "jid": jid_char * 24, "queue": queue, "created_at": 1.0}


def test_processes_with_their_heartbeat_figures(redis_url, r):
    heartbeat(r, "web-2:20:bbbbbbbbbbbb", busy=0, quiet=True)
    heartbeat(r, "web-1:10:aaaaaaaaaaaa", busy=3)

    first, second = ProcessSet()

    assert first.identity == "web-1:10:aaaaaaaaaaaa"
    assert (first.hostname, first.pid, first.tag, first.labels) == ("web-1", 10, "shop", ["blue"])
    assert first.queues == ["critical", "default"]
    assert (first.busy, first.concurrency, first.rss, first.rtt_us) == (3, 10, 204800, 310)
    assert first.quiet is False and second.stopping is True
    assert time.time() - 5 < first.beat <= time.time()
    assert first.started_at == pytest.approx(time.time() - 3600, abs=5)
    assert first.version == "7.3.2" and first["tag"] == "shop"
    processes = ProcessSet()
    assert processes.size == 2 and processes.total_concurrency == 20
    assert processes.total_rss == 409600
    assert processes.get("web-2:20:bbbbbbbbbbbb").quiet


def test_quiet_and_stop_push_signals(redis_url, r):
    heartbeat(r, "host:1:cccccccccccc")
    (process,) = ProcessSet()

    process.quiet_down()
    process.stop()

    # The heartbeat pops from the right: TSTP first, then TERM.
    assert r.lrange("host:1:cccccccccccc-signals", 0, -1) == ["TERM", "TSTP"]
    assert 0 < r.ttl("host:1:cccccccccccc-signals") <= 60
    with pytest.raises(ValueError):
        process.signal("KILL")


def test_quiet_all_and_stop_all(redis_url, r):
    heartbeat(r, "a:1:111111111111")
    heartbeat(r, "b:2:222222222222")
    ProcessSet().quiet_all()
    ProcessSet().stop_all()
    for identity in ("a:1:111111111111", "b:2:222222222222"):
        assert r.lrange(f"{identity}-signals", 0, -1) == ["TERM", "TSTP"]


def test_an_embedded_sidekiq_process_is_neither_quieted_nor_stopped(redis_url, r):
    heartbeat(r, "puma:1:eeeeeeeeeeee", embedded=True)  # Sidekiq 7+ run inside Puma
    heartbeat(r, "worker:2:ffffffffffff")
    embedded, alone = ProcessSet()
    assert embedded.embedded and not embedded.can_signal
    assert not alone.embedded and alone.can_signal
    with pytest.raises(EmbeddedProcess, match="puma:1:eeeeeeeeeeee is an embedded Sidekiq process"):
        embedded.quiet_down()
    with pytest.raises(EmbeddedProcess, match="it ignores stop"):
        embedded.stop()
    # Quiet All and Stop All pass over it, as Sidekiq's Busy page does.
    ProcessSet().quiet_all()
    ProcessSet().stop_all()
    assert r.lrange("puma:1:eeeeeeeeeeee-signals", 0, -1) == []
    assert r.lrange("worker:2:ffffffffffff-signals", 0, -1) == ["TERM", "TSTP"]


def test_dead_members_are_pruned(redis_url, r):
    heartbeat(r, "alive:1:aaaaaaaaaaaa")
    r.sadd("processes", "gone:2:bbbbbbbbbbbb")  # its hash expired: the process died

    assert [p.identity for p in ProcessSet(clean=False)] == ["alive:1:aaaaaaaaaaaa"]
    assert ProcessSet(clean=False).size == 2

    ProcessSet()  # prunes, at most once a minute
    assert r.smembers("processes") == {"alive:1:aaaaaaaaaaaa"}

    r.sadd("processes", "gone:3:cccccccccccc")
    ProcessSet()  # within the minute: left for later
    assert r.scard("processes") == 2
    assert ProcessSet(clean=False).cleanup() == 1
    assert r.smembers("processes") == {"alive:1:aaaaaaaaaaaa"}


def test_sidekiq8_process_data(redis_url, r):
    """8.x: started_at in milliseconds, concurrency also in the hash (8.1.2+: it wins over
    ``info``), the queues and weights from ``capsules`` (8.0.9+), as its ``Process`` reads."""
    heartbeat(
        r,
        "k8:7:dddddddddddd",
        started_at=int((time.time() - 60) * 1000),
        concurrency=2,
        capsules={
            "default": {"concurrency": 5, "mode": "weighted", "weights": {"default": 1, "low": 3}},
            "single": {"concurrency": 1, "mode": "strict", "weights": {"one_by_one": 0}},
        },
        weights=[{"default": 1, "low": 3}, {"one_by_one": 0}],
    )
    r.hset("k8:7:dddddddddddd", "concurrency", 6)
    (process,) = ProcessSet()
    assert process.started_at == pytest.approx(time.time() - 60, abs=5)
    assert process.concurrency == 6
    assert process.weights == {"default": 1, "low": 3, "one_by_one": 0}
    assert process.queues == ["default", "low", "one_by_one"]


def test_a_process_with_capsules_and_no_queues_shows_its_queues(redis_url, r):
    """The shape Sidekiq 9 will write: ``queues`` and ``weights`` are gone from ``info``."""
    capsules = {"default": {"concurrency": 5, "mode": "strict", "weights": {"a": 0, "b": 0}}}
    heartbeat(r, "k9:9:eeeeeeeeeeee", capsules=capsules, queues=None)
    (process,) = ProcessSet()
    assert process.queues == ["a", "b"] and process.weights == {"a": 0, "b": 0}


def test_work_across_processes(redis_url, r):
    heartbeat(r, "w:1:aaaaaaaaaaaa", busy=2)
    heartbeat(r, "w:2:bbbbbbbbbbbb", busy=1)
    now = int(time.time())
    working(r, "w:1:aaaaaaaaaaaa", "ab1", job("1"), run_at=now - 10)
    working(r, "w:1:aaaaaaaaaaaa", "ab2", job("2", queue="critical"), run_at=now - 30)
    working(r, "w:2:bbbbbbbbbbbb", "cd1", job("3", name="Export"), run_at=now - 20)

    work = list(WorkSet())

    assert [w.jid for w in work] == ["2" * 24, "3" * 24, "1" * 24]  # longest running first
    first = work[0]
    assert (first.process, first.thread_id, first.queue) == ("w:1:aaaaaaaaaaaa", "ab2", "critical")
    assert first.payload.job_name == "Report" and first.payload.args == [1]
    assert first.run_at == now - 30
    assert WorkSet().size == 3
    assert WorkSet().find("3" * 24).process == "w:2:bbbbbbbbbbbb"
    assert WorkSet().find("9" * 24) is None


def test_work_as_sidekiq_641_writes_it(redis_url, r):
    """6.4.1 names the hash IDENTITY:workers, and Sidekiq 8 may write run_at in milliseconds."""
    heartbeat(r, "old:1:aaaaaaaaaaaa", busy=1)
    ms = int((time.time() - 5) * 1000)
    working(r, "old:1:aaaaaaaaaaaa", "t1", job("4"), key="workers", run_at=ms)
    (work,) = WorkSet()
    assert work.jid == "4" * 24
    assert work.run_at == pytest.approx(ms / 1000)


def test_work_of_a_dead_process_is_not_shown(redis_url, r):
    r.sadd("processes", "dead:1:aaaaaaaaaaaa")
    working(r, "dead:1:aaaaaaaaaaaa", "t1", job("5"))
    assert list(WorkSet()) == []


def test_stats(redis_url, r):
    r.set("stat:processed", 1234)
    r.set("stat:failed", 56)
    heartbeat(r, "s:1:aaaaaaaaaaaa", busy=4)
    heartbeat(r, "s:2:bbbbbbbbbbbb", busy=1)
    client = djqueue.Client()
    for n in range(3):
        client.push({"class": "X", "args": [n]})
    client.push({"class": "X", "args": [], "queue": "alpha"})
    client.push({"class": "X", "args": [], "at": time.time() + 600})
    r.zadd("retry", {"a": 1, "b": 2})
    r.zadd("dead", {"c": 1})
    # Make the oldest default job a minute old.
    oldest = json.loads(r.lindex("queue:default", -1))
    oldest["enqueued_at"] = time.time() - 60
    r.lset("queue:default", -1, json.dumps(oldest))

    stats = Stats()

    assert (stats.processed, stats.failed) == (1234, 56)
    assert (stats.enqueued, stats.scheduled_size, stats.retry_size, stats.dead_size) == (4, 1, 2, 1)
    assert (stats.busy, stats.processes_size) == (5, 2)
    assert 60 <= stats.default_queue_latency < 120
    # Longest first (by name among equals), not by name: "alpha" sorts before "default".
    assert list(stats.queues.items()) == [("default", 3), ("alpha", 1)]


def test_empty_stats(redis_url):
    stats = Stats()
    assert (stats.processed, stats.enqueued, stats.busy, stats.processes_size) == (0, 0, 0, 0)
    assert stats.default_queue_latency == 0.0 and stats.queues == {}


def test_reset(redis_url, r):
    r.set("stat:processed", 10)
    r.set("stat:failed", 3)
    Stats().reset("failed")
    assert (r.get("stat:processed"), r.get("stat:failed")) == ("10", "0")
    Stats().reset()
    assert Stats().processed == 0
    with pytest.raises(ValueError):
        Stats().reset("enqueued")


def test_history(redis_url, r):
    today = dt.datetime.now(dt.UTC).date()
    yesterday = today - dt.timedelta(days=1)
    r.set(f"stat:processed:{today}", 40)
    r.set(f"stat:processed:{yesterday}", 30)
    r.set(f"stat:failed:{yesterday}", 2)

    history = Stats().history(days=3)

    assert list(history.processed.items()) == [
        (today.isoformat(), 40),
        (yesterday.isoformat(), 30),
        ((today - dt.timedelta(days=2)).isoformat(), 0),
    ]
    assert history.failed[yesterday.isoformat()] == 2
    start = dt.date(2024, 3, 1)
    assert list(Stats().history(days=2, start=start).processed) == ["2024-03-01", "2024-02-29"]
    with pytest.raises(ValueError):
        Stats().history(days=0)


def test_namespace(redis_url, r):
    djqueue.configure(redis_url=redis_url, namespace="shop")
    r.set("shop:stat:processed", 7)
    r.set("stat:processed", 99)
    heartbeat(r, "n:1:aaaaaaaaaaaa")  # outside the namespace: not ours
    djqueue.Client().push({"class": "X", "args": []})
    assert Stats().processed == 7 and Stats().enqueued == 1 and Stats().processes_size == 0
    assert r.llen("shop:queue:default") == 1
    assert list(ProcessSet()) == []
