"""djqueue.api reading and steering a real Sidekiq 6.4 process (Debian's ruby-sidekiq).

Sidekiq writes its heartbeat, its busy work (``IDENTITY:workers`` in 6.4.1) and its retries
itself here; djqueue.api must read them and its quiet / stop / retry must be obeyed.
"""

from __future__ import annotations

import time

import pytest

import djqueue
from djqueue.api import ProcessSet, Queue, RetrySet, Stats, WorkSet

from .sidekiq_support import require_sidekiq, sidekiq_process
from .worker_support import wait_for

require_sidekiq()


@pytest.fixture
def sidekiq(redis_url, r):
    with sidekiq_process(redis_url, "api_app.rb", "default", "retries") as process:
        yield process
        r.set("api:release", "1")


@pytest.mark.long
def test_process_busy_work_and_stop(sidekiq, r):
    client = djqueue.Client()
    jid = client.push({"class": "ApiBusy", "args": ["one"]})
    wait_for(lambda: r.get("api:busy:one"), timeout=30)

    # The heartbeat runs every 5 s; wait for one that reports the busy job. Sidekiq writes the
    # busy work and the process's busy count in two transactions: wait for both.
    def reported() -> list:
        work = list(WorkSet())
        return work if work and [p.busy for p in ProcessSet()] == [1] else []

    work = wait_for(reported, timeout=20)
    (process,) = ProcessSet()
    assert process.pid == sidekiq.pid
    assert process.concurrency == 2
    assert process.queues == ["default", "retries"]
    assert process.version == "" and process.started_at < time.time()
    assert process.busy == 1 and Stats().busy == 1
    assert (work[0].jid, work[0].job_name, work[0].queue) == (jid, "ApiBusy", "default")
    assert work[0].process == process.identity
    assert 0 <= time.time() - work[0].run_at < 60

    process.quiet_down()
    wait_for(lambda: ProcessSet().get(process.identity).quiet, timeout=20)
    r.set("api:release", "1")
    process.stop()
    assert sidekiq.wait(30) == 0
    assert list(ProcessSet()) == []


def test_retry_written_by_sidekiq_and_retried_by_djqueue(sidekiq, r):
    item = {"class": "ApiFails", "args": [7], "retry": 5, "retry_queue": "retries"}
    jid = djqueue.Client().push(item)
    retries = RetrySet()
    entry = wait_for(lambda: retries.find_job(jid), timeout=30)

    assert entry.job_name == "ApiFails" and entry.args == [7]
    assert entry.error_class == "ArgumentError"
    assert entry.error_message == "failing on purpose 7"
    assert entry.retry_count == 0
    assert entry.queue == "retries"
    assert 0 <= time.time() - entry.failed_at < 60
    assert entry.at > time.time()  # the first retry is at least 15 s away

    assert entry.retry()
    # Sidekiq runs it again at once, it fails again, and the count is kept, not advanced.
    wait_for(lambda: r.llen("api:failed") == 2, timeout=30)
    again = wait_for(lambda: retries.find_job(jid), timeout=30)
    assert again.retry_count == 0
    assert again.retried_at >= entry.failed_at
    assert Queue("retries").size == 0
