"""djqueue.testing's fake mode: pushes are recorded in memory, jobs run when drained."""

from __future__ import annotations

import time

import pytest

import djqueue
from djqueue import client_middleware, server_middleware, testing
from djqueue.signals import job_enqueued

ran: list[tuple[str, list]] = []


@djqueue.job(name="testing.send_welcome", queue="mailers")
def send_welcome(user_id):
    ran.append(("send_welcome", [user_id]))


@djqueue.job(name="testing.chain")
def chain(n):
    ran.append(("chain", [n]))
    if n > 0:
        chain.perform_later(n - 1)


@djqueue.job(name="testing.explode")
def explode():
    raise RuntimeError("kaboom")


class SendReport(djqueue.Job, name="testing.SendReport"):
    def perform(self, report, options):
        ran.append(("SendReport", [report, options, self.jid]))


@pytest.fixture(autouse=True)
def _reset():
    ran.clear()
    testing.clear_all()
    yield
    testing.disable()
    testing.clear_all()


def test_fake_records_and_writes_nothing(redis_url, r):
    with testing.fake():
        jid = send_welcome.perform_later(42)
        SendReport.perform_later("sales", {"year": 2025})

        assert [j["args"] for j in send_welcome.jobs] == [[42]]
        assert send_welcome.jobs[0]["jid"] == jid
        assert send_welcome.jobs[0]["queue"] == "mailers"
        assert SendReport.jobs[0]["args"] == ["sales", {"year": 2025}]
        assert [j["class"] for j in testing.jobs()] == [
            "testing.send_welcome",
            "testing.SendReport",
        ]
        assert testing.jobs(queue="mailers") == send_welcome.jobs
        assert ran == []
    assert r.keys("*") == []


def test_drain_runs_jobs_with_their_args(redis_url):
    with testing.fake():
        send_welcome.perform_later(1)
        send_welcome.perform_later(2)
        SendReport.perform_later("q1", {})
        assert send_welcome.jobs.drain() == 2
        assert ran == [("send_welcome", [1]), ("send_welcome", [2])]
        assert send_welcome.jobs == [] and len(SendReport.jobs) == 1
        jid = SendReport.jobs[0]["jid"]
        assert testing.drain(SendReport) == 1
        assert ran[-1] == ("SendReport", ["q1", {}, jid])


def test_drain_runs_jobs_pushed_while_draining(redis_url):
    with testing.fake():
        chain.perform_later(3)
        assert chain.jobs.drain() == 4
    assert ran == [("chain", [3]), ("chain", [2]), ("chain", [1]), ("chain", [0])]


def test_drain_all_in_push_order(redis_url):
    with testing.fake() as fake:
        send_welcome.perform_later(1)
        chain.perform_later(1)
        SendReport.perform_later("r", {})
        send_welcome.perform_later(2)
        assert fake.drain_all() == 5
        assert fake.jobs == []
    assert [name for name, _ in ran] == [
        "send_welcome",
        "chain",
        "SendReport",
        "send_welcome",
        "chain",
    ]


def test_perform_one(redis_url):
    with testing.fake():
        send_welcome.perform_later(1)
        send_welcome.perform_later(2)
        send_welcome.jobs.perform_one()
        assert ran == [("send_welcome", [1])]
        assert [j["args"] for j in send_welcome.jobs] == [[2]]
        testing.perform_one(send_welcome)
        with pytest.raises(testing.EmptyQueueError):
            testing.perform_one(send_welcome)


def test_failing_job_raises_on_drain_and_is_removed(redis_url):
    with testing.fake():
        explode.perform_later()
        send_welcome.perform_later(1)
        with pytest.raises(RuntimeError, match="kaboom"):
            testing.drain_all()
        assert explode.jobs == []
        assert testing.drain_all() == 1


def test_clear(redis_url):
    with testing.fake():
        send_welcome.perform_later(1)
        SendReport.perform_later("x", {})
        send_welcome.jobs.clear()
        assert send_welcome.jobs == [] and len(SendReport.jobs) == 1
        testing.clear(SendReport)
        assert testing.jobs() == []
        send_welcome.perform_later(2)
        testing.clear_all()
        assert testing.jobs() == []
        assert testing.drain_all() == 0


def test_scheduled_jobs_keep_their_time(redis_url, r):
    with testing.fake():
        send_welcome.perform_in(3600, 5)
        (job,) = send_welcome.jobs
        assert job["at"] == pytest.approx(time.time() + 3600, abs=5)
        assert "enqueued_at" not in job
        send_welcome.jobs.drain()  # drain runs it regardless of its time, as Sidekiq does
    assert ran == [("send_welcome", [5])]
    assert r.zcard("schedule") == 0


def test_bulk_and_set_and_raw_client(redis_url):
    with testing.fake():
        send_welcome.perform_bulk([[1], [2], [3]])
        send_welcome.set(queue="urgent").perform_later(4)
        djqueue.Client().push({"class": "Ruby::Worker", "args": ["from elsewhere"]})
        assert [j["args"] for j in send_welcome.jobs] == [[1], [2], [3], [4]]
        assert send_welcome.jobs[-1]["queue"] == "urgent"
        assert testing.jobs_for("Ruby::Worker")[0]["args"] == ["from elsewhere"]
        with pytest.raises(djqueue.UnknownJob):
            testing.drain("Ruby::Worker")


def test_payload_is_json_round_tripped(redis_url):
    with testing.fake():
        args = {"nested": [1, 2]}
        send_welcome.perform_later(args)
        args["nested"].append(3)  # changing the caller's object later does not change the job
        assert send_welcome.jobs[0]["args"] == [{"nested": [1, 2]}]


def test_middleware_runs_in_fake_mode(redis_url):
    def stamp(job, payload, queue, call_next):
        payload["tenant"] = "acme"
        return call_next()

    seen = []

    def watch(job, payload, queue, call_next):
        seen.append(payload.get("tenant"))
        return call_next()

    client_middleware.add(stamp)
    server_middleware.add(watch)
    try:
        with testing.fake():
            send_welcome.perform_later(1)
            assert send_welcome.jobs[0]["tenant"] == "acme"
            send_welcome.jobs.drain()
    finally:
        client_middleware.remove(stamp)
        server_middleware.remove(watch)
    assert seen == ["acme"]


def test_job_enqueued_signal_is_sent(redis_url):
    got = []

    def receiver(sender, payload):
        got.append((sender, payload["args"]))

    job_enqueued.connect(receiver)
    try:
        with testing.fake():
            send_welcome.perform_later(9)
    finally:
        job_enqueued.disconnect(receiver)
    assert got == [("testing.send_welcome", [9])]


def test_modes_switch_and_restore(redis_url, r):
    assert testing.mode() == "disabled"
    testing.fake()
    assert testing.is_fake()
    with testing.inline():
        assert testing.is_inline()
        with testing.disable():
            send_welcome.perform_later(1)  # really written
        assert testing.is_inline()
    assert testing.is_fake()
    send_welcome.perform_later(2)
    testing.disable()
    assert testing.mode() == "disabled"
    assert r.llen("queue:mailers") == 1
    assert [j["args"] for j in send_welcome.jobs] == [[2]]
