"""Crash-safe fetch: a job moves from its queue into this process's working list in one atomic
step, and leaves the working list only when it is acknowledged.

Hot path: one Lua call acknowledges every job finished since the last call and takes a batch
of jobs, in this fetch's queue order, for the process's buffer (`djqueue.worker.buffer`). When
every queue is empty, an idle processor blocks with BLMOVE on one queue (still queue -> working
list, atomic), idle processors spread over the queues, so a newly pushed job is picked up within
milliseconds without polling. A working list is ``NS:working:IDENTITY:QUEUE``; the
``NS:working_lists`` hash maps each identity to its queue names, so any process can find and
push back a dead process's jobs (see `djqueue.worker.janitor`).
"""

from __future__ import annotations

import json
import random
import threading
from collections.abc import Sequence
from typing import Any

import redis
import redis.exceptions

from ..keys import Keys
from ..scripts import Script

_fetch = Script("djqueue.worker", "fetch")
_requeue = Script("djqueue.worker", "requeue")
_requeue_one = Script("djqueue.worker", "requeue_one")


class Unit:
    """A fetched job: its queue, its JSON exactly as stored, and the working list holding it."""

    __slots__ = ("queue", "raw", "working", "acked")

    def __init__(self, queue: str, raw: bytes, working: str) -> None:
        self.queue = queue
        self.raw = raw
        self.working = working
        #: Set once the job has left the working list another way (retry or dead write).
        self.acked = False

    def __repr__(self) -> str:
        return f"<Unit {self.queue} {self.raw[:60]!r}>"


def working_key(keys: Keys, identity: str, queue: str) -> str:
    return f"{keys.prefix}working:{identity}:{queue}"


def index_key(keys: Keys) -> str:
    """Hash: identity -> JSON list of the queue names it has working lists for."""
    return f"{keys.prefix}working_lists"


class Fetcher:
    """Takes jobs for one process. Queue order follows Sidekiq: with any weight given, each
    name is repeated by its weight, shuffled and de-duplicated on every fetch; otherwise the
    order is fixed (strict priority)."""

    def __init__(
        self,
        redis_client: redis.Redis,
        keys: Keys,
        identity: str,
        queues: tuple[tuple[str, int], ...],
        block_timeout: float = 2.0,
    ) -> None:
        self.redis = redis_client
        self.keys = keys
        self.identity = identity
        self.block_timeout = block_timeout
        self.names: list[str] = list(dict.fromkeys(name for name, _ in queues))
        self.strict = all(weight == 0 for _, weight in queues)
        self.expanded = [name for name, weight in queues for _ in range(max(weight, 1))]
        self.queue_keys = {name: keys.queue(name) for name in self.names}
        self.working = {name: working_key(keys, identity, name) for name in self.names}
        #: KEYS of fetch.lua: (queue, working list) per name, always in this order, so a
        #: queue is named by its pair number in the script's arguments.
        self._keys: list[Any] = [len(self.names) * 2]
        for name in self.names:
            self._keys += (self.queue_keys[name], self.working[name])
        self._pair = {name: str(i) for i, name in enumerate(self.names, 1)}
        self._strict_order = " ".join(self._pair.values())
        self._blockers = dict.fromkeys(self.names, 0)
        self._lock = threading.Lock()
        self._local = threading.local()

    @property
    def index_value(self) -> str:
        return json.dumps(self.names)

    def order(self) -> list[str]:
        """The queue names in the order this fetch tries them."""
        if self.strict:
            return self.names
        names = self.expanded[:]
        random.shuffle(names)
        return list(dict.fromkeys(names))

    def fetch(self, count: int, acks: Sequence[Unit] = (), back: Sequence[Unit] = ()) -> list[Unit]:
        """One round trip: acknowledge ``acks``, push ``back`` (unstarted jobs, newest first)
        to the front of their queues, then take up to ``count`` jobs in this fetch's order."""
        if not (count or acks or back):
            return []
        if self.strict:
            order = self._strict_order
        else:
            order = " ".join([self._pair[name] for name in self.order()])
        args: list[Any] = [count, order, len(acks)]
        for unit in acks:
            args += (self._pair[unit.queue], unit.raw)
        for unit in back:
            args += (self._pair[unit.queue], unit.raw)
        reply = self._call_fetch(args)
        units = []
        for i in range(0, len(reply), 2):
            name = self.names[int(reply[i]) - 1]
            units.append(Unit(name, reply[i + 1], self.working[name]))
        return units

    def _call_fetch(self, args: list[Any]) -> Any:
        """EVALSHA of fetch.lua on this thread's own connection.

        The hot path skips redis-py's pool, retry and instrumentation layers (about a third of
        the CPU a job costs) by talking to a connection that belongs to the processor thread.
        """
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = self.redis.connection_pool.make_connection()
        try:
            conn.send_command("EVALSHA", _fetch.sha, *self._keys, *args)
            return conn.read_response()
        except redis.exceptions.NoScriptError:
            _fetch.ensure_loaded(self.redis)
            conn.send_command("EVALSHA", _fetch.sha, *self._keys, *args)
            return conn.read_response()
        except BaseException:
            conn.disconnect()
            raise

    def block(self) -> Unit | None:
        """Wait up to ``block_timeout`` for a job on the queue fewest idle processors watch."""
        with self._lock:
            name = min(self.order(), key=self._blockers.__getitem__)
            self._blockers[name] += 1
            # With more queues than idle processors some queue has no watcher: look around
            # more often, so a job there waits well under the full block timeout.
            uncovered = 0 in self._blockers.values()
        timeout = min(self.block_timeout, 0.5) if uncovered else self.block_timeout
        try:
            raw = self.redis.blmove(
                self.queue_keys[name],
                self.working[name],
                timeout,  # type: ignore[arg-type]  # Redis takes float seconds
                "RIGHT",
                "LEFT",
            )
        finally:
            with self._lock:
                self._blockers[name] -= 1
        if raw is None:
            return None
        return Unit(name, bytes(raw), self.working[name])  # type: ignore[arg-type]

    def requeue(self, unit: Unit) -> bool:
        """Push one job back to the front of its queue; False if it had already left."""
        return bool(
            _requeue_one(self.redis, [unit.working, self.keys.queue(unit.queue)], [unit.raw])
        )

    def requeue_all(self, drop_index: bool = True) -> int:
        """Push every job in this process's working lists back to the front of its queue."""
        return requeue_identity(self.redis, self.keys, self.identity, self.names, drop_index)

    def working_jobs(self) -> dict[str, list[bytes]]:
        """What the working lists hold now, per working-list key."""
        pipe = self.redis.pipeline(transaction=False)
        for key in self.working.values():
            pipe.lrange(key, 0, -1)
        return dict(zip(self.working.values(), pipe.execute(), strict=True))


def requeue_identity(
    redis_client: redis.Redis,
    keys: Keys,
    identity: str,
    queue_names: list[str],
    drop_index: bool = True,
) -> int:
    """Push back everything ``identity``'s working lists hold; atomic, so never twice."""
    pairs: list[str] = []
    for name in queue_names:
        pairs += (working_key(keys, identity, name), keys.queue(name))
    return int(
        _requeue(
            redis_client,
            [index_key(keys), keys.queues, *pairs],
            [identity if drop_index else "", *queue_names],
        )
    )
