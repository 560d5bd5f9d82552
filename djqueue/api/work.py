"""Busy work: the jobs running right now, across every process.

Each process rewrites ``IDENTITY:work`` (thread id -> JSON with ``queue``, ``payload`` as a JSON
string, and ``run_at``) on every heartbeat. Sidekiq 6.4.1 names that hash ``IDENTITY:workers``;
both are read, so work reported by such a process shows too. The data is as fresh as the last
beat, and a process that died without cleaning up is skipped once its hash expires.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import redis

from ..config import Settings
from ..payload import to_seconds
from .base import ApiObject, Problems
from .record import JobRecord


class Work:
    """One running job: the process and thread running it, its queue, payload and start."""

    def __init__(self, process: str, thread_id: str, data: dict[str, Any]) -> None:
        self.process = process
        self.thread_id = thread_id
        self.queue: str = str(data.get("queue") or "")
        payload = data.get("payload")
        self.payload = JobRecord(payload if isinstance(payload, str) else json.dumps(payload))
        self.run_at = to_seconds(data.get("run_at"))

    def __repr__(self) -> str:
        return f"<Work {self.process} {self.thread_id} {self.payload.job_name}>"

    @property
    def jid(self) -> str | None:
        return self.payload.jid

    @property
    def job_name(self) -> str:
        return self.payload.job_name


class WorkSet(ApiObject):
    """Every running job, oldest start first."""

    def __init__(
        self, settings: Settings | None = None, redis_client: redis.Redis | None = None
    ) -> None:
        super().__init__(settings, redis_client)
        self.key, self.key_type = self.keys.processes, "set"
        #: Work hashes the last `work` could not read: (key, what is wrong).
        self.problems: Problems = []

    def __iter__(self) -> Iterator[Work]:
        return iter(self.work())

    def work(self) -> list[Work]:
        identities = self._call(self.process_store.identities)
        if not identities:
            return []
        hashes, self.problems = self._call(lambda: self.process_store.work(identities))
        found = []
        for identity, work in hashes:
            for thread_id, raw in work.items():
                try:
                    data = json.loads(raw)
                except ValueError:
                    continue
                if isinstance(data, dict):
                    found.append(Work(identity, thread_id, data))
        found.sort(key=lambda w: w.run_at or 0.0)
        return found

    @property
    def size(self) -> int:
        """Busy threads as the processes last reported them (the sum of their ``busy``)."""
        identities = self._call(self.process_store.identities)
        return self._call(lambda: self.process_store.busy(identities))

    def __len__(self) -> int:
        return self.size

    def find(self, jid: str) -> Work | None:
        """The running job with this jid, if any process reports it."""
        return next((w for w in self.work() if w.jid == jid), None)
