"""The connection pool under load: hundreds of threads pushing at once and a thousand
``result()`` waiters each blocking in Redis all get through, queued for a connection rather
than refused; and when no connection frees up in time, the error is djqueue's and says what to
change."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

import pytest

import djqueue
from djqueue import connection
from djqueue.store import Keys
from djqueue.store.working import WorkingLists
from djqueue.worker.launcher import runtime_redis

from . import jobs_for_worker as jobs
from .worker_support import wait_for


def run_at_once(count: int, body: Callable[[int], Any]) -> tuple[list[Any], list[BaseException]]:
    """``body(i)`` on ``count`` threads released together; their results and errors."""
    barrier = threading.Barrier(count)
    results: list[Any] = [None] * count
    errors: list[BaseException] = []

    def run(i: int) -> None:
        barrier.wait()
        try:
            results[i] = body(i)
        except BaseException as exc:  # noqa: BLE001 - every failure is reported by the test
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(300)
    assert not any(thread.is_alive() for thread in threads)
    return results, errors


def test_500_threads_pushing_20_jobs_each_are_all_written(r):
    def push(n: int) -> None:
        for i in range(20):
            jobs.record.perform_later(n * 20 + i)

    _, errors = run_at_once(500, push)
    assert errors == []
    written = {json.loads(raw)["args"][0] for raw in r.lrange("queue:default", 0, -1)}
    assert written == set(range(10_000))


def test_1000_concurrent_result_waiters_all_get_their_result(worker, r):
    jids = [jobs.add.set(retention=60).perform_later(i, 1) for i in range(1000)]
    started = threading.Event()

    def wait(i: int) -> Any:
        started.set()
        return djqueue.result(jids[i], timeout=120)

    # The worker starts once the waiters are waiting: each blocks in Redis until its job ends.
    runner = threading.Thread(target=lambda: (started.wait(), worker()))
    runner.start()
    results, errors = run_at_once(1000, wait)
    runner.join()
    assert errors == []
    assert results == [i + 1 for i in range(1000)]


def test_no_free_connection_in_time_is_a_djqueue_error_naming_the_setting(r):
    djqueue.configure(
        redis_url=djqueue.get_settings().redis_url, max_connections=1, pool_timeout=0.2
    )
    client = connection.get_redis()
    held = client.connection_pool.get_connection()
    try:
        with pytest.raises(djqueue.RedisUnavailable) as raised:
            jobs.record.perform_later(1)
    finally:
        client.connection_pool.release(held)
    assert isinstance(raised.value, djqueue.PoolExhausted)
    assert "max_connections" in str(raised.value) and "1" in str(raised.value)
    jobs.record.perform_later(2)  # the connection is back: the next push goes through
    assert r.llen("queue:default") == 1


def test_result_waits_never_take_the_connections_pushes_need(r):
    djqueue.configure(
        redis_url=djqueue.get_settings().redis_url, max_connections=2, pool_timeout=0.5
    )
    jids = [jobs.add.set(retention=60).perform_later(i, 1) for i in range(4)]

    def wait(i: int) -> Any:
        with pytest.raises(djqueue.ResultTimeout):
            djqueue.result(jids[i], timeout=3)

    waiters = [threading.Thread(target=wait, args=(i,)) for i in range(4)]
    for thread in waiters:
        thread.start()
    wait_for(lambda: blocked_in_blmove(r) == 2, what="two waits blocking in Redis")
    # Both waits' connections are taken (two more waiters queue for them); a push goes through.
    jobs.record.perform_later("pushed while waiting")
    for thread in waiters:
        thread.join(30)
    assert r.llen("queue:default") == 5


def blocked_in_blmove(r) -> int:
    """Clients blocked in BLMOVE now (``cmd`` alone is a client's last command)."""
    return sum(c["cmd"] == "blmove" and "b" in c["flags"] for c in r.client_list())


def test_closing_a_workers_idle_waits_keeps_the_connection_jobs_are_taken_on(r):
    """A worker going quiet closes the connections of its idle BLMOVE waits; a processor's own
    connection (take and acknowledge) stays, so no acknowledgement is cut in flight."""
    lists = WorkingLists(runtime_redis(djqueue.get_settings()), Keys(""), "h:1:abc", ["default"])
    lists.take(0)  # the thread's own connection opens
    opened = r.info("stats")["total_connections_received"]
    lists.cancel_waits()
    lists.take(0)
    assert r.info("stats")["total_connections_received"] == opened
