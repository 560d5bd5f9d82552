"""Which Redis a push goes to when no app context says: the only app's, or an error that says
what to do, never the environment's or localhost's while the extension is in use but not wired
(docs/design.md, "Which settings a push uses"). Here nothing called ``djqueue.configure()``, as
in a Flask project, and the environment names the session's Redis, where nothing may arrive."""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import Callable, Iterator
from typing import Any

import flask
import pytest
import redis

import djqueue
from djqueue import config
from flask_djqueue import DjQueue, state
from tests.redis_server import RedisServer

from .conftest import queued
from .shop import count_orders, create_app


@pytest.fixture
def unconfigured(
    monkeypatch: pytest.MonkeyPatch, redis_url: str, second_redis: RedisServer
) -> Iterator[redis.Redis]:
    """A process in which djqueue.configure() was never called and no app is set up yet; the
    environment names the session's Redis. Yields the second Redis, which the apps use."""
    monkeypatch.setattr(config, "_configured", False)
    monkeypatch.setattr(config, "_settings", None)
    monkeypatch.setattr(config, "_framework", None)
    monkeypatch.setattr(state, "_apps", weakref.WeakSet())
    monkeypatch.delenv("REDIS_URL", raising=False)
    monkeypatch.setenv("DJQUEUE_REDIS_URL", redis_url)
    second = second_redis.client()
    second.flushall()
    yield second
    second.close()


def in_a_thread(push: Callable[[], Any]) -> Any:
    """What ``push`` returns or raises in a thread of its own (no app context there)."""
    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append(push())
        except Exception as exc:
            outcome.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    return outcome[0]


def test_a_push_from_a_thread_goes_to_the_only_apps_redis(
    unconfigured: redis.Redis, r: redis.Redis, second_redis: RedisServer
) -> None:
    app = create_app(DJQUEUE_REDIS_URL=second_redis.url, DJQUEUE_NAMESPACE="only")
    jid = in_a_thread(count_orders.perform_later)
    assert [job["jid"] for job in queued(unconfigured, namespace="only")] == [jid]
    assert r.keys("*") == []
    del app  # held until here: the extension keeps apps by weak reference only


def test_forgetting_init_app_raises_and_pushes_nowhere(
    unconfigured: redis.Redis, r: redis.Redis, second_redis: RedisServer
) -> None:
    app = flask.Flask("forgot")
    app.config.update(DJQUEUE_REDIS_URL=second_redis.url)
    with app.app_context(), pytest.raises(djqueue.ConfigurationError) as in_app:
        count_orders.perform_later()
    assert str(in_app.value) == (
        "app: the Flask app 'forgot' is not set up with djqueue, so djqueue has no Redis to "
        "use: call DjQueue(app), or djq.init_app(app) in its factory, or call "
        "djqueue.configure(redis_url=...) first"
    )
    outside = in_a_thread(count_orders.perform_later)
    assert isinstance(outside, djqueue.ConfigurationError)
    assert str(outside).startswith(
        "app: a push outside any app, and no app is set up with djqueue yet, so djqueue has no "
        "Redis to use: push inside `with app.app_context():`"
    )
    assert str(outside).endswith(", or call djqueue.configure(redis_url=...) first")
    assert r.keys("*") == [] and unconfigured.keys("*") == []


def test_an_async_push_nobody_configured_raises_the_sync_pushs_error(
    unconfigured: redis.Redis, r: redis.Redis, second_redis: RedisServer
) -> None:
    """``aperform_later`` reads the settings as ``perform_later`` does: no default Redis."""
    sync_error = in_a_thread(count_orders.perform_later)
    outside = in_a_thread(lambda: asyncio.run(count_orders.aperform_later()))
    assert isinstance(outside, djqueue.ConfigurationError)
    assert str(outside) == str(sync_error)
    assert r.keys("*") == [] and unconfigured.keys("*") == []


def test_two_apps_and_a_push_outside_both_is_an_error(
    unconfigured: redis.Redis, r: redis.Redis, second_redis: RedisServer
) -> None:
    north = create_app(DJQUEUE_REDIS_URL=second_redis.url, DJQUEUE_NAMESPACE="north")
    south = create_app(DJQUEUE_REDIS_URL=second_redis.url, DJQUEUE_NAMESPACE="south")
    north.name, south.name = "north", "south"
    outside = in_a_thread(count_orders.perform_later)
    assert isinstance(outside, djqueue.ConfigurationError)
    assert str(outside).startswith(
        "app: a push outside any app, with 2 apps set up with djqueue ('north', 'south'), so "
        "djqueue has no Redis to use: push inside `with app.app_context():`"
    )
    assert str(outside).endswith(", or call djqueue.configure(redis_url=...) first")
    with south.app_context():
        jid = count_orders.perform_later()
    assert [job["jid"] for job in queued(unconfigured, namespace="south")] == [jid]
    assert r.keys("*") == [] and unconfigured.keys("north:*") == []


def test_a_plain_program_that_never_makes_a_djqueue_keeps_its_environment(
    unconfigured: redis.Redis, r: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """flask_djqueue imported, not used: the extension has no say (docs/worker.md's settings)."""
    monkeypatch.setattr(DjQueue, "made", False)
    jid = in_a_thread(count_orders.perform_later)
    assert [job["jid"] for job in queued(r)] == [jid]


def test_in_a_process_wide_test_mode_a_push_outside_any_app_is_recorded(
    unconfigured: redis.Redis, r: redis.Redis, djqueue_fake: Any
) -> None:
    """A unit test of code that pushes needs no app: nothing is written anywhere."""
    jid = in_a_thread(count_orders.perform_later)
    assert [job["jid"] for job in count_orders.jobs] == [jid]
    assert r.keys("*") == [] and unconfigured.keys("*") == []
