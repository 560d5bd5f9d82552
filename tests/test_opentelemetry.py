"""The OpenTelemetry instrumentation (`djqueue.contrib.opentelemetry`) with the SDK's in-memory
exporter. Most tests run the worker on a thread of this process (the job reaches it only
through Redis, and the payload's ``traceparent`` is asserted); one runs a real ``djqueue
worker`` subprocess that writes its spans to a file (tests/otel_worker.py)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import redis
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

import djqueue
from djqueue.contrib import opentelemetry as otel

from .otel_worker import elsewhere
from .worker_support import Running, WorkerProcess, wait_for

_EXPORTER = InMemorySpanExporter()


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    """The spans ended while the instrumentation is on (the provider is global: set once)."""
    if not isinstance(trace.get_tracer_provider(), TracerProvider):
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(_EXPORTER))
        trace.set_tracer_provider(provider)
    _EXPORTER.clear()
    otel.instrument()
    yield _EXPORTER
    otel.uninstrument()


@djqueue.job(name="otel.note", retry=False)
def note(text: str) -> None:
    pass


@djqueue.job(name="otel.twice", retry=1, retry_in=lambda count, exc: 0)
def twice(text: str) -> None:
    raise ValueError(text)


def named(spans: InMemorySpanExporter, name: str, count: int) -> list[ReadableSpan]:
    return wait_for(
        lambda: (
            (found := [s for s in spans.get_finished_spans() if s.name == name])
            and len(found) == count
            and found
        ),
        what=f"{count} {name!r} span(s)",
    )


def test_a_job_span_is_a_child_of_the_span_that_pushed_it(
    spans: InMemorySpanExporter, worker: Callable[..., Running], r: redis.Redis
) -> None:
    with trace.get_tracer("tests").start_as_current_span("POST /orders") as request:
        jid = note.perform_later("traced")
    (publish,) = named(spans, "default publish", 1)
    assert publish.kind == SpanKind.PRODUCER
    assert (
        publish.parent is not None and publish.parent.span_id == request.get_span_context().span_id
    )
    # What crosses to the worker: the payload, with the producer span as W3C trace context.
    (payload,) = [json.loads(j) for j in r.lrange("queue:default", 0, -1)]
    context = publish.get_span_context()
    flags = context.trace_flags
    assert (
        payload["traceparent"] == f"00-{context.trace_id:032x}-{context.span_id:016x}-{flags:02x}"
    )
    worker(concurrency=1, poll_interval=0.1)
    (process,) = named(spans, "default process", 1)
    assert process.kind == SpanKind.CONSUMER
    assert process.context.trace_id == context.trace_id
    assert process.parent is not None and process.parent.span_id == context.span_id
    assert process.status.status_code == StatusCode.UNSET
    assert dict(process.attributes or {}) == {
        "messaging.system": "sidekiq",
        "messaging.sidekiq.job_class": "otel.note",
        "messaging.message_id": jid,
        "messaging.destination": "default",
        "messaging.destination_kind": "queue",
        "messaging.operation": "process",
    }


def test_a_failure_sets_error_status_and_a_retry_links_to_the_push(
    spans: InMemorySpanExporter, worker: Callable[..., Running], r: redis.Redis
) -> None:
    with trace.get_tracer("tests").start_as_current_span("POST /orders"):
        twice.perform_later("boom")
    (publish,) = named(spans, "default publish", 1)
    pushed = publish.get_span_context()
    worker(concurrency=1, poll_interval=0.1)
    wait_for(lambda: r.zcard("dead") == 1, what="the job dead after its retry")
    first, retry = sorted(named(spans, "default process", 2), key=lambda s: s.start_time or 0)
    for span in (first, retry):
        assert span.status.status_code == StatusCode.ERROR
        (event,) = span.events
        assert event.name == "exception"
        assert dict(event.attributes or {})["exception.message"] == "boom"
    assert first.parent is not None and first.parent.span_id == pushed.span_id
    assert retry.parent is None and retry.context.trace_id != pushed.trace_id
    assert [link.context.span_id for link in retry.links] == [pushed.span_id]


@djqueue.job(name="otel.async_crash", retry=False)
async def async_crash(text: str) -> None:
    raise ValueError(text)


def test_an_async_job_gets_the_same_span(
    spans: InMemorySpanExporter, worker: Callable[..., Running]
) -> None:
    """The step is written once: on the worker's event loop it does what it does in a thread."""
    with trace.get_tracer("tests").start_as_current_span("POST /orders"):
        async_crash.perform_later("async boom")
    (publish,) = named(spans, "default publish", 1)
    worker(concurrency=1, poll_interval=0.1)
    (process,) = named(spans, "default process", 1)
    assert process.parent is not None
    assert process.parent.span_id == publish.get_span_context().span_id
    assert process.status.status_code == StatusCode.ERROR
    assert [e.name for e in process.events] == ["exception"]


def test_across_processes_the_worker_span_is_a_child_of_the_push(
    spans: InMemorySpanExporter,
    spawn: Callable[..., WorkerProcess],
    redis_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A ``djqueue worker`` subprocess with its own tracer provider continues this trace."""
    exported = tmp_path / "spans.jsonl"
    monkeypatch.setenv("DJQ_OTEL_SPANS", str(exported))
    with trace.get_tracer("tests").start_as_current_span("POST /orders"):
        jid = elsewhere.perform_later("across")
    (publish,) = named(spans, "default publish", 1)
    worker = spawn(redis_url, "-r", "tests.otel_worker")

    def process() -> dict[str, object] | None:
        assert worker.process.poll() is None, worker.output()
        lines = exported.read_text().splitlines() if exported.exists() else []
        return next((json.loads(line) for line in lines), None)

    span = wait_for(process, what="the worker's span", log=worker.log)
    pushed = publish.get_span_context()
    assert span["name"] == "default process"
    assert span["kind"] == "SpanKind.CONSUMER"
    assert span["context"]["trace_id"] == f"0x{pushed.trace_id:032x}"
    assert span["parent_id"] == f"0x{pushed.span_id:016x}"
    assert span["attributes"]["messaging.message_id"] == jid
