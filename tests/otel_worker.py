"""Loaded with ``-r`` by a ``djqueue worker`` subprocess in tests/test_opentelemetry.py: with
``DJQ_OTEL_SPANS`` set, the worker traces with the SDK and writes each ended span to that file,
one JSON line each, for the test process to read. Imported by the test for the job only."""

from __future__ import annotations

import os
from collections.abc import Sequence

import djqueue


@djqueue.job(name="otel.elsewhere", retry=False)
def elsewhere(text: str) -> None:
    pass


def _trace_to(path: str) -> None:
    from opentelemetry import trace
    from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
    from opentelemetry.sdk.trace.export import (
        SimpleSpanProcessor,
        SpanExporter,
        SpanExportResult,
    )

    from djqueue.contrib.opentelemetry import instrument

    class ToFile(SpanExporter):
        def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
            with open(path, "a") as out:
                for span in spans:
                    out.write(span.to_json(indent=None) + "\n")
            return SpanExportResult.SUCCESS

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(ToFile()))
    trace.set_tracer_provider(provider)
    instrument()


if os.environ.get("DJQ_OTEL_SPANS"):
    _trace_to(os.environ["DJQ_OTEL_SPANS"])
