"""The djqueue jobs the worker benchmark runs (loaded with ``djqueue worker -r bench.jobs``)."""

from __future__ import annotations

import time

import redis

from djqueue import job
from djqueue.config import get_settings

_redis: redis.Redis | None = None


def _r() -> redis.Redis:
    """A separate connection for recording results, so they do not touch djqueue's pool."""
    global _redis
    if _redis is None:
        _redis = redis.Redis.from_url(get_settings().redis_url)
    return _redis


@job(name="bench.noop", retry=False)
def noop(index: int) -> None:
    pass


@job(name="bench.sleep", retry=False)
def sleep(index: int) -> None:
    time.sleep(0.010)


@job(name="bench.mark", retry=False)
def mark(key: str) -> None:
    """Record when it ran: the first job of a drain run marks the start of the clock."""
    _r().set(key, repr(time.time()))


@job(name="bench.probe", retry=False)
def probe(key: str, expected_at: float) -> None:
    """Record how long after ``expected_at`` (push time or due time) the job started."""
    _r().rpush(key, repr(time.time() - expected_at))


#: Iterations of `cpu`'s loop: about 5 ms on the machine the figures in bench/README.md were
#: taken on (the bench prints the time it measured for one job).
CPU_LOOPS = 65_000


def burn() -> int:
    """About 5 ms of pure-Python work (rendering, parsing): the GIL held throughout."""
    total = 0
    for n in range(CPU_LOOPS):
        total += n * n % 7
    return total


@job(name="bench.cpu", retry=False)
def cpu(key: str) -> None:
    """`burn`, then count the job done (the first one also notes when the run started)."""
    _r().set(f"{key}:start", repr(time.time()), nx=True)
    burn()
    _r().incr(key)


@job(name="bench.asleep", retry=False)
async def asleep(key: str, seconds: float) -> None:
    """An ``async def`` job waiting on I/O (a second by default), then counted done."""
    import asyncio

    await asyncio.sleep(seconds)
    _r().incr(key)


@job(name="bench.tsleep", retry=False)
def tsleep(key: str, seconds: float) -> None:
    """The same wait in a plain job, holding a processor thread."""
    time.sleep(seconds)
    _r().incr(key)
