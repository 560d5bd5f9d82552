"""Limiters shared by every worker: entering and leaving them, renewing the leases of
concurrency slots, putting a refused job back, and the figures the Limits page shows.

Each limiter is one key under `Keys.limiter` (``djqueue:limit:NAME``): a concurrency limiter's
slots are a sorted set of holder -> lease expiry, a window's grants a sorted set of grant
times, a bucket's tokens a hash. Entering is one script (``lua/limit_enter.lua``) for all the
limiters of a job, so a job takes every one of them or none and a refusal takes nothing.
Every key carries a lifetime; a slot whose holder's process died comes back when its lease
runs out, since only a live process's heartbeat renews it (``lua/limit_renew.lua``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import redis

from .keys import LIMITERS_TTL, Keys
from .replies import integer, number, text, text_hash
from .scripts import LIMIT_ENTER, LIMIT_RENEW, PUT_BACK

#: What `LimitStore.enter` is given for each limiter: kind, name, limit, per (seconds).
Spec = tuple[str, str, int, float]


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


class LimitStore:
    """The limiters of one Redis and namespace."""

    def __init__(self, redis_client: redis.Redis, keys: Keys) -> None:
        self.redis = redis_client
        self.keys = keys

    def enter(
        self,
        specs: Sequence[Spec],
        holder: str,
        lease: float,
        put_back: tuple[str, bytes, float] | None = None,
    ) -> int:
        """Take every limiter in ``specs`` for ``holder``, or none: 0 when taken, else the
        position (1-based) of the first limiter that refused (its hit counted). ``put_back``
        (working list, job as stored, when it is due again): on a refusal the job goes from
        that working list to ``schedule`` in the same step (see `put_back`)."""
        working, stored, at = put_back or (self.keys.schedule, b"", 0.0)
        args: list[Any] = [lease, holder, LIMITERS_TTL, stored, at, self.keys.status_prefix]
        for kind, name, limit, per in specs:
            definition = json.dumps({"kind": kind, "limit": limit, "per": per})
            args += [kind, name, limit, per, definition]
        keys = [self.keys.limiters, self.keys.limiter_hits, self.keys.schedule, working]
        keys += [self.keys.limiter(spec[1]) for spec in specs]
        return int(LIMIT_ENTER(self.redis, keys, args))

    def leave(self, names: Sequence[str], holder: str) -> None:
        """Give back ``holder``'s concurrency slots in these limiters (one round trip)."""
        if len(names) == 1:
            self.redis.zrem(self.keys.limiter(names[0]), holder)
            return
        pipe = self.redis.pipeline(transaction=False)
        for name in names:
            pipe.zrem(self.keys.limiter(name), holder)
        pipe.execute()

    def renew(self, held: Sequence[tuple[str, str]], lease: float) -> int:
        """Push the leases of these (limiter name, holder) slots ``lease`` seconds ahead."""
        if not held:
            return 0
        keys = [self.keys.limiter(name) for name, _ in held]
        return int(LIMIT_RENEW(self.redis, keys, [lease, *(holder for _, holder in held)]))

    def put_back(self, working: str, stored: bytes, at: float) -> bool:
        """A refused job from its working list to ``schedule`` at ``at``, unchanged; False
        when it had left the working list already."""
        keys = [self.keys.schedule, working]
        return bool(PUT_BACK(self.redis, keys, [stored, at, self.keys.status_prefix]))

    def figures(self) -> list[LimiterFigures]:
        """Every limiter used in the last `LIMITERS_TTL` seconds, by name (two round trips)."""
        pipe = self.redis.pipeline(transaction=False)
        pipe.time()
        pipe.hgetall(self.keys.limiters)
        pipe.hgetall(self.keys.limiter_hits)
        clock, raw_definitions, raw_hits = pipe.execute()
        now = clock[0] + clock[1] / 1_000_000
        definitions = text_hash(raw_definitions)
        hits = text_hash(raw_hits)
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
        replies = pipe.execute(raise_on_error=False) if read else []
        return [_used(limiter, reply, now) for limiter, reply in zip(read, replies, strict=True)]


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
