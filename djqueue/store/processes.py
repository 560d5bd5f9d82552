"""Worker processes in Redis: the heartbeat, leaving, pruning the dead, remote signals, counters.

A process announces itself in ``processes`` and in a hash under its identity that expires
`PROCESS_TTL` seconds after its last beat, in Sidekiq's layout, so Sidekiq's Web UI and API
see djqueue's processes and djqueue sees Sidekiq's. Signals are never sent to a process
directly: they wait in ``IDENTITY-signals`` until its heartbeat pops them, which works across
hosts.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any, NamedTuple

import redis
import redis.exceptions

from . import bad_keys
from . import expired as expired_store
from . import metrics as metrics_store
from .keys import DAILY_STATS_TTL, PROCESS_CLEANUP_TTL, PROCESS_TTL, SIGNAL_TTL, Keys
from .replies import integer, text, text_hash, texts
from .scripts import BEAT, LEAVE

#: The signals a process obeys: quiet, stop, dump its threads' stacks.
SIGNALS = ("TSTP", "TERM", "TTIN")


class Beat(NamedTuple):
    """What one heartbeat read back (`ProcessStore.beat`)."""

    signal: str | None
    peers: list[str]
    renewed: bool
    paused: frozenset[str]


class ProcessStore:
    """The process transitions for one Redis and namespace."""

    def __init__(self, redis_client: redis.Redis, keys: Keys) -> None:
        self.redis = redis_client
        self.keys = keys

    def beat(
        self,
        identity: str,
        fields: Mapping[str, Any],
        work: Mapping[str, str],
        queue_names: str,
        processed: int = 0,
        failed: int = 0,
        metrics: metrics_store.Counts | None = None,
        expired: int = 0,
    ) -> Beat:
        """One heartbeat, in one script (``beat.lua``, allowed to run when Redis is out of
        memory): flush the counts, rewrite the busy work (thread id -> JSON), refresh the
        identity hash with ``fields`` and its expiry, record the working lists' queue names
        (JSON), and pop one remote signal.

        Returns a `Beat`: the signal popped or None, the identities in ``working_lists`` (the
        djqueue processes of the cluster, which the poller takes turns with), whether the
        identity hash was missing (a first beat, or Redis lost what it held), and the paused
        queues' names, read by the same script. ``metrics``, the per-job
        counts since the last beat (`djqueue.store.metrics`), and ``expired``, the jobs not
        run for being late (`djqueue.store.expired`), are written in the same round trip."""
        args: list[Any] = [processed, failed, DAILY_STATS_TTL, PROCESS_TTL, identity]
        args += (queue_names, len(fields))
        for pair in (*fields.items(), *work.items()):
            args += pair
        k = self.keys
        keys = [*self._counters(), k.work(identity), k.workers(identity), k.processes]
        keys += (k.process(identity), k.working_lists, k.signals(identity), k.paused)
        if metrics or expired:
            signal, peers, renewed, found, paused = self._beat_with(metrics, expired, keys, args)
        else:
            signal, peers, renewed, found, paused = BEAT(self.redis, keys, args)
        checked = [
            keys[6],
            keys[8],
            keys[10],
            *(keys[0:4:2] if processed else ()),
            *(keys[1:4:2] if failed else ()),
        ]
        bad_keys.report(bad_keys.pairs(found), checked)
        return Beat(
            text(signal) if signal else None,
            [text(p) for p in peers],
            bool(renewed),
            frozenset(texts(paused)),
        )

    def _beat_with(
        self,
        metrics: metrics_store.Counts | None,
        expired: int,
        keys: list[str],
        args: list[Any],
    ) -> Any:
        """``beat.lua`` and the metrics' and expired counts' writes in one pipeline (not a
        transaction: the beat still runs when Redis refuses a write, out of memory say)."""
        pipe = self.redis.pipeline(transaction=False)
        BEAT.queue(pipe, keys, args)
        now = time.time()
        written = metrics_store.add_writes(pipe, self.keys, metrics, now) if metrics else []
        counted = expired_store.add_writes(pipe, self.keys, expired, now)
        replies = pipe.execute(raise_on_error=False)
        metrics_store.report(replies[1 : 1 + len(written)], written)
        expired_store.report(replies[1 + len(written) :], counted)
        beat = replies[0]
        if isinstance(beat, redis.exceptions.NoScriptError):
            return BEAT(self.redis, keys, args)  # loads it; the metrics are already written
        if isinstance(beat, Exception):
            raise beat
        return beat

    def write_metrics(self, metrics: metrics_store.Counts) -> None:
        """The last per-job counts of a process that leaves."""
        if not metrics:
            return
        pipe = self.redis.pipeline(transaction=False)
        written = metrics_store.add_writes(pipe, self.keys, metrics, time.time())
        metrics_store.report(pipe.execute(raise_on_error=False), written)

    def write_expired(self, count: int) -> None:
        """The last expired count of a process that leaves."""
        expired_store.write(self.redis, self.keys, count)

    def clear(
        self, identity: str, processed: int = 0, failed: int = 0, drop_index: bool = True
    ) -> None:
        """Leave cleanly: flush the last counts and remove every trace of ``identity`` (but
        its ``working_lists`` entry when ``drop_index`` is false, so a live process still finds
        jobs that could not be pushed back)."""
        k = self.keys
        keys = [*self._counters(), k.processes, k.working_lists, k.process(identity)]
        keys += (k.work(identity), k.workers(identity), k.signals(identity))
        args = [processed, failed, DAILY_STATS_TTL, identity, "1" if drop_index else ""]
        bad_keys.report(bad_keys.pairs(LEAVE(self.redis, keys, args)))

    def _counters(self) -> list[str]:
        """The lifetime totals and today's (UTC) counters, as ``stat_counts.lua`` takes them."""
        day = time.strftime("%Y-%m-%d", time.gmtime())
        k = self.keys
        return [k.processed, k.failed, k.daily("processed", day), k.daily("failed", day)]

    def reset_counters(self, stats: Sequence[str]) -> None:
        """Set lifetime counters (``"processed"``, ``"failed"``) to 0."""
        self.redis.mset({getattr(self.keys, stat): 0 for stat in stats})

    def server_time(self) -> float:
        """Redis's clock, epoch seconds: what ``beat.lua`` stamps the beats with."""
        seconds, micros = self.redis.time()
        return seconds + micros / 1_000_000

    def server_info(self) -> dict[str, Any]:
        """The server's INFO (its default sections)."""
        return dict(self.redis.info())

    # -- reads for the inspection API ---------------------------------------------------------

    def identities(self) -> list[str]:
        """Members of ``processes``, sorted (not checked against heartbeats, like Sidekiq's)."""
        return texts(self.redis.smembers(self.keys.processes))

    def count(self) -> int:
        """Members of ``processes``."""
        return int(self.redis.scard(self.keys.processes))

    def fields(
        self, identities: Sequence[str], names: Sequence[str]
    ) -> tuple[list[list[Any] | None], list[tuple[str, str]]]:
        """Each identity hash's ``names`` fields as stored (None for a hash that is not one),
        one round trip, and the hashes of the wrong type as (key, problem)."""
        pipe = self.redis.pipeline(transaction=False)
        for identity in identities:
            pipe.hmget(self.keys.process(identity), list(names))
        wanted = [(self.keys.process(identity), "hash") for identity in identities]
        return bad_keys.checked(self.redis, pipe, wanted)

    def work(
        self, identities: Sequence[str]
    ) -> tuple[list[tuple[str, dict[str, str]]], list[tuple[str, str]]]:
        """(identity, thread id -> work JSON) of each live identity (its hash still there),
        from ``IDENTITY:work`` or else Sidekiq 6.4's ``IDENTITY:workers``, one round trip, and
        the work hashes of the wrong type as (key, problem)."""
        pipe = self.redis.pipeline(transaction=False)
        wanted: list[tuple[str, str]] = []
        for identity in identities:
            pipe.exists(self.keys.process(identity))
            pipe.hgetall(self.keys.work(identity))
            pipe.hgetall(self.keys.workers(identity))
            wanted += ((self.keys.process(identity), ""), (self.keys.work(identity), "hash"))
            wanted.append((self.keys.workers(identity), "hash"))
        replies, problems = bad_keys.checked(self.redis, pipe, wanted)
        found = []
        for n, identity in enumerate(identities):
            alive, work, workers = replies[3 * n : 3 * n + 3]
            if alive:
                found.append((identity, text_hash(work or workers)))
        return found, problems

    def busy(self, identities: Sequence[str]) -> int:
        """Busy threads as these processes last reported them (the sum of their ``busy``)."""
        if not identities:
            return 0
        pipe = self.redis.pipeline(transaction=False)
        for identity in identities:
            pipe.hget(self.keys.process(identity), "busy")
        return sum(integer(b) for b in pipe.execute())

    def alive(self, identities: Sequence[str]) -> list[bool]:
        """Whether each identity's hash still holds ``info`` (it beat within the TTL)."""
        return [beat is not None for beat in self.heartbeats(identities)]

    def heartbeats(self, identities: Sequence[str]) -> list[tuple[str, str] | None]:
        """``(info JSON, beat time)`` of each identity's last heartbeat, None when its hash
        has expired, or is not a hash (a live process replaces it at its next beat); one
        round trip."""
        pipe = self.redis.pipeline(transaction=False)
        for identity in identities:
            pipe.hmget(self.keys.process(identity), ["info", "beat"])
        found: list[tuple[str, str] | None] = []
        for reply in pipe.execute(raise_on_error=False):
            if isinstance(reply, redis.exceptions.ResponseError):
                if not bad_keys.is_wrong_type(reply):
                    raise reply
                reply = (None, None)
            info, beat = reply
            found.append(None if info is None else (text(info), text(beat or b"")))
        return found

    def lock(self, key: str, owner: str, seconds: float) -> bool:
        """``SET key owner NX EX seconds``: True for the one caller that got it."""
        return bool(self.redis.set(key, owner, nx=True, ex=max(1, int(seconds))))

    def prune(
        self,
        also_dead: Callable[[str], bool] | None = None,
        keep: str = "",
        force: bool = False,
    ) -> int:
        """Remove from ``processes`` the members whose hash has expired (or that
        ``also_dead`` says are dead), never ``keep``. Unless ``force``, at most once per
        `PROCESS_CLEANUP_TTL` across every worker and reader (Sidekiq 7's ``process_cleanup``
        key). Returns how many were removed."""
        if not force and not self.lock(self.keys.process_cleanup, "1", PROCESS_CLEANUP_TTL):
            return 0
        read = partial(self.redis.smembers, self.keys.processes)
        listed: Any = bad_keys.tolerate(
            self.redis, self.keys.processes, "set", "skipped: no process pruned", read, set()
        )
        members = [text(m) for m in listed if text(m) != keep]
        if not members:
            return 0
        dead = [
            member
            for member, alive in zip(members, self.alive(members), strict=True)
            if not alive or (also_dead is not None and also_dead(member))
        ]
        if not dead:
            return 0
        return int(self.redis.srem(self.keys.processes, *dead))

    def signal(self, identity: str, name: str) -> None:
        """Leave ``name`` (``TSTP``, ``TERM``, ``TTIN``) for ``identity``'s heartbeat to pop."""
        if name not in SIGNALS:
            raise ValueError(f"unknown signal {name!r}; expected one of {', '.join(SIGNALS)}")
        key = self.keys.signals(identity)
        pipe = self.redis.pipeline(transaction=True)
        pipe.lpush(key, name)
        pipe.expire(key, SIGNAL_TTL)
        pipe.execute()
