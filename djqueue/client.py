"""The client: turns a job item into Sidekiq-format JSON and writes it to Redis.

``push`` costs one Redis round trip: the store's push (`djqueue.store.JobStore.push`) adds the
queue to ``queues`` and LPUSHes the job, or ZADDs it to ``schedule``, atomically. ``push_bulk``
writes up to ``batch_size`` jobs per round trip. Any other codebase that speaks Sidekiq's format
can run what this writes.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import redis

from . import config, connection
from .config import Settings
from .errors import PayloadTooLarge, RedisUnavailable
from .middleware import Chain, client_middleware
from .payload import (
    Payload,
    check_json_args,
    check_json_options,
    check_queue_name,
    dumps,
    new_jid,
    now,
)
from .signals import job_enqueued
from .store import JobStore, Keys


class Client:
    """Push jobs, as ``Sidekiq::Client`` does::

        Client().push({"class": "HardWorker", "args": [1, "x"], "queue": "critical"})
        Client().push_bulk({"class": "HardWorker", "args": [[1], [2], [3]]})

    ``class`` is any string: the job may be run by another codebase. ``at`` (epoch seconds)
    schedules the job. Raises `djqueue.errors.RedisUnavailable` when Redis cannot be reached;
    nothing is half-written then, as every write is atomic.
    """

    def __init__(
        self,
        settings: Settings | None = None,
        redis_client: redis.Redis | None = None,
        middleware: Chain | None = None,
    ) -> None:
        self.settings = settings or config.get_settings()
        self.redis = redis_client or connection.get_redis(self.settings)
        self.keys = Keys(self.settings.namespace)
        self.store = JobStore(self.redis, self.keys)
        self.middleware = client_middleware if middleware is None else middleware

    # -- public ------------------------------------------------------------------------------

    def push(self, item: dict[str, Any]) -> str | None:
        """Write one job; returns its jid, or None if a client middleware stopped it."""
        payload = self.normalize(item)
        return payload["jid"] if self._through_middleware(payload) else None

    def push_bulk(self, item: dict[str, Any], batch_size: int = 1000) -> list[str]:
        """Write one job per entry of ``item["args"]`` (a list of argument lists).

        ``at`` may be one time for all or a list with one time per job. Returns the jids of
        the jobs written, in order (jobs a middleware stopped are left out).
        """
        args_list = item.get("args")
        if not isinstance(args_list, list) or not all(isinstance(a, list) for a in args_list):
            raise TypeError("push_bulk needs 'args' as a list of argument lists")
        at = item.get("at")
        if isinstance(at, list) and len(at) != len(args_list):
            raise ValueError("push_bulk: 'at' must have one entry per job")
        if batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        # Everything but args, jid and at is shared: normalise and check it once (Sidekiq does
        # the same, so the jobs of one bulk share created_at), then copy it per job.
        base = {k: v for k, v in item.items() if k not in ("at", "jid")}
        base["args"] = []
        if not isinstance(at, list):
            base["at"] = at
        template = self.normalize(base)
        template.pop("at", None)
        payloads: list[Payload] = []
        for index, args in enumerate(args_list):
            try:
                check_json_args(args)
            except TypeError as exc:
                raise TypeError(f"push_bulk job #{index}: {exc}") from None
            one = template.copy()
            one["args"] = args
            one["jid"] = new_jid()
            when = at[index] if isinstance(at, list) else at
            if when is not None:
                if not isinstance(when, (int, float)) or isinstance(when, bool):
                    raise TypeError(
                        f"push_bulk job #{index}: 'at' must be epoch seconds, "
                        f"got {type(when).__name__}"
                    )
                one["at"] = when
            payloads.append(one)
        jids: list[str] = []
        direct = not len(self.middleware) and getattr(_batch, "pending", None) is None
        for start in range(0, len(payloads), batch_size):
            batch = payloads[start : start + batch_size]
            if direct:  # nothing can stop or hold a job: write the batch as it is
                self.raw_push(batch)
                jids += [payload["jid"] for payload in batch]
                continue
            with batched():
                for payload in batch:
                    if self._through_middleware(payload):
                        jids.append(payload["jid"])
        return jids

    def _through_middleware(self, payload: Payload) -> bool:
        """Run the chain around the write; True if the job was written or held for later.

        A push goes ahead when the chain reached its end, whatever the middleware returned: a
        middleware that calls ``call_next()`` but forgets to return its value still pushes.
        A middleware may also hold the write back (the Django app does, until the transaction
        commits): it keeps ``call_next``, calls it later, and returns the payload now, so the
        caller gets the jid at once.
        """
        if not len(self.middleware):
            self._write(payload)
            return True
        reached = False

        def final() -> Payload:
            nonlocal reached
            reached = True
            self._write(payload)
            return payload

        result = self.middleware.invoke(payload["class"], payload, payload["queue"], final)
        return reached or result is payload

    def _write(self, payload: Payload) -> None:
        pending = getattr(_batch, "pending", None)
        if pending is None:
            self.raw_push([payload])
        else:
            pending.setdefault(self, []).append(payload)

    def normalize(self, item: dict[str, Any]) -> Payload:
        """Check the item and fill in Sidekiq's fields (jid, created_at, queue, retry)."""
        if not isinstance(item, dict):
            raise TypeError(f"a job item must be a dict, got {type(item).__name__}")
        name = item.get("class")
        if not isinstance(name, str) or not name:
            raise ValueError("a job item needs 'class': the job's registered name")
        args = item.get("args")
        if not isinstance(args, list):
            raise TypeError(f"'args' must be a list, got {type(args).__name__}")
        check_json_args(args)
        # A job's own options, over the project's defaults, over djqueue's.
        payload: Payload = {
            "retry": True,
            "queue": self.settings.default_queue,
            **self.settings.default_job_options,
        }
        payload.update(item)
        if "retention" in payload and not payload["retention"]:
            del payload["retention"]  # ``retention=None`` turns a job's tracking off
        check_queue_name(payload["queue"])
        at = payload.get("at")
        if at is not None and (not isinstance(at, (int, float)) or isinstance(at, bool)):
            raise TypeError(f"'at' must be epoch seconds, got {type(at).__name__}")
        jid = payload.get("jid")
        if not jid:
            payload["jid"] = new_jid()
        elif not isinstance(jid, str):
            raise TypeError(f"'jid' must be a string, got {type(jid).__name__}")
        if "created_at" not in payload:
            payload["created_at"] = now()
        check_json_options(item)
        return payload

    # -- the write -----------------------------------------------------------------------------

    def raw_push(self, payloads: list[Payload]) -> None:
        """Write normalised payloads; due jobs to their queues, future ones to ``schedule``.

        One round trip whatever the mix of queues and times, so a batch is written whole or
        not at all. The testing helpers replace this method to capture jobs instead of
        writing them.
        """
        t = now()
        scheduled: list[tuple[float, str]] = []
        queued: dict[str, list[str]] = {}
        limit = self.settings.max_payload_bytes
        for payload in payloads:
            at = payload.pop("at", None)
            if at is not None and at > t:
                payload.pop("enqueued_at", None)
            else:
                payload["enqueued_at"] = t
            text = dumps(payload)
            if len(text) * 4 > limit and len(text.encode()) > limit:
                raise PayloadTooLarge(payload["class"], len(text.encode()), limit)
            if at is not None and at > t:
                scheduled.append((float(at), text))
            elif payload["queue"] in queued:
                queued[payload["queue"]].append(text)
            else:
                queued[payload["queue"]] = [text]
        # `connection.translate_errors` inlined: a context manager costs ~1 us a push.
        try:
            self.store.push(queued, scheduled)
        except RedisUnavailable:  # PoolExhausted: ours already
            raise
        except connection.CONNECTION_ERRORS as exc:
            raise RedisUnavailable(self.settings.safe_redis_url, exc) from exc
        if job_enqueued.receivers:
            for payload in payloads:
                job_enqueued.send(payload["class"], payload=payload)


_batch = threading.local()


@contextmanager
def batched() -> Iterator[None]:
    """Write the jobs pushed by this thread inside the block together when it ends: one round
    trip per client instead of one per job. Nested blocks join the outermost one; if the block
    raises, none of its jobs is written. ``push_bulk`` uses it per batch, and the Django app
    for the jobs held until a transaction commits.
    """
    if getattr(_batch, "pending", None) is not None:
        yield
        return
    _batch.pending = {}
    try:
        yield
        pending: dict[Client, list[Payload]] = _batch.pending
    finally:
        _batch.pending = None
    for client, payloads in pending.items():
        client.raw_push(payloads)


def current_batch() -> object | None:
    """A token for the `batched` block open in this thread (None outside one): integrations
    that hold writes back use it to keep one batch's jobs together."""
    return getattr(_batch, "pending", None)


#: One client per distinct settings (the process's, each Flask app's), and the last one used.
_clients: dict[Settings, Client] = {}
_last: tuple[Settings, Client] | None = None


def client_for(settings: Settings) -> Client:
    """The shared client for ``settings``: one per distinct settings, so apps that share a
    Redis and a namespace share a pool, and a push costs no new object. A client whose pool
    `djqueue.connection.reset` dropped (as `configure` does) is replaced."""
    global _last
    last = _last
    if last is not None and last[0] is settings:
        return last[1]
    client = _clients.get(settings)
    if client is None or client.redis is not connection.get_redis(settings):
        client = _clients[settings] = Client(settings)
    _last = (settings, client)
    return client


def get_client() -> Client:
    """The client for the settings in force here (`djqueue.config.get_settings`: the pinned
    ones, the current app's, or the process-wide ones)."""
    return client_for(config.get_settings())
