"""djqueue.api against djqueue's own worker runtime, running in this process: what the
heartbeat, the retry handler and the dead set write is what the API shows, and the API's
retry and quiet / stop are obeyed."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
import redis

import djqueue
from djqueue.api import DeadSet, ProcessSet, RetrySet, Stats, WorkSet
from djqueue.config import get_settings
from djqueue.worker.launcher import Launcher

from .worker_support import wait_for


def redis_client() -> redis.Redis:
    return redis.Redis.from_url(get_settings().redis_url, decode_responses=True)


@djqueue.job(name="apiw.fail", retry=5, retry_queue="again")
def fail(message: str) -> None:
    redis_client().rpush("apiw:ran", message)
    raise ValueError(message)


@djqueue.job(name="apiw.hold")
def hold(token: str) -> None:
    client = redis_client()
    client.set(f"apiw:started:{token}", "1")
    deadline = time.monotonic() + 30
    while not client.get("apiw:release") and time.monotonic() < deadline:
        time.sleep(0.02)


@pytest.fixture
def launcher(redis_url: str, r) -> Iterator[Launcher]:
    settings = djqueue.get_settings().replace(
        heartbeat_interval=0.3, queues=(("default", 0), ("again", 0)), concurrency=2
    )
    launcher = Launcher(settings, block_timeout=0.2)
    thread = threading.Thread(target=launcher.run, daemon=True)
    thread.start()
    wait_for(lambda: launcher.manager.processors)
    yield launcher
    r.set("apiw:release", "1")
    if thread.is_alive():
        launcher.signal("TERM")
        thread.join(30)
    assert not thread.is_alive()


def test_retry_now_with_the_djqueue_runtime(launcher, r):
    jid = fail.perform_later("first")
    retries = RetrySet()
    entry = wait_for(lambda: retries.find_job(jid))
    assert (entry.error_class, entry.error_message) == ("ValueError", "first")
    assert entry.retry_count == 0 and entry.queue == "again"
    assert entry.at > time.time() + 10

    assert entry.retry()
    wait_for(lambda: r.llen("apiw:ran") == 2)
    again = wait_for(lambda: (e := retries.find_job(jid)) and e.retried_at and e)
    assert again.retry_count == 0  # the manual retry did not use up an automatic one
    wait_for(lambda: Stats().failed == 2)  # flushed by the heartbeat

    assert again.kill()
    dead = DeadSet().find_job(jid)
    assert dead.error_message == "first" and RetrySet().size == 0
    assert dead.retry()
    wait_for(lambda: r.llen("apiw:ran") == 3)


def test_process_work_quiet_and_stop(launcher, r):
    jid = hold.perform_later("a")
    wait_for(lambda: r.get("apiw:started:a"))

    work = wait_for(lambda: list(WorkSet()))
    process = ProcessSet().get(launcher.identity)
    assert process is not None
    assert process.concurrency == 2 and process.queues == ["default", "again"]
    assert process.busy == 1 and process.quiet is False
    assert (work[0].jid, work[0].process, work[0].queue) == (jid, launcher.identity, "default")

    process.quiet_down()
    wait_for(lambda: ProcessSet().get(launcher.identity).quiet)
    r.set("apiw:release", "1")
    process.stop()
    wait_for(lambda: ProcessSet().get(launcher.identity) is None)
    assert list(WorkSet()) == []
