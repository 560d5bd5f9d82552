"""The Sentry integration (`djqueue.contrib.sentry`) with Sentry's own SDK and a worker: what
reaches Sentry is what a transport sent, collected here instead of going out."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis
import sentry_sdk
from sentry_sdk import integrations
from sentry_sdk.envelope import Envelope
from sentry_sdk.transport import Transport

import djqueue
from djqueue import signals
from djqueue.api import PeriodicSet
from djqueue.contrib import jobrun, sentry
from djqueue.middleware import client_middleware
from djqueue.worker import around

from .worker_support import Running, wait_for


class Collect(Transport):
    """A transport that keeps the envelopes."""

    def __init__(self) -> None:
        super().__init__()
        self.envelopes: list[Envelope] = []

    def capture_envelope(self, envelope: Envelope) -> None:
        self.envelopes.append(envelope)

    def items(self, kind: str) -> list[dict[str, Any]]:
        return [
            item.payload.json
            for envelope in self.envelopes
            for item in envelope.items
            if item.type == kind and item.payload.json is not None
        ]


@pytest.fixture
def sent(redis_url: str) -> Iterator[Callable[..., Collect]]:
    """``sent(**integration options)``: Sentry set up with the integration and a collecting
    transport; afterwards the integration is gone from this process (hooks, signals)."""

    def init(**options: Any) -> Collect:
        transport = Collect()
        sentry_sdk.init(
            dsn="https://key@sentry.example.com/1",
            transport=transport,
            traces_sample_rate=1.0,
            default_integrations=False,
            auto_enabling_integrations=False,
            integrations=[sentry.DjqueueIntegration(**options)],
        )
        return transport

    yield init
    # A client with no integrations at all: the SDK's defaults would patch logging, threading
    # and subprocess for the rest of the run.
    sentry_sdk.init(default_integrations=False, auto_enabling_integrations=False)
    around.remove(sentry._around)
    client_middleware.remove(sentry.stamp)
    signals.job_failed.disconnect(jobrun._failed)
    signals.job_retry_scheduled.disconnect(jobrun._retried)
    # So that the next init sets it up again (the SDK sets an integration up once a process).
    integrations._installed_integrations.discard(sentry.DjqueueIntegration.identifier)
    integrations._processed_integrations.discard(sentry.DjqueueIntegration.identifier)


@djqueue.job(name="sentry.note", retry=False)
def note(text: str) -> None:
    sentry_sdk.add_breadcrumb(message=text)


@djqueue.job(name="sentry.crash", retry=False)
def crash(text: str) -> None:
    sentry_sdk.add_breadcrumb(message=text)
    raise ValueError(f"crashed: {text}")


@djqueue.job(name="sentry.twice", retry=1, retry_in=lambda count, exc: 0)
def twice(text: str) -> None:
    raise ValueError(text)


def test_one_event_per_failure_with_the_job_and_only_its_breadcrumbs(
    sent: Callable[..., Collect], worker: Callable[..., Running], r: redis.Redis
) -> None:
    transport = sent()
    worker(concurrency=1, poll_interval=0.1)
    note.perform_later("first job was here")
    jid = crash.perform_later("second job was here")
    twice.perform_later("again")
    # Every job's transaction ends after its event: once the four are sent, no event is coming.
    wait_for(lambda: len(transport.items("transaction")) == 4, what="four runs")
    found = transport.items("event")
    assert len(found) == 3, found  # crash once, twice twice
    crashed = next(e for e in found if e["contexts"]["djqueue"]["class"] == "sentry.crash")
    assert crashed["contexts"]["djqueue"] == {
        "class": "sentry.crash",
        "jid": jid,
        "queue": "default",
        "retry_count": None,
    }
    assert crashed["tags"] == {"djqueue.class": "sentry.crash", "djqueue.queue": "default"}
    assert crashed["exception"]["values"][-1]["value"] == "crashed: second job was here"
    assert crashed["exception"]["values"][-1]["mechanism"] == {"type": "djqueue", "handled": False}
    crumbs = [b["message"] for b in crashed["breadcrumbs"]["values"]]
    assert crumbs == ["second job was here"]
    retried = [e for e in found if e["contexts"]["djqueue"]["class"] == "sentry.twice"]
    assert [e["contexts"]["djqueue"]["retry_count"] for e in retried] == [None, 0]


def test_only_exhausted_captures_the_attempt_not_retried(
    sent: Callable[..., Collect], worker: Callable[..., Running], r: redis.Redis
) -> None:
    transport = sent(only_exhausted=True)
    worker(concurrency=1, poll_interval=0.1)
    twice.perform_later("again")
    wait_for(lambda: r.zcard("dead") == 1, what="the job dead after its retry")
    # The dead job's transaction ends after its event: once it is sent, no event is coming.
    wait_for(lambda: len(transport.items("transaction")) == 2, what="two runs")
    found = transport.items("event")
    assert [e["contexts"]["djqueue"]["retry_count"] for e in found] == [0]


def test_the_job_continues_the_trace_of_the_code_that_pushed_it(
    sent: Callable[..., Collect], worker: Callable[..., Running]
) -> None:
    transport = sent()
    with sentry_sdk.start_transaction(name="POST /orders", op="http.server") as request:
        note.perform_later("traced")
    worker()
    job = wait_for(
        lambda: next(
            (t for t in transport.items("transaction") if t["transaction"] == "sentry.note"), None
        )
    )
    trace = job["contexts"]["trace"]
    assert trace["trace_id"] == request.trace_id
    assert trace["parent_span_id"] == request.span_id
    assert trace["op"] == "queue.process"
    assert trace["status"] == "ok"


def test_a_periodic_job_sends_its_check_ins(
    sent: Callable[..., Collect], worker: Callable[..., Running]
) -> None:
    transport = sent()
    worker(
        periodic={
            "hourly-note": {"cron": "0 * * * *", "class": "sentry.note", "args": ["tick"]},
            "hourly-crash": {"cron": "0 * * * *", "class": "sentry.crash", "args": ["tick"]},
        }
    )
    wait_for(lambda: PeriodicSet().find("hourly-crash"), what="the periodic jobs declared")
    for name in ("hourly-note", "hourly-crash"):
        assert PeriodicSet().find(name).run_now()  # type: ignore[union-attr]
    found = wait_for(lambda: len(transport.items("check_in")) == 4 and transport.items("check_in"))
    by_monitor = {
        slug: [c["status"] for c in found if c["monitor_slug"] == slug]
        for slug in ("hourly-note", "hourly-crash")
    }
    assert by_monitor == {
        "hourly-note": ["in_progress", "ok"],
        "hourly-crash": ["in_progress", "error"],
    }
    for slug in by_monitor:
        started, ended = (c for c in found if c["monitor_slug"] == slug)
        assert ended["check_in_id"] == started["check_in_id"]
        assert ended["duration"] >= 0


@djqueue.job(name="sentry.async_crash", retry=False)
async def async_crash(text: str) -> None:
    sentry_sdk.add_breadcrumb(message=text)
    raise ValueError(f"crashed: {text}")


def test_an_async_job_gets_the_same_scope_and_event(
    sent: Callable[..., Collect], worker: Callable[..., Running]
) -> None:
    """The step is written once: on the worker's event loop it does what it does in a thread."""
    transport = sent()
    worker()
    note.perform_later("a thread-run job was here")
    jid = async_crash.perform_later("the async job was here")
    wait_for(lambda: len(transport.items("transaction")) == 2, what="two runs")
    (event,) = transport.items("event")
    assert event["contexts"]["djqueue"]["jid"] == jid
    assert [b["message"] for b in event["breadcrumbs"]["values"]] == ["the async job was here"]
    assert event["contexts"]["trace"]["trace_id"] == next(
        t["contexts"]["trace"]["trace_id"]
        for t in transport.items("transaction")
        if t["transaction"] == "sentry.async_crash"
    )
