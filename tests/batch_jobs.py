"""Jobs the batch and chain tests run, in-process and in worker subprocesses
(``-r tests.batch_jobs``). They record what happened in Redis lists, so the tests assert on
what a user would see."""

from __future__ import annotations

import json
import os
import time

import djqueue
from tests.jobs_for_worker import r


def _retry_now(count: int, exc: BaseException) -> float:
    return 0


@djqueue.job(name="b.note")
def note(key: str, value: object) -> None:
    r().rpush(key, json.dumps(value))


@djqueue.job(name="b.slow_note")
def slow_note(key: str, value: object) -> None:
    """Records its start in ``key:started``, then its end after a short pause."""
    time.sleep(0.01)
    r().rpush(key, json.dumps(value))


@djqueue.job(name="b.callback")
def callback(key: str, *args: object) -> None:
    """Records its arguments (the batch's status is the last) and how many jobs of
    ``key:jobs`` had run by then."""
    r().rpush(key, json.dumps([*args, r().llen(f"{key}:jobs")]))


@djqueue.job(name="b.fail_once", retry=3, retry_in=_retry_now)
def fail_once(key: str, value: object) -> None:
    """Fails at its first run, succeeds at the next."""
    if r().incr(f"fail_once:{key}:{value}") == 1:
        raise RuntimeError(f"first run of {value}")
    r().rpush(key, json.dumps(value))


@djqueue.job(name="b.doomed", retry=0)
def doomed(key: str) -> None:
    """Dies at once (retry 0: straight to the dead set)."""
    r().rpush(key, "ran")
    raise RuntimeError("doomed")


@djqueue.job(name="b.fan_out")
def fan_out(key: str, count: int) -> None:
    """Adds ``count`` jobs to its own batch while it runs."""
    batch = djqueue.Batch.current()
    assert batch is not None
    with batch:
        note.perform_bulk([[key, f"added {n}"] for n in range(count)])
    r().rpush(key, json.dumps("fan_out"))


@djqueue.job(name="b.step")
def step(key: str, *args: object) -> object:
    """A chain's step: records its arguments, returns how many it got plus one."""
    r().rpush(key, json.dumps(list(args)))
    return len(args) + 1


@djqueue.job(name="b.wait_cancel")
def wait_cancel(key: str) -> None:
    """Runs until its batch is cancelled (10 s at most), then records what it saw."""
    batch = djqueue.Batch.current()
    assert batch is not None
    r().rpush(f"{key}:started", "1")
    for _ in range(200):
        if batch.cancelled:
            r().rpush(key, "saw cancelled")
            return
        time.sleep(0.05)
    r().rpush(key, "never cancelled")


@djqueue.job(name="b.pid_note")
def pid_note(key: str, value: int) -> None:
    """Records its value and the process that ran it; a short pause keeps jobs in flight."""
    time.sleep(0.005)
    r().rpush(key, json.dumps([value, os.getpid()]))


@djqueue.job(name="b.tally")
def tally(key: str, *args: object) -> None:
    """A callback: records its arguments (the batch's status last) and how many distinct
    values ``key:jobs`` (of `pid_note`) held when it ran."""
    seen = {json.loads(entry)[0] for entry in r().lrange(f"{key}:jobs", 0, -1)}
    r().rpush(key, json.dumps([*args, len(seen)]))


@djqueue.job(name="b.add_to", retry=3, retry_in=_retry_now)
def add_to(total: int, key: str, n: int, fail_first: bool = False) -> int:
    """A chain's step taking the previous step's result first: records and returns
    ``total + n``; with ``fail_first``, fails at its first run."""
    if fail_first and r().incr(f"add_to:{key}:{n}") == 1:
        raise RuntimeError("first run")
    r().rpush(key, json.dumps([total, n]))
    return total + n


@djqueue.job(name="b.dropped", retry=False)
def dropped(key: str) -> None:
    """Fails once and is dropped (retry: false): neither retried nor in the dead set."""
    r().rpush(key, "ran")
    raise RuntimeError("dropped")


@djqueue.job(name="b.until_cancelled")
def until_cancelled(key: str) -> None:
    """Runs until it is cancelled (`djqueue.cancel`, tracked jobs), 10 s at most, and returns."""
    r().rpush(f"{key}:started", "1")
    for _ in range(200):
        job = djqueue.current_job()
        if job is not None and job.cancelled:
            r().rpush(key, "saw cancelled")
            return
        time.sleep(0.05)


@djqueue.job(name="b.until_flagged")
def until_flagged(key: str) -> None:
    """Returns as soon as its status hash holds a cancel request, before its worker's
    heartbeat has read it (the race the acknowledgement must settle as the status does)."""
    job = djqueue.current_job()
    assert job is not None
    r().rpush(f"{key}:started", "1")
    for _ in range(400):
        if r().hexists(f"djqueue:status:{job['jid']}", "cancel"):
            r().rpush(key, "returned")
            return
        time.sleep(0.01)


@djqueue.job(name="b.anote")
async def anote(key: str, value: object) -> None:
    """`note` as an ``async def`` job: run on the worker's event loop, acknowledged by it."""
    r().rpush(key, json.dumps(value))
