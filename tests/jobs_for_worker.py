"""Jobs the worker tests run, in-process and in worker subprocesses (``-r tests.jobs_for_worker``).

They record what happened in Redis (or, for the kill tests, in a file that survives Redis
restarts), so the tests assert on what a user would see.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time

import redis

import djqueue
from djqueue.config import get_settings

_clients: dict[str, redis.Redis] = {}


def r() -> redis.Redis:
    """A decoding client on the configured Redis, separate from djqueue's own pool."""
    url = get_settings().redis_url
    client = _clients.get(url)
    if client is None:
        client = _clients[url] = redis.Redis.from_url(url, decode_responses=True)
    return client


@djqueue.job(name="t.record")
def record(key: str, *values: object) -> None:
    """Append the arguments (as one JSON-ish string) to the list ``key``."""
    r().rpush(key, repr(list(values)))


@djqueue.job(name="t.order")
def order(key: str, label: str) -> None:
    r().rpush(key, label)


@djqueue.job(name="t.when")
def when(key: str) -> None:
    r().rpush(key, repr(time.time()))


@djqueue.job(name="t.hold")
def hold(key: str, n: int) -> None:
    """Records its start, then runs until the test sets ``release`` (30 s at most)."""
    r().rpush(key, n)
    for _ in range(600):
        if r().exists("release"):
            return
        time.sleep(0.05)


@djqueue.job(name="t.die")
def die() -> None:
    """Kills its own process, as a crash in a C extension or the OOM killer would."""
    os._exit(3)


@djqueue.job(name="t.linger")
def linger(key: str) -> None:
    """Leaves a thread behind that is not a daemon, as careless job code does."""
    threading.Thread(target=time.sleep, args=(120,), name="left-behind", daemon=False).start()
    r().rpush(key, "started")


@djqueue.job(name="t.slow")
def slow(key: str, seconds: float) -> None:
    r().rpush(key, "started")
    time.sleep(seconds)
    r().rpush(key, "finished")


@djqueue.job(name="t.fail", retry=3)
def fail(message: str) -> None:
    raise ValueError(message)


def _charge(order: str) -> None:
    raise LookupError(f"no card on file for {order}")


@djqueue.job(name="t.nested", retry=3)
def nested(order: str) -> None:
    """Fails two calls deep, with no ``backtrace`` option: the default traceback is kept."""
    _charge(order)


@djqueue.job(name="t.no_backtrace", retry=3, backtrace=False)
def no_backtrace(order: str) -> None:
    _charge(order)


def _deeper(depth: int) -> int:
    return _deeper(depth + 1) + 1 if depth < 2_000 else 0


@djqueue.job(name="t.recurse", retry=3, backtrace=True)
def recurse() -> None:
    """A 2,000-deep recursion: more frames than any cap (a RecursionError with the default
    recursion limit, a ValueError past it)."""
    _deeper(0)
    raise ValueError("the recursion limit is above 2,000 here")


exhausted: list[tuple[str, str]] = []


@djqueue.job(name="t.fail_quietly", retry=False)
def fail_quietly(message: str) -> None:
    """Fails; registered with ``retry=False``, so a payload without a retry field is dropped."""
    raise RuntimeError(message)


def _retry_now(count: int, exc: BaseException) -> float:
    return 0


def _exhausted(payload: dict, exc: BaseException) -> None:
    r().rpush("exhausted", f"{payload['jid']}:{type(exc).__name__}")


@djqueue.job(
    name="t.flaky", retry=1, backtrace=5, retry_in=_retry_now, retries_exhausted=_exhausted
)
def flaky(message: str) -> None:
    raise KeyError(message)


@djqueue.job(name="t.mark", retry=25)
def mark(number: int) -> None:
    """Write the jid to the file named by DJQ_TEST_RECORD; a small pause keeps jobs in flight."""
    job = djqueue.current_job()
    assert job is not None
    line = f"{job['jid']}\n".encode()
    fd = os.open(os.environ["DJQ_TEST_RECORD"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)
    time.sleep(0.002)


@djqueue.job(name="t.add", retention=60)
def add(a: int, b: int) -> int:
    """Tracked by default (``retention``): its return value is kept for a minute."""
    return a + b


@djqueue.job(name="t.stoppable", retention=60)
def stoppable(key: str) -> str:
    """Runs until it is cancelled (30 s at most), checking ``current_job().cancelled``."""
    r().rpush(key, "started")
    job = djqueue.current_job()
    for _ in range(600):
        if job.cancelled:
            r().rpush(key, "saw cancel")
            return "stopped early"
        time.sleep(0.05)
    return "ran to the end"


def _retry_in_a_second(count: int, exc: BaseException) -> float:
    return 1.0


@djqueue.job(name="t.flaky_later", retry=1, retry_in=_retry_in_a_second, retention=60)
def flaky_later(message: str) -> None:
    raise KeyError(message)


@djqueue.job(name="t.windowed", retry=1, retry_for=2, retry_in=_retry_in_a_second)
def windowed(message: str) -> None:
    """Fails every time; retried each second for two seconds after its first failure (the
    window replaces the count of ``retry``)."""
    raise KeyError(message)


@djqueue.job(name="t.hold_then_fail", retry=3, retention=60)
def hold_then_fail(key: str) -> None:
    """Records its start, waits for ``release`` (30 s at most), then fails."""
    r().rpush(key, "started")
    for _ in range(600):
        if r().exists("release"):
            break
        time.sleep(0.05)
    raise ValueError("failed after the cancel")


@djqueue.job(name="t.ahold_then_fail", retry=3, retention=60)
async def ahold_then_fail(key: str) -> None:
    """`hold_then_fail` as an ``async def`` job."""
    r().rpush(key, "started")
    for _ in range(600):
        if r().exists("release"):
            break
        await asyncio.sleep(0.05)
    raise ValueError("failed after the cancel")


_hoard: list[bytes] = []


@djqueue.job(name="t.hog")
def hog(key: str, megabytes: int) -> None:
    """Keeps ``megabytes`` of memory for the life of its process, as a leaking job does."""
    _hoard.append(os.urandom(megabytes * 1024 * 1024))
    r().rpush(key, os.getpid())


@djqueue.job(name="t.asleep")
async def asleep(key: str, seconds: float) -> None:
    """An ``async def`` job: awaits, then records the thread it ran on and its jid."""
    await asyncio.sleep(seconds)
    job = djqueue.current_job()
    r().rpush(key, f"{threading.current_thread().name} {job and job['jid']}")


@djqueue.job(name="t.afail", retry=3)
async def afail(message: str) -> None:
    await asyncio.sleep(0)
    raise ValueError(message)


@djqueue.job(name="t.aadd", retention=60)
async def aadd(a: int, b: int) -> int:
    await asyncio.sleep(0.01)
    return a + b


@djqueue.job(name="t.fork")
def fork(key: str) -> None:
    """Forks, and the child returns like the parent: a job that forks and does not exit. The
    child records its pid first."""
    if os.fork() == 0:
        r().rpush(key, os.getpid())


@djqueue.job(name="t.close_stderr")
def close_stderr() -> None:
    """Closes file descriptor 2, as a job tidying up after a subprocess might."""
    os.close(2)


@djqueue.job(name="t.spin", time_limit=1, retry=3)
def spin(key: str) -> None:
    """Loops in Python for ever: only its time limit ends it."""
    r().rpush(key, "started")
    while True:
        pass


@djqueue.job(name="t.aspin", time_limit=1, retry=3)
async def aspin(key: str) -> None:
    """Awaits for an hour: only its time limit ends it."""
    r().rpush(key, "started")
    await asyncio.sleep(3600)


@djqueue.job(name="t.in_time", time_limit=5)
def in_time(key: str) -> None:
    r().rpush(key, "done")


@djqueue.job(name="t.in_c", time_limit=0.5, retry=3)
def in_c(key: str, seconds: float) -> None:
    """Waits in one C call (``time.sleep``) that Python's interruption cannot break."""
    r().rpush(key, "started")
    time.sleep(seconds)
    r().rpush(key, "woke")


@djqueue.job(name="t.tidy", time_limit=0.3, retry=3)
def tidy(key: str) -> None:
    """Loops until its limit, catches the interruption, cleans up and returns."""
    from djqueue.errors import TimeLimitExceeded

    try:
        while True:
            pass
    except TimeLimitExceeded as exc:
        r().rpush(key, str(exc))


def _discard(count: int, exc: BaseException) -> str:
    return "discard"


@djqueue.job(name="t.discarded", retry=5, retry_in=_discard)
def discarded(message: str) -> None:
    """Fails; its ``retry_in`` hook discards it (neither retried nor buried)."""
    raise ValueError(message)
