"""OpenTelemetry traces for djqueue's jobs: call `instrument` once where the worker and the
code that pushes jobs set up their tracer provider::

    from djqueue.contrib.opentelemetry import instrument

    instrument()

What it does (the API and the SDK own providers, sampling, propagators and exporters; this
module only says where a push and a job start and end):

- **A producer span per push**, ``<queue> publish``, around the client middleware chain's
  inside. The globally configured propagator (W3C trace context by default) injects its
  headers, ``traceparent`` and ``tracestate``, at the top level of the payload: the keys
  opentelemetry-ruby-contrib's Sidekiq instrumentation injects into the job hash, so a job
  pushed from Ruby continues its trace in Python and the other way round.
- **A consumer span per run**, ``<queue> process``, a child of the producer span, around the
  whole run (a runtime step, `djqueue.worker.around`; written once for thread-run and
  ``async def`` jobs). A failed attempt sets the span's status to error and records the
  exception as an event.
- **A retry links back.** A retried attempt (the payload has ``retry_count``) would otherwise
  hang under a push that may be days old: it starts a trace of its own, linked to the span
  that pushed the job.

The attributes are the messaging conventions Ruby's Sidekiq instrumentation sets
(``messaging.system`` ``sidekiq``, ``messaging.destination``, ``messaging.message_id``,
``messaging.sidekiq.job_class``, ...), so spans from both languages group and filter alike.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from opentelemetry import context, propagate, trace
from opentelemetry.trace import Link, SpanKind, Status, StatusCode

from ..middleware import client_middleware
from ..worker import around
from .jobrun import carried, carry, connect, watch

#: The payload keys of the W3C trace context (top level, as Ruby's instrumentation puts them).
TRACE_HEADERS = ("traceparent", "tracestate")


def instrument() -> None:
    """Trace every push from this process and every job its workers run (add before the
    worker starts: the runtime reads its steps when it is built)."""
    connect()
    client_middleware.add(publish)
    around.add(process)


def uninstrument() -> None:
    client_middleware.remove(publish)
    around.remove(process)


def _tracer() -> trace.Tracer:
    # Looked up per use, so a provider set after `instrument` is the one used.
    return trace.get_tracer("djqueue.contrib.opentelemetry")


def _attributes(payload: dict[str, Any], queue: str) -> dict[str, str]:
    return {
        "messaging.system": "sidekiq",
        "messaging.sidekiq.job_class": str(payload.get("wrapped") or payload.get("class")),
        "messaging.message_id": str(payload.get("jid")),
        "messaging.destination": queue,
        "messaging.destination_kind": "queue",
    }


def publish(job: str, payload: dict[str, Any], queue: str) -> Iterator[None]:
    """Client middleware: the producer span, and its trace context in the payload."""
    attributes = _attributes(payload, queue)
    with _tracer().start_as_current_span(
        f"{queue} publish", kind=SpanKind.PRODUCER, attributes=attributes
    ):
        headers: dict[str, str] = {}
        propagate.inject(headers)
        carry(payload, headers)
        yield


def process(payload: dict[str, Any]) -> Iterator[None]:
    """Runtime step: the consumer span around the whole run."""
    queue = str(payload.get("queue"))
    attributes = {**_attributes(payload, queue), "messaging.operation": "process"}
    pushed = propagate.extract(carried(payload, TRACE_HEADERS))
    parent: context.Context | None = pushed
    links: list[Link] = []
    if "retry_count" in payload:
        parent = context.Context()  # a root span
        pushed_span = trace.get_current_span(pushed).get_span_context()
        if pushed_span.is_valid:
            links.append(Link(pushed_span))
    with (
        watch() as run,
        _tracer().start_as_current_span(
            f"{queue} process",
            context=parent,
            kind=SpanKind.CONSUMER,
            attributes=attributes,
            links=links,
            record_exception=False,
            set_status_on_exception=False,
        ) as span,
    ):
        error: BaseException | None = None
        try:
            yield
        except BaseException as exc:  # an error no step settled: still the job's
            error = exc
            raise
        finally:
            error = error or run.error
            if error is not None:
                span.record_exception(error)
                span.set_status(Status(StatusCode.ERROR, f"{type(error).__name__}: {error}"))
