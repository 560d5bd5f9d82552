"""``async def`` jobs on the worker's event loop: many at once on one process, with the same
retries, results, logging and shutdown as thread-run jobs. Real worker processes, real Redis."""

from __future__ import annotations

import asyncio
import json
import signal
import time
from pathlib import Path

import pytest

import djqueue
from djqueue.store.working import requeue_process
from djqueue.worker.launcher import Launcher

from . import jobs_for_worker as jobs
from .worker_support import Running, wait_for

pytestmark = pytest.mark.slow


def threads(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Threads:"):
            return int(line.split()[1])
    raise AssertionError("no thread count")


def test_a_thousand_jobs_awaiting_a_second_finish_in_seconds_on_one_process(spawn, redis_url, r):
    worker = spawn(redis_url, "-c", "5", "--async-concurrency", "1000")
    worker.identity(r)
    jobs.asleep.perform_bulk([["slept", 1]] * 1000)
    started = time.monotonic()
    most = 0
    while r.llen("slept") < 1000 and time.monotonic() - started < 60:
        most = max(most, threads(worker.pid))
        time.sleep(0.05)
    elapsed = time.monotonic() - started
    assert r.llen("slept") == 1000
    # A thread each would take 1,000 threads, one at a time 1,000 s: neither happened.
    assert elapsed < 15, elapsed
    assert most < 40, most
    names = {line.split()[0] for line in r.lrange("slept", 0, -1)}
    assert names == {"djqueue-asyncio"}
    worker.send(signal.SIGTERM)
    assert worker.wait(30) == 0


def test_an_async_job_that_raises_goes_to_retry_with_its_error(spawn, redis_url, r):
    worker = spawn(redis_url)
    jid = jobs.afail.perform_later("no luck")
    wait_for(lambda: r.zcard("retry"), what="the retry")
    (entry,) = [json.loads(raw) for raw in r.zrange("retry", 0, -1)]
    assert entry["jid"] == jid and entry["retry_count"] == 0
    assert (entry["error_class"], entry["error_message"]) == ("ValueError", "no luck")
    wait_for(lambda: f"jid={jid} INFO: fail: " in worker.output(), what="the log line")
    worker.send(signal.SIGTERM)
    assert worker.wait(30) == 0


def test_an_async_jobs_result_and_its_current_job(spawn, redis_url, r):
    worker = spawn(redis_url)
    ref = jobs.aadd.perform_later(2, 3)
    assert djqueue.result(ref, timeout=20) == 5
    jid = jobs.asleep.perform_later("who", 0)
    wait_for(lambda: r.llen("who"), what="the job")
    assert r.lrange("who", 0, -1) == [f"djqueue-asyncio {jid}"]
    wait_for(lambda: f"class=t.asleep jid={jid} INFO: done: " in worker.output(), what="log")
    worker.send(signal.SIGTERM)
    assert worker.wait(30) == 0


def test_term_cancels_async_jobs_past_the_timeout_and_they_go_back(spawn, redis_url, r):
    worker = spawn(redis_url, "-t", "1")
    worker.identity(r)
    jobs.asleep.perform_bulk([["never", 30]] * 5)
    wait_for(lambda: r.llen("queue:default") == 0, what="the jobs taken")
    time.sleep(0.5)
    worker.send(signal.SIGTERM)
    assert worker.wait(30) == 0
    assert r.llen("queue:default") == 5
    assert r.llen("never") == 0
    assert "cancelled 5 async job(s) still running" in worker.output()


class Tagging:
    """A middleware with both forms: ``__call__`` for thread-run jobs, ``acall`` for async."""

    def __call__(self, job, payload, queue, call_next):
        payload["seen_by"] = ["sync"]
        return call_next()

    async def acall(self, job, payload, queue, call_next):
        payload.setdefault("seen_by", []).append("acall")
        try:
            return await call_next()
        finally:
            payload["seen_by"].append("after")


def old_style(job, payload, queue, call_next):
    """A plain middleware with no ``acall``: run in a thread around async jobs."""
    payload.setdefault("seen_by", []).append("thread")
    return call_next()


@djqueue.job(name="t.aseen")
async def aseen(key: str) -> None:
    job = djqueue.current_job()
    assert job is not None
    jobs.r().rpush(key, ",".join(job.get("seen_by", [])))


def test_server_middleware_wraps_async_jobs_with_acall_or_from_a_thread(worker, r):
    djqueue.server_middleware.add(Tagging)
    djqueue.server_middleware.add(old_style)
    try:
        worker()
        aseen.perform_later("seen")
        wait_for(lambda: r.llen("seen"), what="the job")
    finally:
        djqueue.server_middleware.remove(Tagging)
        djqueue.server_middleware.remove(old_style)
    assert r.lrange("seen", 0, -1) == ["acall,thread"]


@djqueue.job(name="t.acancelled", retry=2)
async def acancelled() -> None:
    """Awaits a task that something else cancelled: the job fails, it is not a shutdown."""
    task = asyncio.ensure_future(asyncio.sleep(10))
    task.cancel()
    await task


@djqueue.job(name="t.alookup")
async def alookup(key: str) -> None:
    """Uses the loop's own thread pool (a name lookup), as any network client does."""
    await asyncio.get_running_loop().getaddrinfo("localhost", 80)
    jobs.r().rpush(key, "ok")


def test_an_async_job_whose_code_is_cancelled_goes_to_retry(worker, r):
    worker()
    jid = acancelled.perform_later()
    wait_for(lambda: r.zcard("retry"), what="the retry")
    (entry,) = [json.loads(raw) for raw in r.zrange("retry", 0, -1)]
    assert entry["jid"] == jid and entry["error_class"].endswith("CancelledError")


def test_thirty_async_jobs_through_a_middleware_without_acall_do_not_starve_the_loop(worker, r):
    djqueue.server_middleware.add(old_style)
    try:
        worker(async_concurrency=30)
        alookup.perform_bulk([["looked"]] * 30)
        wait_for(lambda: r.llen("looked") == 30, what="every job", timeout=30)
    finally:
        djqueue.server_middleware.remove(old_style)


def test_finished_async_jobs_are_acknowledged_at_once_so_a_kill_9_reruns_none(redis_url, r):
    """The processors wait in BLMOVE (8 s here) and the heartbeat is a minute away, so no
    fetch or beat carries the acknowledgements: the loop sends them itself. A kill -9 right
    after the drain then leaves nothing to push back and run again."""
    settings = djqueue.get_settings().replace(
        heartbeat_interval=60, socket_timeout=60, concurrency=2, queues=(("default", 0),)
    )
    running = Running(Launcher(settings, block_timeout=8))
    running.thread.start()
    try:
        jobs.asleep.perform_bulk([["slept", 0.01 * (n % 5)] for n in range(40)])
        wait_for(lambda: r.llen("slept") == 40, what="every job")
        lists = running.launcher.fetcher.lists
        keys = lists.keys
        working = keys.working(running.identity, "default")
        wait_for(lambda: r.llen(working) == 0, what="the acknowledgements", timeout=4)
        # What the sweep after a kill -9 of this process does: nothing is left to run again.
        assert requeue_process(r, keys, running.identity, lists.names, crashed=True) == 0
        assert r.llen("queue:default") == 0
    finally:
        running.stop()
