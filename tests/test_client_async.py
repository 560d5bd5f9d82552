"""The push and the status read from async code (`Client.apush`, ``aperform_later``,
`lifecycle.astatus`): the same steps as the sync ones, awaited on a `redis.asyncio` connection,
with no thread."""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import Callable, Coroutine
from typing import Any

import pytest
import redis
import redis.asyncio

import djqueue
from djqueue import connection, lifecycle, signals, testing
from djqueue.errors import BadKey, PoolExhausted
from djqueue.middleware import client_middleware
from tests.redis_server import free_port

ARGS = ["café", 1e-05, 2.5e15]


@djqueue.job(name="core.async.noop")
def noop(*args: Any) -> None:
    return None


def run(coroutine: Callable[[], Coroutine[Any, Any, Any]]) -> Any:
    return asyncio.run(coroutine())


def same_but_ids(raw: bytes) -> bytes:
    """A job's bytes with its jid and times blanked: what differs between two pushes."""
    return re.sub(rb'"(jid|created_at|enqueued_at)":("[^"]*"|[0-9.e+-]+)', rb'"\1":_', raw)


def test_aperform_later_writes_the_bytes_perform_later_writes(redis_url):
    raw = redis.Redis.from_url(redis_url)
    sync_jid = noop.perform_later(*ARGS)
    async_jid = run(lambda: noop.aperform_later(*ARGS))
    newest, oldest = raw.lrange("queue:default", 0, -1)
    assert async_jid.encode() in newest and sync_jid.encode() in oldest
    assert same_but_ids(newest) == same_but_ids(oldest)
    assert b'["caf\xc3\xa9",1.0e-05,2.5e+15]' in newest  # Ruby's spelling, as every push
    assert raw.smembers("queues") == {b"default"}


def test_aperform_later_runs_on_the_event_loop_with_an_asyncio_connection(redis_url):
    """No thread: the push (and its job_enqueued) happens on the loop's own thread, through
    the loop's asyncio pool, and no thread is started for it."""
    where: list[int] = []

    def receiver(sender: str, payload: dict[str, Any]) -> None:
        where.append(threading.get_ident())

    async def main() -> tuple[int, Any, int]:
        before = threading.active_count()
        for n in range(20):
            await noop.aperform_later(n)
        aredis = connection.get_aredis(djqueue.get_settings())
        return threading.get_ident(), aredis, threading.active_count() - before

    with signals.job_enqueued.connected_to(receiver):
        loop_thread, aredis, started = run(main)
    assert isinstance(aredis, redis.asyncio.Redis)
    assert where == [loop_thread] * 20 and started == 0
    assert redis.Redis.from_url(redis_url).llen("queue:default") == 20


def test_one_asyncio_pool_per_loop_configured_from_the_settings(redis_url):
    djqueue.configure(redis_url=redis_url, max_connections=7, socket_timeout=3.5, pool_timeout=2)
    settings = djqueue.get_settings()

    async def pool() -> Any:
        found = connection.get_aredis(settings)
        assert connection.get_aredis(settings) is found
        return found

    first, second = run(pool), run(pool)
    assert first is not second  # one per event loop: a connection belongs to its loop
    for client in (first, second):
        pool_ = client.connection_pool
        assert pool_.max_connections == 7 and pool_.timeout == 2
        assert pool_.connection_kwargs["socket_timeout"] == 3.5
        assert pool_.connection_kwargs["port"] == int(redis_url.rsplit(":", 1)[1].split("/")[0])


def test_the_client_middleware_runs_for_an_async_push(redis_url):
    def stamp(job: str, payload: dict[str, Any], queue: str, call_next: Any) -> Any:
        if payload["args"] == ["stop"]:
            return None
        payload["stamped"] = True
        return call_next()

    client_middleware.add(stamp)
    try:
        stopped = run(lambda: noop.aperform_later("stop"))
        jid = run(lambda: noop.aperform_later("go"))
    finally:
        client_middleware.remove(stamp)
    assert stopped is None
    (job,) = (djqueue.api.Queue("default").find_job(jid),)
    assert job is not None and job.item["stamped"] is True


def test_an_async_push_reloads_a_script_redis_forgot(redis_url, r):
    r.script_flush()
    run(lambda: noop.aperform_later(1))
    assert r.llen("queue:default") == 1


def test_a_unique_job_whose_lock_is_held_is_left_out_of_an_async_push(redis_url, r):
    handle = noop.set(unique_for=60)
    first = run(lambda: handle.aperform_later("x"))
    second = run(lambda: handle.aperform_later("x"))
    assert first is not None and second is None
    assert r.llen("queue:default") == 1


def test_async_push_over_the_size_limit_is_refused_before_anything_is_sent(redis_url, r):
    djqueue.configure(redis_url=redis_url, max_payload_bytes=1000)
    with pytest.raises(djqueue.PayloadTooLarge):
        run(lambda: noop.aperform_later("x" * 2000))
    assert r.llen("queue:default") == 0


def test_nothing_listening_raises_the_sync_paths_error(redis_url):
    port = free_port()
    djqueue.configure(redis_url=f"redis://:s3cret-pw@127.0.0.1:{port}/0")
    with pytest.raises(djqueue.RedisUnavailable) as sync_error:
        noop.perform_later(1)
    with pytest.raises(djqueue.RedisUnavailable) as async_error:
        run(lambda: noop.aperform_later(1))
    with pytest.raises(djqueue.RedisUnavailable) as status_error:
        run(lambda: lifecycle.astatus("0" * 24))
    for error in (async_error, status_error):
        assert str(error.value).split(":", 1)[0] == str(sync_error.value).split(":", 1)[0]
        assert error.value.url == f"redis://:***@127.0.0.1:{port}/0"
        assert "s3cret-pw" not in str(error.value)


def test_a_full_asyncio_pool_raises_pool_exhausted(redis_url):
    djqueue.configure(redis_url=redis_url, max_connections=1, pool_timeout=0.2)

    async def main() -> None:
        aredis = connection.get_aredis(djqueue.get_settings())
        held = asyncio.create_task(aredis.blpop(["nothing-comes"], timeout=2))
        await asyncio.sleep(0.1)  # the one connection is held by the BLPOP
        try:
            await noop.aperform_later(1)
        finally:
            held.cancel()

    with pytest.raises(PoolExhausted, match="max_connections"):
        run(main)


def test_astatus_reads_what_status_reads(redis_url):
    jid = noop.set(retention=60).perform_later(1)
    found = run(lambda: lifecycle.astatus(jid))
    assert found == lifecycle.status(jid)
    assert found.state == "pending" and found.args == [1]
    assert run(lambda: lifecycle.astatus("0" * 24)).state == "unknown"


def test_astatus_names_a_status_key_of_the_wrong_type(redis_url, r):
    r.set("djqueue:status:" + "1" * 24, "not a hash")
    with pytest.raises(BadKey, match="holds a string, not a hash") as async_error:
        run(lambda: lifecycle.astatus("1" * 24))
    with pytest.raises(BadKey) as sync_error:
        lifecycle.status("1" * 24)
    assert str(async_error.value) == str(sync_error.value)


def test_the_fake_mode_records_an_async_push(redis_url, r):
    with testing.fake():
        jid = run(lambda: noop.aperform_later(3))
        assert [job["jid"] for job in noop.jobs] == [jid]
        noop.jobs.clear()
    assert r.llen("queue:default") == 0


def test_a_job_class_pushes_from_async_code(redis_url, r):
    class Hello(djqueue.Job, name="core.async.hello"):
        def perform(self, who: str) -> None:
            pass

    jid = run(lambda: Hello.aperform_later("you"))
    assert jid is not None and r.llen("queue:default") == 1


def test_a_write_a_middleware_holds_past_an_async_push_is_written_when_released(redis_url, r):
    """A middleware may keep ``call_next`` for later (the Django app does until a commit): the
    job is written when it is called, though the async push has returned by then."""
    held: list[Callable[[], Any]] = []

    def hold(job: str, payload: dict[str, Any], queue: str, call_next: Any) -> Any:
        held.append(call_next)
        return payload

    client_middleware.add(hold)
    try:
        jid = run(lambda: noop.aperform_later(1))
    finally:
        client_middleware.remove(hold)
    assert jid is not None and r.llen("queue:default") == 0
    held[0]()
    assert r.llen("queue:default") == 1 and jid in r.lindex("queue:default", 0)


def test_a_job_ref_reads_its_status_from_async_code(redis_url):
    ref = noop.set(retention=60).perform_later(2)
    assert run(ref.astatus) == run(lambda: djqueue.astatus(ref)) == ref.status()


def test_a_finished_event_loops_pool_is_dropped(redis_url):
    """A connection holds its loop, so the per-loop clients must let a closed loop go: a
    process calling asyncio.run per request would keep every loop's pool otherwise."""
    for n in range(5):
        run(lambda n=n: noop.aperform_later(n))
    assert len(connection._aclients) == 1  # the last loop's, dropped when the next one comes
