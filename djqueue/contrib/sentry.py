"""Sentry for djqueue's jobs: pass the integration to ``sentry_sdk.init`` where the worker and
the code that pushes jobs import their settings::

    import sentry_sdk
    from djqueue.contrib.sentry import DjqueueIntegration

    sentry_sdk.init(dsn=..., traces_sample_rate=0.1, integrations=[DjqueueIntegration()])

What it does, and where (the SDK owns scopes, transports, sampling and check-ins; this module
only says where a job starts and ends):

- **A scope per job.** Each job runs in an isolation scope of its own, its breadcrumbs cleared,
  so a job's events carry its own breadcrumbs, never the previous job's. The scope holds the
  ``djqueue`` context (class, jid, queue, retry count) and the ``djqueue.class`` and
  ``djqueue.queue`` tags.
- **A failure, once.** A failed attempt is captured once, unhandled, when the job has ended
  (after the retry decision). With ``only_exhausted=True`` only the attempt that is not
  retried is (the retries exhausted, or a job without retries).
- **One trace from push to run.** The client middleware puts the pushing code's trace
  headers (``sentry-trace``, ``baggage``) in the payload under ``trace_propagation_headers``,
  the key sentry-ruby's Sidekiq integration uses, so a trace also joins across Ruby and
  Python; the worker continues that trace in a ``queue.process`` transaction named after the
  job (sent when ``traces_sample_rate`` samples it).
- **Cron check-ins.** A periodic job's run (pushed by a djqueue worker's periodic poller, or
  ``djqueue periodic run``) carries its periodic job's name as ``sentry_monitor``; the worker
  sends an ``in_progress`` check-in when it starts, then ``ok`` or ``error`` with its duration,
  under that monitor slug.

The worker's part is a runtime step (`djqueue.worker.around.add`), written once for thread-run
and ``async def`` jobs; the push's part is a client middleware (`djqueue.middleware`). Both are
installed by ``sentry_sdk.init`` and do nothing while the current Sentry client has no
`DjqueueIntegration`.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import sentry_sdk
from sentry_sdk.crons import capture_checkin
from sentry_sdk.crons.consts import MonitorStatus
from sentry_sdk.integrations import Integration
from sentry_sdk.tracing import TransactionSource
from sentry_sdk.utils import event_from_exception

from ..api.periodic import firing
from ..middleware import client_middleware
from ..worker import around
from .jobrun import carried, carry, connect, watch

#: The payload key of the pushing code's trace headers (sentry-ruby's Sidekiq integration's).
TRACE_KEY = "trace_propagation_headers"
#: The payload key of a periodic run's monitor slug (its periodic job's name).
MONITOR_KEY = "sentry_monitor"


class DjqueueIntegration(Integration):
    """``only_exhausted``: capture a failed job only when it is not retried."""

    identifier = "djqueue"

    def __init__(self, only_exhausted: bool = False) -> None:
        self.only_exhausted = only_exhausted

    @staticmethod
    def setup_once() -> None:
        around.add(_around)
        client_middleware.add(stamp)
        connect()


def _integration() -> DjqueueIntegration | None:
    return sentry_sdk.get_client().get_integration(DjqueueIntegration)


def stamp(job: str, payload: dict[str, Any], queue: str) -> Iterator[None]:
    """Client middleware: the trace headers, and a periodic run's monitor slug."""
    if _integration() is not None:
        headers = {
            "sentry-trace": sentry_sdk.get_traceparent(),
            "baggage": sentry_sdk.get_baggage(),
        }
        carry(payload, headers, under=TRACE_KEY)
        name = firing.get()
        if name is not None:
            payload[MONITOR_KEY] = name
    yield


def _around(payload: dict[str, Any]) -> Iterator[None] | None:
    """The runtime step: None (out of the way) unless Sentry runs with this integration."""
    integration = _integration()
    if integration is None:
        return None
    return _job(integration, payload)


def _job(integration: DjqueueIntegration, payload: dict[str, Any]) -> Iterator[None]:
    name = str(payload.get("wrapped") or payload.get("class"))
    queue = str(payload.get("queue"))
    monitor = payload.get(MONITOR_KEY)
    with sentry_sdk.isolation_scope() as scope:
        scope.clear_breadcrumbs()
        scope.set_tag("djqueue.class", name)
        scope.set_tag("djqueue.queue", queue)
        scope.set_context(
            "djqueue",
            {
                "class": name,
                "jid": payload.get("jid"),
                "queue": queue,
                "retry_count": payload.get("retry_count"),
            },
        )
        transaction = sentry_sdk.continue_trace(
            carried(payload, under=TRACE_KEY),
            op="queue.process",
            name=name,
            source=TransactionSource.TASK,
            origin="auto.queue.djqueue",
        )
        check_in = None
        if isinstance(monitor, str):
            check_in = capture_checkin(monitor_slug=monitor, status=MonitorStatus.IN_PROGRESS)
        started = time.monotonic()
        with watch() as run:
            try:
                with sentry_sdk.start_transaction(transaction):
                    yield
                    error = run.error
                    transaction.set_status("ok" if error is None else "internal_error")
                    if error is not None and not (integration.only_exhausted and run.retried):
                        _capture(error)
            finally:
                if check_in is not None:
                    status = MonitorStatus.OK if run.error is None else MonitorStatus.ERROR
                    duration = time.monotonic() - started
                    capture_checkin(monitor, check_in_id=check_in, status=status, duration=duration)


def _capture(error: BaseException) -> None:
    client = sentry_sdk.get_client()
    event, hint = event_from_exception(
        error, client_options=client.options, mechanism={"type": "djqueue", "handled": False}
    )
    sentry_sdk.capture_event(event, hint=hint)
