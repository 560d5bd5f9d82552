"""Limits shared by every worker: at most N jobs at once, N per window, a token bucket.

A limiter is named, and its state is in Redis (`djqueue.store.limits`), so every worker
process of the cluster counts against the same limit::

    stripe = djqueue.limits.concurrent("stripe", 10)

    @djqueue.job(limits=[stripe, djqueue.limits.window("mailgun", 100, per=60)])
    def charge(order_id): ...

    @djqueue.job(concurrency=5)        # the job's own concurrent limiter, "job:NAME"
    def export(report_id): ...

    def refund(order_id):              # or entered in code, around part of the work
        with djqueue.limits.concurrent("stripe", 10):
            ...

A job whose declared limiters refuse it does not run and does not wait in its thread, and is
not counted as a retry: refused by a concurrency limiter, it is parked, out of its queue,
until a slot of that limiter is given back, and then goes to the front of its queue; refused
by a window or a bucket, it is put back in the schedule set for the moment the limiter opens
(`OverLimit.retry_after`). A job pushed while its concurrency limiters have no room (slots
held, or promised to jobs of theirs already queued) is parked at the push instead of queued:
its payload names them (`ADMISSION_FIELD`). The processor takes the next job meanwhile. A
limiter entered in code raises `djqueue.errors.OverLimit` when it is full; in a worker that
parks or puts back the job the same way (what ran before the ``with`` runs again then: enter
limiters first). A concurrency slot is a lease renewed by the heartbeat of the worker holding
it: a killed worker's slots come back within `lease_seconds` (three heartbeat intervals, the
time after which a silent worker counts as dead), and its parked jobs one janitor sweep (a
beat) later.
"""

from __future__ import annotations

import contextvars
import math
import os
import random
import secrets
import threading
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from .errors import OverLimit

#: Kinds of limiter, as the store and the Limits page name them.
KINDS = ("concurrent", "window", "bucket")
#: Wait before a job refused by a concurrency limiter is due again when it cannot be parked
#: (seconds, before jitter; its parked list's key holds another type).
CONCURRENT_BACKOFF = 1.0
#: Bounds of `Limiter.backoff` for a window or a bucket: the wait ``with`` suggests before
#: the store tells when the limiter opens (a refusal answers that, see `enter`).
RATE_BACKOFF = (0.5, 10.0)
#: Heartbeats a concurrency slot outlives its holder's last one (`djqueue.worker.janitor`'s
#: SILENT_BEATS: a worker silent that long is dead, and its jobs go back too).
LEASE_BEATS = 3


@dataclass(frozen=True)
class Limiter:
    """A named limit: ``kind`` is "concurrent" (``limit`` at once), "window" (``limit`` in
    any ``per`` seconds) or "bucket" (``limit`` tokens, refilled at ``limit / per`` a
    second). Usable as ``@job(limits=[...])`` and as a ``with`` block."""

    kind: str
    name: str
    limit: int
    per: float = 0.0

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"limiter kind must be one of {', '.join(KINDS)}, got {self.kind!r}")
        if not isinstance(self.name, str) or not self.name or len(self.name) > 200:
            raise ValueError(f"limiter name must be a non-empty string, got {self.name!r}")
        if isinstance(self.limit, bool) or not isinstance(self.limit, int) or self.limit < 1:
            raise ValueError(
                f"limiter {self.name!r}: limit must be an integer >= 1, got {self.limit!r}"
            )
        per = self.per
        if self.kind != "concurrent" and (
            isinstance(per, bool)
            or not isinstance(per, (int, float))
            or not math.isfinite(per)
            or per <= 0
        ):
            raise ValueError(f"limiter {self.name!r}: per must be seconds > 0, got {per!r}")

    @property
    def spec(self) -> tuple[str, str, int, float]:
        return (self.kind, self.name, self.limit, float(self.per))

    def backoff(self) -> float:
        """Seconds a refused job waits before it is due again (before jitter)."""
        if self.kind == "concurrent":
            return CONCURRENT_BACKOFF
        low, high = RATE_BACKOFF
        return min(high, max(low, self.per / self.limit))

    def __enter__(self) -> Limiter:
        holder = _holder()
        _entered.set((*_entered.get(), holder))
        try:
            enter([self], holder)
        except BaseException:
            _entered.set(_entered.get()[:-1])
            raise
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        stack = _entered.get()
        holder = stack[-1]
        _entered.set(stack[:-1])
        leave([self], holder)


def concurrent(name: str, limit: int) -> Limiter:
    """At most ``limit`` holders at once across the cluster."""
    return Limiter("concurrent", name, limit)


def window(name: str, limit: int, per: float = 1.0) -> Limiter:
    """At most ``limit`` entries in any ``per`` seconds (a sliding window)."""
    return Limiter("window", name, limit, per)


def bucket(name: str, limit: int, per: float = 1.0) -> Limiter:
    """A token bucket: bursts of up to ``limit``, then ``limit`` per ``per`` seconds."""
    return Limiter("bucket", name, limit, per)


def job_limiters(name: str, concurrency: Any, limits: Any) -> tuple[Limiter, ...]:
    """A job's limiters from its ``concurrency`` and ``limits`` options (checked here, where
    the job is declared)."""
    found: list[Limiter] = []
    if concurrency is not None:
        if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
            raise ValueError(f"concurrency must be an integer >= 1, got {concurrency!r}")
        found.append(concurrent(f"job:{name}", concurrency))
    if limits is not None:
        if isinstance(limits, Limiter) or not isinstance(limits, Iterable):
            raise ValueError("limits must be a list of djqueue.limits limiters")
        for limiter in limits:
            if not isinstance(limiter, Limiter):
                raise ValueError(f"limits must hold djqueue.limits limiters, got {limiter!r}")
            found.append(limiter)
    names = [limiter.name for limiter in found]
    if len(set(names)) != len(names):
        raise ValueError(f"a job names a limiter twice: {', '.join(sorted(names))}")
    return tuple(found)


#: The payload field naming a job's concurrency limiters, ``[[name, limit], ...]``: the push
#: parks the job instead of queueing it while one of them has no room (``lua/admission.lua``).
ADMISSION_FIELD = "concurrent_limits"


def admission(limiters: Sequence[Limiter]) -> list[list[Any]]:
    """What a job with these limiters carries in `ADMISSION_FIELD` ([] without a concurrency
    limiter: the push then queues it unchecked, as a Ruby client's job)."""
    return [[limiter.name, limiter.limit] for limiter in limiters if limiter.kind == "concurrent"]


# -- entering and leaving, and the leases held by this process ------------------------------

_entered: contextvars.ContextVar[tuple[str, ...]] = contextvars.ContextVar(
    "djqueue_limits_entered", default=()
)
_lock = threading.Lock()
#: (limiter name, holder) -> times entered: the concurrency slots this process holds, whose
#: leases its heartbeat renews.
_held: Counter[tuple[str, str]] = Counter()


def _holder() -> str:
    """Who holds a slot entered in code: the running job's jid and a token, or the process."""
    from .executor import current_job

    job = current_job()
    jid = job.get("jid") if job else None
    return f"{jid or os.getpid()}:{secrets.token_hex(4)}"


def lease_seconds(heartbeat_interval: float | None = None) -> float:
    """How long a concurrency slot lives without its holder's heartbeat."""
    if heartbeat_interval is None:
        from .config import get_settings

        heartbeat_interval = get_settings().heartbeat_interval
    return LEASE_BEATS * heartbeat_interval


def _store() -> Any:
    from .client import get_client
    from .store.limits import LimitStore

    client = get_client()
    return LimitStore(client.redis, client.keys, client.settings.default_queue)


def enter(
    limiters: Sequence[Limiter],
    holder: str,
    store: Any = None,
    lease: float = 0.0,
    job: tuple[str, bytes] | None = None,
) -> None:
    """Take every one of ``limiters`` for ``holder``, or raise `OverLimit` naming the first
    that refused (nothing is taken then). ``job``, the worker's (its working list and the job
    as stored): the job left the working list in the same step, parked by a concurrency
    limiter, put back for the moment a window or a bucket opens (`OverLimit.parked` says
    which; see `djqueue.store.limits.LimitStore.enter`)."""
    if not limiters:
        return
    store = store or _store()
    specs = [limiter.spec for limiter in limiters]
    fallback = (job[0], job[1], CONCURRENT_BACKOFF * random.uniform(1.0, 2.0)) if job else None
    refused = store.enter(specs, holder, lease or lease_seconds(), fallback)
    if refused:
        limiter = limiters[refused.position - 1]
        wait = refused.opens_in if refused.opens_in >= 0 else limiter.backoff()
        raise OverLimit(limiter.name, limiter.kind, wait, refused.parked, limiter.limit)
    slots = [(limiter.name, holder) for limiter in limiters if limiter.kind == "concurrent"]
    if slots:
        with _lock:
            _held.update(slots)


def leave(limiters: Sequence[Limiter], holder: str, store: Any = None) -> None:
    """Give back ``holder``'s concurrency slots (windows and buckets have nothing to give);
    each slot given back sends the oldest job parked for it back to its queue."""
    slots = [(limiter.name, limiter.limit) for limiter in limiters if limiter.kind == "concurrent"]
    if not slots:
        return
    with _lock:
        for name, _ in slots:
            _held[(name, holder)] -= 1
            if _held[(name, holder)] <= 0:
                del _held[(name, holder)]
    (store or _store()).leave(slots, holder)


def held() -> list[tuple[str, str]]:
    """The concurrency slots this process holds now, for its heartbeat to renew."""
    with _lock:
        return list(_held)
