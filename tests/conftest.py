"""Fixtures shared by every test: a private Redis and djqueue configured to use it, and an
in-process worker."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

import djqueue
from djqueue import config, connection, limits
from djqueue.client import get_client
from djqueue.store import bad_keys
from djqueue.store.limits import LimitStore
from djqueue.worker.launcher import Launcher

from .browser import browser, problems  # noqa: F401 (the browser tests' fixtures)
from .django_free import without_django_middleware
from .redis_server import MISSING, REDIS_SERVER, RedisServer
from .worker_support import Running, WorkerProcess, wait_for


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    """The session's private redis-server; a test that must kill Redis starts its own."""
    if REDIS_SERVER is None:
        if os.environ.get("CI"):
            pytest.fail(MISSING)
        pytest.skip(MISSING)
    server = RedisServer().start()
    yield server
    server.close()


@pytest.fixture
def redis_url(redis_server: RedisServer) -> Iterator[str]:
    """An empty database on the private server, with djqueue configured to use it."""
    client = redis_server.client()
    client.flushall()
    client.close()
    bad_keys.forget()  # an empty Redis: no bad key has been met in it yet
    # The core's tests start from the core's defaults, whatever a framework's app (Django's,
    # set up by pytest-django before any test) configured.
    config._framework = None
    djqueue.configure(redis_url=redis_server.url)
    yield redis_server.url
    config._framework = None
    djqueue.configure(redis_url=redis_server.url)
    connection.reset()


#: Fixtures through which a test uses Django's database: it keeps the Django app's middleware.
DJANGO_DB_FIXTURES = {"db", "transactional_db", "live_server", "admin_client", "django_user_model"}


@pytest.fixture(autouse=True)
def core_without_django(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test that uses neither the Django tests' folder nor Django's database runs as a
    process without Django would (`without_django_middleware`)."""
    if (
        "django" in request.node.path.parts
        or request.node.get_closest_marker("django_db")
        or DJANGO_DB_FIXTURES & set(request.fixturenames)
    ):
        yield
        return
    with without_django_middleware():
        yield


@pytest.fixture
def r(redis_url: str) -> Iterator[redis.Redis]:
    """A plain redis-py client on the test database, decoding to str, for assertions."""
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    yield client
    client.close()


@pytest.fixture
def worker(redis_url: str) -> Iterator[Callable[..., Running]]:
    """``worker(**settings)`` starts a launcher on a thread (fast beats, short BLMOVE); every
    one started is stopped after the test."""
    started: list[Running] = []

    def start(**changes: Any) -> Running:
        changes.setdefault("heartbeat_interval", 0.3)
        settings = djqueue.get_settings().replace(**changes)
        running = Running(Launcher(settings, block_timeout=0.2))
        running.thread.start()
        wait_for(lambda: running.launcher.manager.processors)
        started.append(running)
        return running

    yield start
    for running in started:
        if running.thread.is_alive():
            running.stop()


@pytest.fixture
def spawn(tmp_path: Path) -> Iterator[Callable[..., WorkerProcess]]:
    """``spawn(url, *flags)`` starts a ``djqueue worker`` subprocess (``url`` None: no
    ``--redis-url``); every one started is killed after the test."""
    started: list[WorkerProcess] = []

    def start(url: str | None, *args: str, record: Path | None = None) -> WorkerProcess:
        worker = WorkerProcess(url, tmp_path / f"worker{len(started)}.log", record, *args)
        started.append(worker)
        return worker

    yield start
    for worker in started:
        worker.kill()


# -- the limits tests ---------------------------------------------------------------------------


@pytest.fixture
def store(redis_url: str) -> LimitStore:
    """The limiters' store on the test Redis."""
    client = get_client()
    return LimitStore(client.redis, client.keys)


@pytest.fixture
def held_slots_forgotten() -> Iterator[None]:
    """The slots a test takes and does not give back are no process's to renew: the slots
    this process holds (`djqueue.limits`) are as they were once the test ends."""
    before = Counter(limits._held)
    yield
    with limits._lock:
        limits._held.clear()
        limits._held.update(before)
