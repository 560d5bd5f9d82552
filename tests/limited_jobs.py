"""Jobs with limiters, for the limits tests (``-r tests.limited_jobs`` in worker subprocesses).

They record in Redis what a user would look at: how many ran at once, when each started.
Imported by a worker subprocess, the module shortens its beats and polls (the environment's
``DJQ_TEST_FAST_BEATS``), so a killed worker's slot comes back within seconds.
"""

from __future__ import annotations

import os
import time

import djqueue
from djqueue.limits import concurrent, window
from tests.jobs_for_worker import r

if os.environ.get("DJQ_TEST_FAST_BEATS"):
    djqueue.configure(heartbeat_interval=0.5, poll_interval=0.2)

#: The shared limiter of `stripe_call` (entered in code) and `charge` (declared).
STRIPE = concurrent("t.stripe", 2)


@djqueue.job(name="lim.capped", concurrency=3)
def capped(n: int) -> None:
    """Counts itself in ``running`` while it runs and records the count it saw."""
    client = r()
    client.rpush("seen", client.incr("running"))
    time.sleep(0.05)
    client.decr("running")
    client.rpush("capped_done", n)


@djqueue.job(name="lim.free")
def free(n: int) -> None:
    r().rpush("free_done", n)


@djqueue.job(name="lim.rated", limits=[window("t.rate", 10, per=1)])
def rated(n: int) -> None:
    """Records when the window let it in: its grant, read from the window's sorted set
    (where it stays a second), in Redis's clock. Its own start comes a moment later, longer
    on a loaded machine, so the grant is what the limit is measured on."""
    job = djqueue.current_job()
    assert job is not None
    found = list(r().zscan_iter("djqueue:limit:t.rate", match=f"{job['jid']}@*"))
    r().rpush("rated_at", f"{found[0][1]:.6f}" if found else "missing")


def _until_released() -> None:
    """Until the test sets ``release`` (30 s at most)."""
    for _ in range(600):
        if r().exists("release"):
            return
        time.sleep(0.05)


@djqueue.job(name="lim.hold", concurrency=1)
def hold(n: int) -> None:
    """Holds its slot until the test sets ``release`` (30 s at most)."""
    r().rpush("holding", n)
    _until_released()


@djqueue.job(name="lim.hold_in_code")
def hold_in_code(n: int) -> None:
    """Holds a slot of ``t.kill``, entered in its code, until the test sets ``release``. Each
    entry is a holder of its own, so after a crash the same job run again is one more holder
    and waits for the dead one's lease (a declared limiter is held by the jid: a job run again
    takes its own slot back at once)."""
    with concurrent("t.kill", 1):
        r().rpush("holding", n)
        _until_released()


@djqueue.job(name="lim.in_code")
def in_code(n: int) -> None:
    """Enters the shared limiter in its code, around the part that needs it."""
    with STRIPE:
        client = r()
        client.rpush("stripe_seen", client.incr("stripe_running"))
        time.sleep(0.05)
        client.decr("stripe_running")
    client.rpush("in_code_done", n)


@djqueue.job(name="lim.ahold", concurrency=1)
async def ahold(n: int) -> None:
    """``hold`` as an ``async def`` job, run on the worker's event loop."""
    import asyncio

    r().rpush("aholding", n)
    for _ in range(600):
        if r().exists("release"):
            return
        await asyncio.sleep(0.05)
