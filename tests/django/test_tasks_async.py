"""``aenqueue`` and ``aget_result`` of djqueue's ``django.tasks`` backend from async views under
ASGI (Django's ``AsyncClient`` through its ASGI handler), with a real worker: a redis.asyncio
connection on the event loop, no thread, the same bytes as ``enqueue``."""

from __future__ import annotations

import asyncio
import re
import threading
from typing import Any

import pytest
import redis
import redis.asyncio
from asgiref.sync import async_to_sync
from django.db import transaction
from django.test import AsyncClient

import djqueue
from djqueue import connection, lifecycle, signals
from djqueue.contrib.django.tasks import DjQueueBackend
from djqueue.contrib.django.tasks_framework import TaskResultStatus, default_task_backend
from tests.django.testapp.jobs import report_context
from tests.django.testapp.tasks import echo
from tests.redis_server import free_port

pytestmark = pytest.mark.django_db(transaction=True)

ARGS = ("café", 1e-05, 2.5e15)


def same_but_ids(raw: bytes) -> bytes:
    """A job's bytes with its jid and times blanked: what differs between two pushes."""
    return re.sub(rb'"(jid|created_at|enqueued_at)":("[^"]*"|[0-9.e+-]+)', rb'"\1":_', raw)


def enqueued_on() -> tuple[list[int], Any]:
    """The threads job_enqueued is sent on, and its receiver (connect it)."""
    threads: list[int] = []

    def receiver(sender: str, payload: dict[str, Any]) -> None:
        threads.append(threading.get_ident())

    return threads, receiver


def test_aenqueue_and_aget_result_from_async_views_with_a_real_worker(
    worker, r, monkeypatch, django_user_model
):
    """A logged-in user's async view enqueues a task (the request context stamps the user id,
    read with ``auser`` on the loop) and another reads its result until a worker has run it.
    The push runs on the view's own thread (the event loop's) through a redis.asyncio pool; the
    result is never read through ``get_result`` (what Django's ``aget_result`` runs in a
    thread)."""
    user = django_user_model.objects.create_user("ada", password="pw")
    threads, receiver = enqueued_on()

    def no_sync_read(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("aget_result went through get_result (in a thread)")

    async def scenario() -> tuple[dict[str, Any], list[dict[str, Any]], Any]:
        client = AsyncClient()
        await client.aforce_login(user)
        answer = await client.get("/tasks/async/", {"text": "quiet"})
        assert answer.status_code == 200, answer.content
        pushed = answer.json()
        aredis = connection.get_aredis(djqueue.get_settings())
        seen = []
        for _ in range(600):
            found = (await client.get(f"/tasks/async/{pushed['id']}/")).json()
            seen.append(found)
            if found["status"] == "SUCCESSFUL":
                break
            await asyncio.sleep(0.05)
        return pushed, seen, aredis

    with signals.job_enqueued.connected_to(receiver):
        monkeypatch.setattr(DjQueueBackend, "get_result", no_sync_read)
        worker(queues=(("default", 0), ("tasks", 0)))
        pushed, seen, aredis = asyncio.run(scenario())
    assert threads == [pushed["thread"]]  # job_enqueued came from the push, on the view's loop
    assert pushed["enqueued"] is not None
    assert isinstance(aredis, redis.asyncio.Redis)
    assert seen[0]["args"] == ["quiet"] and seen[0]["status"] in ("READY", "RUNNING", "SUCCESSFUL")
    assert seen[-1] == {"status": "SUCCESSFUL", "value": "QUIET", "args": ["quiet"]}
    monkeypatch.undo()
    found = default_task_backend.get_result(pushed["id"])
    assert found.status == TaskResultStatus.SUCCESSFUL and found.return_value == "QUIET"
    stamped = lifecycle.status(pushed["id"]).payload_json or ""
    assert f'"user_id":{user.pk}' in stamped


def test_aenqueue_writes_the_bytes_enqueue_writes(r):
    raw = redis.Redis.from_url(djqueue.get_settings().redis_url)
    sync_result = echo.enqueue(*ARGS)
    async_result = asyncio.run(echo.aenqueue(*ARGS))
    newest, oldest = raw.lrange("queue:default", 0, -1)
    assert async_result.id.encode() in newest and sync_result.id.encode() in oldest
    assert same_but_ids(newest) == same_but_ids(oldest)
    assert b'"args":["caf\xc3\xa9",1.0e-05,2.5e+15]' in newest
    assert async_result.enqueued_at is not None
    again = asyncio.run(echo.aget_result(async_result.id))
    assert again.args == list(ARGS) and again.status == TaskResultStatus.READY


def test_aenqueue_and_aget_result_with_redis_down_raise_what_the_sync_path_raises(r):
    port = free_port()
    djqueue.configure(framework={}, redis_url=f"redis://:pw-secret@127.0.0.1:{port}/0")
    with pytest.raises(djqueue.RedisUnavailable) as sync_error:
        echo.enqueue(*ARGS)
    with pytest.raises(djqueue.RedisUnavailable) as async_error:
        asyncio.run(echo.aenqueue(*ARGS))
    with pytest.raises(djqueue.RedisUnavailable) as result_error:
        asyncio.run(echo.aget_result("0" * 24))
    for error in (async_error.value, result_error.value):
        assert error.url == sync_error.value.url == f"redis://:***@127.0.0.1:{port}/0"
        assert "pw-secret" not in str(error)


def test_aenqueue_inside_async_to_sync_in_a_transaction_waits_for_the_commit(r):
    """A coroutine run by async_to_sync for sync code inside atomic(): the push is held until
    that code's transaction commits, as enqueue's is (Django's own thread path)."""
    threads, receiver = enqueued_on()
    with signals.job_enqueued.connected_to(receiver), transaction.atomic():
        result = async_to_sync(echo.aenqueue)(*ARGS)
        assert r.llen("queue:default") == 0  # held for the commit
    assert r.llen("queue:default") == 1 and result.id in r.lindex("queue:default", 0)
    assert threads == [threading.get_ident()]  # written at the commit, in this thread


def test_aperform_later_inside_async_to_sync_in_a_transaction_waits_for_the_commit(r):
    """djqueue's own jobs take the same way (`djqueue.client.in_calling_thread`)."""
    with transaction.atomic():
        jid = async_to_sync(report_context.aperform_later)("held")
        assert r.llen("queue:default") == 0
    assert r.llen("queue:default") == 1 and jid in r.lindex("queue:default", 0)


def test_aenqueue_outside_a_transaction_writes_at_once_without_a_thread(r):
    threads, receiver = enqueued_on()

    async def main() -> int:
        await echo.aenqueue(*ARGS)
        return threading.get_ident()

    with signals.job_enqueued.connected_to(receiver):
        loop_thread = asyncio.run(main())
    assert threads == [loop_thread] and r.llen("queue:default") == 1
