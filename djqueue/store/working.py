"""Working lists: the jobs a process has taken and not yet acknowledged (crash-safe fetch).

A job moves from ``queue:NAME`` into ``working:IDENTITY:NAME`` in one atomic step, and leaves
it only when acknowledged, retried, buried or pushed back. So a process killed at any moment
leaves its jobs where any live process finds them: the ``working_lists`` hash maps each
identity to its queue names, and `requeue_process` pushes a dead one's lists back.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Sequence
from functools import partial
from typing import Any, Protocol

import redis
import redis.exceptions

from . import bad_keys
from .keys import RECOVERY_TTL, Keys
from .replies import text
from .scripts import REQUEUE_PROCESS, STARTED, TAKE

#: Suffix of a recovered job's field in ``recoveries`` counting its starts next to other
#: jobs (the field named by the jid alone counts its starts alone in its process).
SHARED = ":shared"


class Held(Protocol):
    """A job in hand: the queue it came from and its JSON exactly as stored; ``ending``, for a
    tracked job that ran, is (state, result JSON, error class, error message) to write into
    its status when it is acknowledged (see take.lua), else None."""

    queue: str
    raw: bytes
    ending: tuple[str, str, str, str] | None


class WorkingLists:
    """One process's working lists, one per queue it works on.

    `take` is the worker's hot path: one round trip acknowledges finished jobs, pushes
    unstarted ones back and takes a batch. It talks to a connection of the calling thread's
    own, skipping redis-py's pool, retry and instrumentation layers (about a third of the CPU a
    no-op job costs).
    """

    def __init__(
        self, redis_client: redis.Redis, keys: Keys, identity: str, names: Sequence[str]
    ) -> None:
        self.redis = redis_client
        self.keys = keys
        self.identity = identity
        self.names: list[str] = list(dict.fromkeys(names))
        self.queue_keys = {name: keys.queue(name) for name in self.names}
        #: Queue name -> its working list's key.
        self.working = {name: keys.working(identity, name) for name in self.names}
        #: KEYS of take.lua: (queue, working list) per name, always in this order, so a queue
        #: is named by its pair number in the script's arguments.
        self._keys: list[Any] = [len(self.names) * 2 + 1]
        for name in self.names:
            self._keys += (self.queue_keys[name], self.working[name])
        self._keys.append(keys.recoveries)
        self._pair = {name: str(i) for i, name in enumerate(self.names, 1)}
        self._in_order = " ".join(self._pair.values())
        self._local = threading.local()
        #: Queues whose key held something other than a list at the last `take` (skipped).
        self.broken: set[str] = set()
        #: The last `take` met bad keys (`djqueue.store.bad_keys`).
        self._bad = False

    @property
    def index_value(self) -> str:
        """This process's entry in ``working_lists``: the JSON list of its queue names."""
        return json.dumps(self.names)

    def take(
        self,
        count: int,
        order: Sequence[str] | None = None,
        acks: Sequence[Held] = (),
        back: Sequence[Held] = (),
    ) -> list[tuple[str, bytes, bool]]:
        """Acknowledge ``acks``, push ``back`` (unstarted jobs, newest first) to the front of
        their queues, then take up to ``count`` jobs trying the queues in ``order`` (default:
        the order given at construction). Returns (queue name, job JSON, recovered) per job
        taken; ``recovered``: the job was pushed back after a crash, so the caller counts its
        starts (`count_start`)."""
        return self._take(count, order, acks, back)[1]

    def requeue(self, job: Held) -> bool:
        """Push one job back to the front of its queue; False if it had already left."""
        return self._take(0, None, (), (job,))[0] == 1

    def _take(
        self, count: int, order: Sequence[str] | None, acks: Sequence[Held], back: Sequence[Held]
    ) -> tuple[int, list[tuple[str, bytes, bool]]]:
        pair = self._pair
        sequence = self._in_order if order is None else " ".join([pair[n] for n in order])
        plain = [job for job in acks if job.ending is None]
        ends = [job for job in acks if job.ending is not None] if len(plain) < len(acks) else []
        args: list[Any] = [count, sequence, len(plain), len(ends)]
        for job in plain:
            args += (pair[job.queue], job.raw)
        for job in ends:
            args += (pair[job.queue], job.raw, *job.ending)  # type: ignore[misc]
        for job in back:
            args += (pair[job.queue], job.raw)
        args += (self.keys.status_prefix, self.identity)
        reply = self._call(args)
        names = self.names
        recovered = {int(n) for n in reply[2].split()} if reply[2] else ()
        if reply[3] or self._bad or self.broken:
            # A queue stays broken until a call checks it and finds a list (a call that is
            # served before reaching it does not check it).
            checked = [int(p) for p in reply[1].split()]
            fine = {names[p - 1] for p in checked if p > 0}
            sound = [self.queue_keys[name] for name in self.broken & fine]
            self.broken = (self.broken - fine) | {names[-p - 1] for p in checked if p < 0}
            self._bad = bool(reply[3])
            bad_keys.report(bad_keys.pairs(reply[3]), [self.keys.recoveries, *sound])
        taken = [
            (names[int(reply[i]) - 1], reply[i + 1], (i - 2) // 2 in recovered)
            for i in range(4, len(reply), 2)
        ]
        return int(reply[0]), taken

    def _call(self, args: list[Any]) -> Any:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            # Made outside the pool: it neither counts against the pool's size nor is closed
            # by `cancel_waits` (a blocking pool's disconnect() closes every connection it made).
            pool = self.redis.connection_pool
            conn = self._local.conn = pool.connection_class(**pool.connection_kwargs)
        try:
            conn.send_command("EVALSHA", TAKE.sha, *self._keys, *args)
            return conn.read_response()
        except redis.exceptions.NoScriptError:
            TAKE.ensure_loaded(self.redis)
            conn.send_command("EVALSHA", TAKE.sha, *self._keys, *args)
            return conn.read_response()
        except BaseException:
            conn.disconnect()
            raise

    def block_take(self, name: str, timeout: float) -> tuple[bytes, bool] | None:
        """Wait up to ``timeout`` seconds for a job on queue ``name`` and take it (BLMOVE,
        atomic like `take`); None when none came. Returns (job JSON, recovered) as `take`
        does: a job pushed back after a crash goes straight to an idle peer waiting here, so
        it is looked up in ``recoveries`` too (one more round trip, on the idle path only). A
        tracked job, or a unique job that frees its lock at its start, costs one more
        (``started.lua``)."""
        found: Any = self.redis.blmove(
            self.queue_keys[name],
            self.working[name],
            timeout,  # type: ignore[arg-type]  # Redis takes float seconds
            "RIGHT",
            "LEFT",
        )
        if found is None:
            return None
        raw = bytes(found)
        try:
            jid = json.loads(raw).get("jid")
        except (ValueError, RecursionError, AttributeError):
            jid = None
        recovered = isinstance(jid, str) and self._recovering(jid)
        if b'"retention":' in raw or b'"unique_until":"start"' in raw:
            found = STARTED(self.redis, [], [raw, self.identity, self.keys.status_prefix])
            bad_keys.report(bad_keys.pairs(found))
        return raw, recovered

    def mark_broken(self, name: str) -> None:
        """Queue ``name``'s key turned out not to be a list outside `take` (a BLMOVE refused
        it): skipped like the ones `take` finds, and logged once by name."""
        key = self.queue_keys[name]
        bad_keys.report(
            [bad_keys.met(self.redis, key, "list", "skipped: the other queues are served")]
        )
        self.broken = self.broken | {name}

    def _recovering(self, jid: str) -> bool:
        """Whether ``jid`` is entered in ``recoveries``; never, while that key is not a hash."""
        return bool(self._on_recoveries(lambda: self.redis.hexists(self.keys.recoveries, jid)))

    def _on_recoveries(self, call: Any) -> Any:
        """``call()``, a command on ``recoveries``; 0 when that key is not a hash (logged once
        by name, and no job counts as recovered while it is not)."""
        doing = "skipped: no job counts as recovered"
        return bad_keys.tolerate(self.redis, self.keys.recoveries, "hash", doing, call, 0)

    def cancel_waits(self) -> None:
        """Close the connections of every `block_take` under way (and the pool's idle ones),
        so Redis serves no job to a wait nobody will read; the next call reconnects."""
        self.redis.connection_pool.disconnect()

    def count_start(self, jid: str, alone: bool = True) -> int:
        """Count one more start of a job pushed back after a crash, as run ``alone`` in its
        process (evidence against it, should the process die) or next to other jobs (no
        evidence); returns how many starts of that kind since (each before a death, but for
        this one)."""
        pipe = self.redis.pipeline(transaction=True)
        pipe.hincrby(self.keys.recoveries, jid if alone else jid + SHARED, 1)
        pipe.expire(self.keys.recoveries, RECOVERY_TTL)
        return int(self._on_recoveries(lambda: pipe.execute()[0]))

    def shared_starts(self, jid: str) -> int:
        """Starts of a recovered job next to other jobs since its recovery (each before a
        death its process had with other jobs running)."""
        return int(self.redis.hget(self.keys.recoveries, jid + SHARED) or 0)

    def forget_start(self, jid: str) -> None:
        """The job ran to its end (success or failure) or was buried: no longer a suspect."""
        self._on_recoveries(lambda: self.redis.hdel(self.keys.recoveries, jid, jid + SHARED))

    def requeue_all(self, drop_index: bool = True) -> int:
        """Push every job in these lists back to the front of its queue."""
        return requeue_process(self.redis, self.keys, self.identity, self.names, drop_index)

    def queued(self, names: Sequence[str] | None = None) -> int:
        """How many jobs wait in this process's queues, or in those of ``names`` (a key of
        another type counts as empty: `take` skips it too)."""
        pipe = self.redis.pipeline(transaction=False)
        for name in self.names if names is None else names:
            pipe.llen(self.queue_keys[name])
        return sum(n for n in pipe.execute(raise_on_error=False) if isinstance(n, int))

    def contents(self) -> dict[str, list[bytes]]:
        """What each working list holds now, by queue name."""
        pipe = self.redis.pipeline(transaction=False)
        for key in self.working.values():
            pipe.lrange(key, 0, -1)
        return dict(zip(self.working, pipe.execute(), strict=True))


def requeue_process(
    redis_client: redis.Redis,
    keys: Keys,
    identity: str,
    names: Sequence[str],
    drop_index: bool = True,
    crashed: bool = False,
    lists: Keys | None = None,
) -> int:
    """Push back everything ``identity``'s working lists hold, oldest job first in line, and
    (unless ``drop_index`` is false) delete its ``working_lists`` entry; atomic, so never twice.
    ``crashed``: the process died, so each job is entered in ``recoveries`` and its next starts
    are counted (`WorkingLists.count_start`). ``lists``: the layout naming the working lists
    and their index when it is not ``keys``'s (``keys.earlier``: a process of an earlier
    version); recoveries and statuses are written in ``keys``'s. Returns how many jobs went
    back."""
    lists = lists or keys
    pairs: list[str] = []
    for name in names:
        pairs += (lists.working(identity, name), keys.queue(name))
    args = [
        identity if drop_index else "",
        "1" if crashed else "",
        RECOVERY_TTL,
        *names,
        keys.status_prefix,
    ]
    redis_keys = [lists.working_lists, keys.queues, keys.recoveries, *pairs]
    moved, found = REQUEUE_PROCESS(redis_client, redis_keys, args)
    bad_keys.report(bad_keys.pairs(found))
    return int(moved)


def working_index(redis_client: redis.Redis, keys: Keys) -> dict[str, list[str]]:
    """``working_lists``: identity -> its queue names. An entry that is not a JSON list of
    names is read from the working lists' own key names instead (a SCAN, for that entry
    only), so a dead process's jobs are still found; a ``working_lists`` that is not a hash
    reads as empty. Both are logged once by name. ``keys.earlier`` reads layout 1's index: the
    processes of an earlier version."""
    doing = "skipped: dead processes' jobs wait"
    read = partial(redis_client.hgetall, keys.working_lists)
    entries: Any = bad_keys.tolerate(redis_client, keys.working_lists, "hash", doing, read, {})
    found: dict[str, list[str]] = {}
    bad: list[tuple[str, str]] = []
    for identity, value in entries.items():
        ident = text(identity)
        try:
            names = json.loads(value)
        except (ValueError, TypeError):
            names = None
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            names = _listed(redis_client, keys, ident)
            what = f"holds {bad_keys.quoted(text(value))}, not a JSON list of queue names"
            bad.append((f"{keys.working_lists}[{ident}]", f"{what}; its lists are found by name"))
        found[ident] = names
    bad_keys.report(bad, [f"{keys.working_lists}[{ident}]" for ident in found])
    return found


def _listed(redis_client: redis.Redis, keys: Keys, identity: str) -> list[str]:
    """The queue names of ``identity``'s working lists, from their key names."""
    prefix = keys.working(identity, "")
    pattern = re.sub(r"([*?\[\]\\])", r"\\\1", prefix) + "*"
    return sorted({text(key)[len(prefix) :] for key in redis_client.scan_iter(pattern, 1000)})
