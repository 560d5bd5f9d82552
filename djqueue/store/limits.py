"""Limiters shared by every worker: entering and leaving them, renewing the leases of
concurrency slots, parking or putting back a refused job, and the figures the Limits page
shows.

Each limiter is one key under `Keys.limiter` (``djqueue:limit:NAME``): a concurrency limiter's
slots are a sorted set of holder -> lease expiry, a window's grants a sorted set of grant
times, a bucket's tokens a hash. Entering is one script (``lua/limit_enter.lua``) for all the
limiters of a job, so a job takes every one of them or none and a refusal takes nothing.
Every key carries a lifetime; a slot whose holder's process died comes back when its lease
runs out, since only a live process's heartbeat renews it (``lua/limit_renew.lua``).

A job a concurrency limiter refuses is parked (``Keys.parked_jobs``, ``lua/parking.lua``) in
the refusing step, and sent to the front of its queue when a slot is given back
(``lua/limit_leave.lua``) or, failing that, by the janitor's sweep while slots are free
(``lua/limit_unpark.lua``). A job whose payload names its concurrency limiters is parked at
the push already when they have no room (``lua/admission.lua``, `djqueue.limits.admission`).
One a window or a bucket refuses is put back in the schedule set for the moment the limiter
opens."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

import redis

from . import bad_keys
from .keys import LIMITERS_TTL, Keys
from .replies import integer, number, text, text_hash
from .scripts import LIMIT_ENTER, LIMIT_LEAVE, LIMIT_RENEW, LIMIT_UNPARK, PARKED_COUNT, PUT_BACK

#: What `LimitStore.enter` is given for each limiter: kind, name, limit, per (seconds).
Spec = tuple[str, str, int, float]
#: Jobs one sweep (`LimitStore.unpark`) sends back per limiter at most: a limiter no longer
#: defined sends its parked jobs back in slices this big, one per beat.
UNPARK_MOST = 1000
#: Jobs of one parked list read to count parked jobs by queue: about 20 ms of Redis time.
PARKED_READ = 10_000


class Parked(NamedTuple):
    """Parked jobs by the queue they go back to (`LimitStore.parked_by_queue`)."""

    counts: dict[str, int]
    #: Queues whose count is a floor: seen in a parked list longer than `PARKED_READ`.
    floors: frozenset[str]


#: What `LimitStore.put_back` answers: put back in time, or parked.
PUT_BACK_DONE, PARKED = 1, 2


@dataclass(frozen=True)
class Refusal:
    """A limiter refused (`LimitStore.enter`): which (1-based, in the order given), in how many
    seconds it opens (a window, a bucket: the job given was put back for then; -1 for a
    concurrency limiter, which cannot tell), and whether the job given was parked."""

    position: int
    opens_in: float
    parked: bool


@dataclass(frozen=True)
class LimiterFigures:
    """One limiter as the Limits page shows it. ``used`` is the slots held (concurrent), the
    grants in the last ``per`` seconds (window) or the tokens spent (bucket, not yet refilled);
    ``hits`` the times it refused a job since it was first used (or its counters expired)."""

    name: str
    kind: str
    limit: int
    per: float
    used: float
    hits: int
    #: The definition could not be read (hand-written, or another version's): shown as bad.
    problem: str = ""
    #: Jobs a concurrency limiter refused that wait for one of its slots, out of their queues.
    parked: int = 0


class LimitStore:
    """The limiters of one Redis and namespace."""

    def __init__(
        self, redis_client: redis.Redis, keys: Keys, default_queue: str = "default"
    ) -> None:
        self.redis = redis_client
        self.keys = keys
        #: Where a parked job without a ``queue`` field goes back to (as the poller sends it).
        self.default_queue = default_queue

    def enter(
        self,
        specs: Sequence[Spec],
        holder: str,
        lease: float,
        job: tuple[str, bytes, float] | None = None,
    ) -> Refusal | None:
        """Take every limiter in ``specs`` for ``holder``, or none: None when taken, else the
        `Refusal` of the first limiter that refused (its hit counted). ``job`` (working list,
        job as stored, the wait when a concurrency refusal cannot park it): on a refusal the
        job leaves that working list in the same step, parked by a concurrency limiter, put
        back in the schedule set for the moment a window or a bucket opens (or its turn after
        the jobs it refused before, at its pace)."""
        working, stored, fallback = job or (self.keys.schedule, b"", 0.0)
        args: list[Any] = [lease, holder, LIMITERS_TTL, stored, fallback, self.keys.status_prefix]
        keys = [
            self.keys.limiters,
            self.keys.limiter_hits,
            self.keys.schedule,
            working,
            self.keys.parked,
            self.keys.limiter_turns,
        ]
        for kind, name, limit, per in specs:
            definition = json.dumps({"kind": kind, "limit": limit, "per": per})
            args += [kind, name, limit, per, definition]
            keys += self._slot_keys(name)
        reply = LIMIT_ENTER(self.redis, keys, args)
        if not reply[0]:
            return None
        bad_keys.report(bad_keys.pairs(reply[3]))
        return Refusal(int(reply[0]), float(reply[1]), bool(reply[2]))

    def _slot_keys(self, name: str) -> list[str]:
        """Limiter ``name``'s keys as the limit scripts take them: its slots, its parked jobs
        and its admitted jobs."""
        return [self.keys.limiter(name), self.keys.parked_jobs(name), self.keys.admitted(name)]

    def leave(self, slots: Sequence[tuple[str, int]], holder: str) -> int:
        """Give back ``holder``'s slots in these (name, limit) concurrency limiters, and for
        each one given back send a parked job to its queue (one round trip); returns how
        many were sent."""
        keys = [self.keys.parked, self.keys.paused]
        args: list[Any] = [holder, self.keys.queue(""), self.default_queue]
        for name, limit in slots:
            keys += self._slot_keys(name)
            args += [name, limit]
        reply = LIMIT_LEAVE(self.redis, keys, args)
        bad_keys.report(bad_keys.pairs(reply[1]))
        return int(reply[0])

    def unpark(self, admitted_for: float, most: int = UNPARK_MOST) -> int:
        """The sweep: send parked jobs to their queues while their limiters have free slots
        (at most ``most`` per limiter); returns how many were sent. A job admitted to its
        queue (`Keys.admitted`) holds room for ``admitted_for`` seconds at most: one deleted
        from its queue must not keep parked jobs waiting for ever."""
        keys = [self.keys.parked, self.keys.limiters, self.keys.paused]
        args = [
            self.keys.limiter(""),
            self.keys.parked_jobs(""),
            self.keys.queue(""),
            self.default_queue,
            most,
            self.keys.admitted(""),
            admitted_for,
        ]
        reply = LIMIT_UNPARK(self.redis, keys, args)
        bad_keys.report(bad_keys.pairs(reply[1]))
        return int(reply[0])

    def parked_by_queue(self, queue: str = "") -> Parked:
        """How many jobs are parked for limiters' slots, by the queue each goes back to (only
        ``queue``'s when given), in one round trip; a queue with none is left out. At most
        `PARKED_READ` jobs of each limiter's list are read: the queues seen in a longer one
        have a floor for a count (`Parked.floors`; the Limits page counts every list whole)."""
        args = [self.keys.parked_jobs(""), self.default_queue, queue, PARKED_READ]
        found, floors, bad = PARKED_COUNT(self.redis, [self.keys.parked], args)
        bad_keys.report(bad_keys.pairs(bad))
        pairs = zip(found[::2], found[1::2], strict=True)
        counts = {text(name): int(count) for name, count in pairs}
        return Parked(counts, frozenset(text(name) for name in floors))

    def renew(self, held: Sequence[tuple[str, str]], lease: float) -> int:
        """Push the leases of these (limiter name, holder) slots ``lease`` seconds ahead."""
        if not held:
            return 0
        keys = [self.keys.limiter(name) for name, _ in held]
        return int(LIMIT_RENEW(self.redis, keys, [lease, *(holder for _, holder in held)]))

    def put_back(
        self, working: str, stored: bytes, at: float, concurrent: tuple[str, int] | None = None
    ) -> int:
        """A job refused by a limiter it entered in its code, from its working list: parked
        when ``concurrent`` (the limiter's name and limit) is still full, else to
        ``schedule`` at ``at``, unchanged. Returns `PUT_BACK_DONE`, `PARKED`, or 0 when it had
        left the working list already."""
        keys = [self.keys.schedule, working]
        args: list[Any] = [stored, at]
        if concurrent is not None:
            name, limit = concurrent
            keys += [self.keys.limiter(name), self.keys.parked_jobs(name), self.keys.parked]
            args += [name, limit]
        reply = PUT_BACK(self.redis, keys, [*args, self.keys.status_prefix])
        bad_keys.report(bad_keys.pairs(reply[1]))
        return int(reply[0])

    def figures(self) -> list[LimiterFigures]:
        """Every limiter used in the last `LIMITERS_TTL` seconds, by name, then the names that
        hold parked jobs without a definition (two round trips)."""
        pipe = self.redis.pipeline(transaction=False)
        pipe.time()
        pipe.hgetall(self.keys.limiters)
        pipe.hgetall(self.keys.limiter_hits)
        pipe.smembers(self.keys.parked)
        clock, raw_definitions, raw_hits, raw_parked = pipe.execute(raise_on_error=False)
        for reply in (clock, raw_definitions, raw_hits):
            if isinstance(reply, Exception):
                raise reply
        if isinstance(raw_parked, Exception):
            bad = bad_keys.met(self.redis, self.keys.parked, "set", "parked jobs not counted")
            bad_keys.report([bad])
            raw_parked = set()
        now = clock[0] + clock[1] / 1_000_000
        definitions = text_hash(raw_definitions)
        hits = text_hash(raw_hits)
        parking = {text(name) for name in raw_parked}
        read = []
        pipe = self.redis.pipeline(transaction=False)
        for name in sorted(definitions):
            limiter = _definition(name, definitions[name], integer(hits.get(name)))
            read.append(limiter)
            key = self.keys.limiter(name)
            if limiter.kind == "concurrent":
                pipe.zcount(key, f"({now}", "+inf")
            elif limiter.kind == "window":
                pipe.zcount(key, f"({now - limiter.per}", "+inf")
            elif limiter.kind == "bucket":
                pipe.hmget(key, "tokens", "at")
            else:
                pipe.exists(key)
        undefined = sorted(parking - set(definitions))
        concurrent = {limiter.name for limiter in read if limiter.kind == "concurrent"}
        counted = sorted(parking | concurrent)
        for name in counted:
            pipe.llen(self.keys.parked_jobs(name))
        replies = pipe.execute(raise_on_error=False) if read or counted else []
        parked = {
            name: integer(reply) if not isinstance(reply, Exception) else 0
            for name, reply in zip(counted, replies[len(read) :], strict=True)
        }
        found = [
            replace(_used(limiter, reply, now), parked=parked.get(limiter.name, 0))
            for limiter, reply in zip(read, replies[: len(read)], strict=True)
        ]
        return found + [
            LimiterFigures(
                name,
                "?",
                0,
                0.0,
                0,
                integer(hits.get(name)),
                f"{parked[name]} job(s) parked and no definition: they go back to their "
                "queues at the next sweeps",
                parked[name],
            )
            for name in undefined
            if parked[name]
        ]


def _definition(name: str, raw: str, hits: int) -> LimiterFigures:
    try:
        found = json.loads(raw)
        kind = str(found["kind"])
        limit, per = int(found["limit"]), float(found["per"])
    except (ValueError, TypeError, KeyError) as exc:
        return LimiterFigures(name, "?", 0, 0.0, 0, hits, f"unreadable definition: {exc}")
    return LimiterFigures(name, kind, limit, per, 0, hits)


def _used(limiter: LimiterFigures, reply: Any, now: float) -> LimiterFigures:
    """The figures with ``used`` read from the limiter's key (a key of the wrong type is named
    as the limiter's problem; the page still answers)."""
    if limiter.problem:
        return limiter
    if isinstance(reply, Exception):
        return replace(limiter, problem=f"its key holds another type ({text(reply)})")
    if limiter.kind != "bucket":
        return replace(limiter, used=integer(reply))
    tokens, at = (number(value) for value in reply)
    if tokens is None or at is None:
        return limiter
    refilled = tokens + max(0.0, now - at) * limiter.limit / limiter.per
    return replace(limiter, used=round(max(0.0, limiter.limit - refilled), 1))
