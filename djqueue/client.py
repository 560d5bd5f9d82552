"""The client: turns a job item into Sidekiq-format JSON and writes it to Redis.

``push`` costs one Redis round trip: a Lua script adds the queue to ``queues`` and LPUSHes the
job atomically, or one ZADD for a scheduled job. ``push_bulk`` writes up to ``batch_size`` jobs
per round trip. Any other codebase that speaks Sidekiq's format can run what this writes.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import redis

from . import config, connection
from .config import Settings
from .keys import Keys
from .middleware import Chain, client_middleware
from .payload import Payload, check_json_args, dumps, new_jid, now
from .scripts import Script
from .signals import job_enqueued

_push_script = Script("djqueue.lua", "push")

#: Item keys that are not written into the payload.
_CLIENT_ONLY = ("at",)


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
        self.middleware = client_middleware if middleware is None else middleware

    # -- public ------------------------------------------------------------------------------

    def push(self, item: dict[str, Any]) -> str | None:
        """Write one job; returns its jid, or None if a client middleware stopped it."""
        pushed = self._through_middleware(self.normalize(item))
        if not pushed:
            return None
        self.raw_push([pushed])
        return pushed["jid"]

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
        base = {k: v for k, v in item.items() if k not in ("args", "at", "jid")}
        payloads: list[Payload] = []
        for index, args in enumerate(args_list):
            one = {**base, "args": args}
            when = at[index] if isinstance(at, list) else at
            if when is not None:
                one["at"] = when
            payloads.append(self.normalize(one))
        jids: list[str] = []
        for start in range(0, len(payloads), batch_size):
            kept = []
            for payload in payloads[start : start + batch_size]:
                pushed = self._through_middleware(payload)
                if pushed:
                    kept.append(pushed)
            if kept:
                self.raw_push(kept)
                jids.extend(p["jid"] for p in kept)
        return jids

    def _through_middleware(self, payload: Payload) -> Payload | None:
        """The payload to write, or None when a middleware stopped the push."""
        return self.middleware.invoke(payload["class"], payload, payload["queue"], lambda: payload)

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
        payload: Payload = {"retry": True, "queue": self.settings.default_queue}
        payload.update(item)
        if not isinstance(payload["queue"], str) or not payload["queue"]:
            raise ValueError(f"queue must be a non-empty string, got {payload['queue']!r}")
        at = payload.get("at")
        if at is not None and (not isinstance(at, (int, float)) or isinstance(at, bool)):
            raise TypeError(f"'at' must be epoch seconds, got {type(at).__name__}")
        if not payload.get("jid"):
            payload["jid"] = new_jid()
        payload.setdefault("created_at", now())
        extra = {k: v for k, v in payload.items() if k not in ("args", "class")}
        check_json_args(extra, root="option")
        return payload

    # -- the write -----------------------------------------------------------------------------

    def raw_push(self, payloads: list[Payload]) -> None:
        """Write normalised payloads; due jobs to their queues, future ones to ``schedule``.

        The testing helpers replace this method to capture jobs instead of writing them.
        """
        t = now()
        scheduled: list[tuple[str, float]] = []
        queued: dict[str, list[str]] = defaultdict(list)
        for payload in payloads:
            at = payload.pop("at", None)
            if at is not None and at > t:
                payload.pop("enqueued_at", None)
                scheduled.append((dumps(payload), float(at)))
            else:
                payload["enqueued_at"] = t
                queued[payload["queue"]].append(dumps(payload))
        with connection.translate_errors(self.settings):
            if len(queued) == 1 and not scheduled:
                ((queue, jsons),) = queued.items()
                _push_script(
                    self.redis, [self.keys.queues, self.keys.queue(queue)], [queue, *jsons]
                )
            else:
                pipe = self.redis.pipeline(transaction=True)
                for queue, jsons in queued.items():
                    pipe.sadd(self.keys.queues, queue)
                    pipe.lpush(self.keys.queue(queue), *jsons)
                if scheduled:
                    pipe.zadd(self.keys.schedule, dict(scheduled))
                pipe.execute()
        if job_enqueued.receivers:
            for payload in payloads:
                job_enqueued.send(payload["class"], payload=payload)


_default: tuple[Settings, Client] | None = None


def get_client() -> Client:
    """The process-wide client for the current settings (rebuilt after `configure`)."""
    global _default
    settings = config.get_settings()
    if _default is None or _default[0] is not settings:
        _default = (settings, Client(settings))
    return _default[1]
