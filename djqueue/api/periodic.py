"""Periodic jobs as Redis has them: read, enable, disable, run now, delete.

Entries come from djqueue's declarations and from a Ruby app's sidekiq-cron alike; both are
read from sidekiq-cron's layout (`djqueue.store.periodic`)::

    from djqueue.api import PeriodicSet

    for entry in PeriodicSet():
        print(entry.name, entry.cron, entry.enabled, entry.last_run, entry.next_run)
    PeriodicSet().find("nightly-report").run_now()
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Sequence
from contextvars import ContextVar
from typing import Any

from .. import unique
from ..client import Client, Landing, announce, report_not_unique
from ..payload import Payload, encode, normalize
from ..periodic_cron import (
    CronExpression,
    InvalidCron,
    enqueue_time,
    iso,
    parse,
    parse_enqueue_time,
)
from ..periodic_declaration import is_declared
from ..store import StatusStore
from ..store.periodic import FIRED, NOT_UNIQUE, PeriodicStore, StoredEntry
from .base import ApiObject

#: The status of an entry djqueue cannot read.
BAD = "bad"
#: What every view says of an entry djqueue cannot fire (see `PeriodicJob.not_fired`).
NOT_FIRED = "not fired by djqueue"


class PeriodicJob(ApiObject):
    """One entry of ``cron_jobs``. ``fields`` is its hash as read; nothing is read again until
    an action runs."""

    def __init__(self, name: str, stored: StoredEntry, **context: Any) -> None:
        super().__init__(**context)
        self.name = name
        self.fields = stored.fields
        #: What the entry's key holds (as ``TYPE`` names it): a hash unless it went bad.
        self.held = stored.held
        #: The hash's key: ``cron_job:NAME``, or ``cron_job:default:NAME`` in sidekiq-cron 2's
        #: layout (`djqueue.store.periodic_layout`).
        self.key = stored.key
        self.periodic_store = PeriodicStore(self.redis, self.keys)
        self.cron: str = self.fields.get("cron", "")
        #: The parsed schedule, or None when the text is not one djqueue reads.
        self.schedule: CronExpression | None = None
        #: Why djqueue cannot fire this entry (a key of the wrong type, a missing field, JSON
        #: that does not parse, a cron text it cannot read), or ``""``. Such an entry is
        #: listed with the reason and may be deleted, but is never fired by djqueue.
        self.error = stored.problem or self._problem()
        #: The entry itself cannot be read (a key of the wrong type, a field missing or not
        #: JSON): its status is ``bad``. One whose only fault is a cron text djqueue does not
        #: read (sidekiq-cron's Ruby parser may) keeps its status, so it can still be disabled.
        self.bad = bool(self.error)
        if not self.error:
            try:
                self.schedule = parse(self.cron)
            except InvalidCron as exc:
                self.error = str(exc)

    def _problem(self) -> str:
        """What is wrong with the hash's fields, or ``""``."""
        if not self.fields.get("cron"):
            return "no 'cron' field: the entry has no schedule"
        raw = self.fields.get("message")
        if raw:
            try:
                message = json.loads(raw)
            except ValueError:
                message = None
            if not isinstance(message, dict):
                return f"'message' is not a JSON object: {raw[:80]!r}"
        if not self.klass:
            return "no job class: neither a 'klass' field nor a 'class' in 'message'"
        raw = self.fields.get("args")
        if raw:
            try:
                json.loads(raw)
            except ValueError:
                return f"'args' is not JSON: {raw[:80]!r}"
        return ""

    def __repr__(self) -> str:
        return f"<PeriodicJob {self.name} {self.cron!r} {self.status}>"

    # -- what it is ------------------------------------------------------------------------------

    @property
    def status(self) -> str:
        """``enabled`` or ``disabled`` (sidekiq-cron treats a missing status as enabled), or
        ``bad`` for an entry djqueue cannot read (`bad`): its fields say nothing reliable, and
        it is never fired here, so it is neither."""
        if self.bad:
            return BAD
        return self.fields.get("status") or "enabled"

    @property
    def not_fired(self) -> str:
        """Why djqueue never fires this entry, as the worker's log, the command line and the
        pages say it (``not fired by djqueue: <error>``), or ``""`` for one it fires."""
        if not self.error:
            return ""
        ruby_may = self.cron and self.error.startswith(repr(self.cron))
        return f"{NOT_FIRED}: {self.error}" + (
            " (sidekiq-cron may still fire it)" if ruby_may else ""
        )

    @property
    def enabled(self) -> bool:
        return self.status == "enabled"

    @property
    def message(self) -> dict[str, Any]:
        try:
            message = json.loads(self.fields.get("message") or "{}")
        except ValueError:
            return {}
        return message if isinstance(message, dict) else {}

    @property
    def klass(self) -> str:
        return self.fields.get("klass") or str(self.message.get("class") or "")

    @property
    def args(self) -> list[Any]:
        """The arguments each run gets (sidekiq-cron: a JSON list, or one hash)."""
        raw = self.fields.get("args")
        if not raw:
            args = self.message.get("args", [])
            return args if isinstance(args, list) else [args]
        try:
            value = json.loads(raw)
        except ValueError:
            return [raw]
        return value if isinstance(value, list) else [value]

    @property
    def queue(self) -> str:
        queue = self.message.get("queue")
        return queue if isinstance(queue, str) and queue else self.settings.default_queue

    @property
    def description(self) -> str:
        return self.fields.get("description", "")

    @property
    def declared(self) -> bool:
        """Declared by djqueue code or settings (not by Ruby, nor by hand)."""
        return is_declared(self.fields)

    @property
    def catch_up(self) -> bool:
        """Fire the latest missed tick however late: djqueue's default for its own entries;
        an entry of sidekiq-cron's (no such field) keeps sidekiq-cron's 60-second rule."""
        return self.fields.get("catch_up", "true" if self.declared else "false") != "false"

    @property
    def active_job(self) -> bool:
        return _flag(self.fields.get("active_job"))

    @property
    def last_run(self) -> float | None:
        """When it was last pushed (by a tick or run now), epoch seconds."""
        return parse_enqueue_time(self.fields.get("last_enqueue_time", ""))

    def next_run(self, now: float | None = None) -> float | None:
        """The next tick (None for an entry djqueue cannot fire, or a disabled job)."""
        if self.schedule is None or self.error or not self.enabled:
            return None
        return self.schedule.next(time.time() if now is None else now)

    def history(self) -> list[dict[str, Any]]:
        """The last pushes, newest first: ``{"jid", "enqueued"}`` as sidekiq-cron keeps them."""
        return self._call(lambda: self.periodic_store.history(self.name))

    def states(self, jids: Sequence[str]) -> list[str]:
        """The tracked state of each of these jobs (from `history`), one round trip for all;
        ``""`` for one pushed without a retention or expired."""
        return self._call(lambda: StatusStore(self.redis, self.keys).states(jids))

    # -- actions -------------------------------------------------------------------------------

    def enable(self) -> bool:
        return self._set(True)

    def disable(self) -> bool:
        return self._set(False)

    def _set(self, enabled: bool) -> bool:
        done = self._call(lambda: self.periodic_store.set_status(self.name, enabled))
        if done:
            self.fields["status"] = "enabled" if enabled else "disabled"
        return done

    def run_now(self) -> str | None:
        """Push the job now, outside its schedule (sidekiq-cron's "enqueue now"); its ticks
        are unchanged. Returns the jid, or None if the entry is gone or bad (`error`), or a
        middleware stopped the push. The run's time is Redis's (see `redis_clock`)."""
        if self.error:
            return None
        return self.fire(None, self._call(lambda: redis_clock(self)))

    def delete(self) -> bool:
        """Remove it from Redis; a job declared in code comes back at the next worker start."""
        return self._call(lambda: self.periodic_store.delete(self.name))

    def fire(self, tick: float | None, clock: Callable[[], float]) -> str | None:
        """Push the job for ``tick`` (epoch) unless another poller claimed it first, or now
        when ``tick`` is None. ``clock`` tells the time the run is stamped with
        (``last_enqueue_time``, the payload's ``enqueued_at``): Redis's, so that a host whose
        clock is off never writes a last run that hides the next ticks. The job is pushed as
        any other (`djqueue.client.Client.send`), landing through the store's claim-and-push
        (``lua/periodic_fire.lua``, `_Tick`). Returns the jid pushed, else None."""
        now = clock()
        client = Client(self.settings, self.redis)
        payload = normalize(
            self.item(now), self.settings.default_queue, self.settings.default_job_options
        )
        payload.pop("at", None)
        landing = _Tick(self, tick, clock, now)
        token = firing.set(self.name)
        try:
            client.send([payload], landing)
        finally:
            firing.reset(token)
        return str(payload["jid"]) if landing.fired else None

    def item(self, now: float) -> dict[str, Any]:
        """The job to push, built as sidekiq-cron builds it from the entry."""
        args = self.args
        if _flag(self.fields.get("date_as_argument")):
            args = [*args, now]
        if self.active_job:
            queue = self.message.get("queue") or self.queue
            return {
                "class": "ActiveJob::QueueAdapters::SidekiqAdapter::JobWrapper",
                "wrapped": self.klass,
                "queue": queue,
                "description": self.description,
                "args": [
                    {
                        "job_class": self.klass,
                        "job_id": _uuid(),
                        "queue_name": queue,
                        "arguments": args,
                    }
                ],
            }
        item = {
            k: v
            for k, v in self.message.items()
            if k not in ("jid", "created_at", "enqueued_at", "at", "expires_at")
        }
        item["class"] = self.klass
        item["args"] = args
        item["queue"] = self.queue
        return item


class _Tick(Landing):
    """A periodic run: the claim of its tick and the push together, in one script, so a tick
    is pushed once across every poller. The write happens inside the chain, as a push's does."""

    def __init__(
        self, entry: PeriodicJob, tick: float | None, clock: Callable[[], float], now: float
    ) -> None:
        self.entry, self.tick, self.clock, self.now = entry, tick, clock, now
        self.fired = False

    def write(self, client: Client, payloads: list[Payload]) -> None:
        for payload in payloads:
            self._fire(payload, client.settings.max_payload_bytes)

    def _fire(self, payload: Payload, limit: int) -> None:
        entry, tick = self.entry, self.tick
        payload["enqueued_at"] = self.clock()
        if "unique_for" in payload:
            unique.stamp(payload)
        text = encode(payload, limit)
        outcome = entry._call(
            lambda: entry.periodic_store.fire(
                entry.name,
                payload["queue"],
                text,
                payload["jid"],
                enqueue_time(self.now),
                None if tick is None else (tick, iso(tick)),
            )
        )
        if outcome == FIRED:
            self.fired = True
            announce([payload])
        elif outcome == NOT_UNIQUE:
            report_not_unique([payload], {payload["jid"]: ""})


#: The periodic job whose run is being pushed, while the client middleware runs (None for any
#: other push): an integration names a periodic run's monitor after it (`djqueue.contrib.sentry`).
firing: ContextVar[str | None] = ContextVar("djqueue_periodic_firing", default=None)


def redis_clock(api: ApiObject) -> Callable[[], float]:
    """Redis's clock (``TIME``, one round trip), running on from there by this host's
    monotonic clock: what periodic decisions and runs are timed by, whatever the host's
    wall clock says (`djqueue.worker.periodic_poller`)."""
    base, started = api.process_store.server_time(), time.monotonic()
    return lambda: base + (time.monotonic() - started)


def _flag(value: str | None) -> bool:
    return (value or "").strip().lower() in ("true", "t", "yes", "y", "1")


def _uuid() -> str:
    import uuid

    return str(uuid.uuid4())


class PeriodicSet(ApiObject):
    """Every periodic job in Redis, by name."""

    def __iter__(self) -> Iterator[PeriodicJob]:
        return iter(self.all())

    def all(self) -> list[PeriodicJob]:
        """Every entry, bad ones included (`PeriodicJob.error`); raises
        `djqueue.store.periodic.BadPeriodicSet` when ``cron_jobs`` itself is not a set."""
        store = PeriodicStore(self.redis, self.keys)
        found = self._call(store.read_all)
        return [PeriodicJob(name, entry, **self._context()) for name, entry in found.items()]

    def find(self, name: str) -> PeriodicJob | None:
        store = PeriodicStore(self.redis, self.keys)
        entry = self._call(lambda: store.read(name))
        return PeriodicJob(name, entry, **self._context()) if entry else None

    @property
    def size(self) -> int:
        return self._call(PeriodicStore(self.redis, self.keys).size)
