"""Worker processes, as their heartbeats describe them, and remote quiet / stop.

Each worker keeps its identity in the ``processes`` set and a hash under its identity that
expires 60 s after the last beat. A member whose hash has expired is a process that died
without cleaning up; `ProcessSet` prunes such members as Sidekiq does, at most once a minute
across all readers and workers (the store's prune, under Sidekiq 7's ``process_cleanup`` key).
Signals are not sent to the process directly: they are pushed onto ``IDENTITY-signals``, which
its heartbeat pops.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import redis

from ..config import Settings
from ..errors import EmbeddedProcess
from ..payload import to_seconds
from ..store.replies import integer, text
from .base import ApiObject, Problems

#: The signals an embedded process ignores, with what they ask.
QUIET_STOP = {"TSTP": "quiet", "TERM": "stop"}

#: The fields of the process hash, besides ``info``, that a process listing shows.
FIELDS = ("info", "busy", "beat", "quiet", "rss", "rtt_us", "concurrency")


class Process(ApiObject):
    """One live worker process: its ``info`` plus the figures of its last heartbeat."""

    def __init__(
        self,
        info: dict[str, Any],
        fields: dict[str, Any],
        settings: Settings | None = None,
        redis_client: redis.Redis | None = None,
    ) -> None:
        super().__init__(settings, redis_client)
        self.info = info
        self.identity: str = str(info.get("identity") or fields.get("identity") or "")
        self.busy = integer(fields.get("busy"))
        self.beat = to_seconds(text(fields.get("beat")) or None)
        self.quiet = text(fields.get("quiet")) == "true"
        self.rss = integer(fields.get("rss"))
        self.rtt_us = integer(fields.get("rtt_us"))
        self._concurrency = fields.get("concurrency")

    def __repr__(self) -> str:
        return f"<Process {self.identity} busy={self.busy}>"

    def __getitem__(self, name: str) -> Any:
        return self.info.get(name)

    @property
    def hostname(self) -> str:
        return str(self.info.get("hostname", ""))

    @property
    def pid(self) -> int:
        return integer(self.info.get("pid"))

    @property
    def tag(self) -> str:
        return str(self.info.get("tag") or "")

    @property
    def labels(self) -> list[str]:
        labels = self.info.get("labels")
        return [str(x) for x in labels] if isinstance(labels, list) else []

    @property
    def queues(self) -> list[str]:
        """The queue names; from ``capsules`` when the process describes them (Sidekiq
        8.0.9+, which will drop ``queues``), as Sidekiq 8's ``Process#queues`` reads them."""
        if self._capsules():
            return list(self.weights)
        queues = self.info.get("queues")
        return [str(q) for q in queues] if isinstance(queues, list) else []

    def _capsules(self) -> list[dict[str, Any]]:
        capsules = self.info.get("capsules")
        if not isinstance(capsules, dict):
            return []
        return [c for c in capsules.values() if isinstance(c, dict)]

    @property
    def weights(self) -> dict[str, int]:
        """Queue weights (Sidekiq 7+ writes them; empty for older writers)."""
        capsules = self._capsules()
        weights = [c.get("weights") for c in capsules] if capsules else self.info.get("weights")
        if isinstance(weights, list):  # 7.x writes a list with one hash per capsule
            merged: dict[str, int] = {}
            for part in weights:
                if isinstance(part, dict):
                    merged.update(part)
            return merged
        return dict(weights) if isinstance(weights, dict) else {}

    @property
    def concurrency(self) -> int:
        """Threads; the hash field (Sidekiq 8.1.2+) wins over ``info``."""
        return integer(self._concurrency, integer(self.info.get("concurrency")))

    @property
    def started_at(self) -> float | None:
        return to_seconds(self.info.get("started_at"))

    @property
    def version(self) -> str:
        return str(self.info.get("version") or "")

    @property
    def embedded(self) -> bool:
        """An embedded Sidekiq 7+ process (``info["embedded"]``), run inside another application
        that starts and stops it: it ignores quiet and stop (`can_signal`)."""
        return bool(self.info.get("embedded"))

    @property
    def can_signal(self) -> bool:
        """Whether quiet and stop reach this process: False for an `embedded` one, for which
        Sidekiq's Busy page offers neither and its API refuses them."""
        return not self.embedded

    @property
    def stopping(self) -> bool:
        """True once the process is quiet: it takes no new jobs and is about to stop."""
        return self.quiet

    def signal(self, name: str) -> None:
        """Ask the process to act on ``TSTP`` (quiet), ``TERM`` (stop) or ``TTIN`` (dump).

        Raises `djqueue.errors.EmbeddedProcess` for quiet or stop of an `embedded` process."""
        if name in QUIET_STOP and not self.can_signal:
            raise EmbeddedProcess(self.identity, QUIET_STOP[name])
        self._call(lambda: self.process_store.signal(self.identity, name))

    def quiet_down(self) -> None:
        """Stop taking new jobs; running ones finish (TSTP)."""
        self.signal("TSTP")

    def stop(self) -> None:
        """Shut down: finish or requeue running jobs within the timeout, then exit (TERM)."""
        self.signal("TERM")

    def dump_threads(self) -> None:
        """Log every thread's stack (TTIN)."""
        self.signal("TTIN")


class ProcessSet(ApiObject):
    """The live processes, sorted by identity; built with ``clean=True`` it prunes dead ones."""

    def __init__(
        self,
        clean: bool = True,
        settings: Settings | None = None,
        redis_client: redis.Redis | None = None,
    ) -> None:
        super().__init__(settings, redis_client)
        self.key, self.key_type = self.keys.processes, "set"
        #: Identity hashes the last `processes` could not read: (key, what is wrong).
        self.problems: Problems = []
        if clean:
            self.cleanup(force=False)

    def _identities(self) -> list[str]:
        return self._call(self.process_store.identities)

    def cleanup(self, force: bool = True) -> int:
        """Remove members whose hash has no ``info`` (their heartbeat expired); returns how
        many. Unless ``force``, runs only if no reader or worker did so a moment ago."""
        return self._call(lambda: self.process_store.prune(force=force))

    def __iter__(self) -> Iterator[Process]:
        return iter(self.processes())

    def processes(self) -> list[Process]:
        """Every process with a live heartbeat, in one pipelined round trip after the listing."""
        identities = self._identities()
        if not identities:
            return []

        replies, self.problems = self._call(lambda: self.process_store.fields(identities, FIELDS))
        result = []
        for identity, values in zip(identities, replies, strict=False):
            fields = dict(zip(FIELDS, values or (None,) * len(FIELDS), strict=False))
            if fields["info"] is None:  # stopped between the listing and now (or unreadable)
                continue
            try:
                info = json.loads(text(fields["info"]))
            except ValueError:
                info = {}
            if not isinstance(info, dict):
                info = {}
            info.setdefault("identity", identity)
            result.append(Process(info, fields, **self._context()))
        return result

    def get(self, identity: str) -> Process | None:
        return next((p for p in self.processes() if p.identity == identity), None)

    @property
    def size(self) -> int:
        """Members of ``processes`` (not checked against heartbeats, like Sidekiq's)."""
        return self._call(self.process_store.count)

    def __len__(self) -> int:
        return self.size

    @property
    def total_concurrency(self) -> int:
        return sum(p.concurrency for p in self.processes())

    @property
    def total_rss(self) -> int:
        """Kilobytes, summed over live processes."""
        return sum(p.rss for p in self.processes())

    def quiet_all(self) -> None:
        """Quiet every process that can be quieted (not the `Process.embedded` ones, which
        Sidekiq's Quiet All skips too)."""
        for process in self.processes():
            if process.can_signal:
                process.quiet_down()

    def stop_all(self) -> None:
        """Stop every process that can be stopped (not the `Process.embedded` ones)."""
        for process in self.processes():
            if process.can_signal:
                process.stop()
