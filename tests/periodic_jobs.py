"""Periodic jobs the periodic tests run in worker subprocesses (``-r tests.periodic_jobs``).

Each run records its jid, the second it was pushed in and Redis's time when it ran, so a test
can count pushes per tick (a job killed with its worker may run twice, but it keeps its jid).
"""

from __future__ import annotations

import os

import djqueue
from djqueue.executor import current_job

from .jobs_for_worker import r

#: The schedule, set by the test through the environment (default: every second).
EVERY = os.environ.get("DJQ_TEST_CRON", "* * * * * *")


@djqueue.job(name="p.tick", cron=EVERY)
def tick() -> None:
    payload = current_job()
    assert payload is not None
    seconds, micros = r().time()
    ran = seconds + micros / 1_000_000
    r().rpush("ticks", f"{payload['jid']} {payload['enqueued_at']:.3f} {ran:.3f}")
