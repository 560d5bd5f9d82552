"""Fixtures shared by every test: a private Redis and djqueue configured to use it."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
import redis

import djqueue
from djqueue import config, connection

from .redis_server import MISSING, REDIS_SERVER, RedisServer


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
    djqueue.configure(redis_url=redis_server.url)
    yield redis_server.url
    config._framework = None
    djqueue.configure(redis_url=redis_server.url)
    connection.reset()


@pytest.fixture
def r(redis_url: str) -> Iterator[redis.Redis]:
    """A plain redis-py client on the test database, decoding to str, for assertions."""
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    yield client
    client.close()
