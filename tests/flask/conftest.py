"""Flask tests: apps made by ``tests.flask.shop.create_app`` on a SQLite file and the
session's private Redis (a second private Redis where two are needed)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import flask
import pytest
import redis

from tests.django_free import without_django_middleware
from tests.redis_server import RedisServer

from .shop import create_app, db


@pytest.fixture(autouse=True)
def flask_process() -> Iterator[None]:
    """A Flask process has none of the Django app's middleware."""
    with without_django_middleware():
        yield


@pytest.fixture(scope="session")
def second_redis() -> Iterator[RedisServer]:
    server = RedisServer().start()
    yield server
    server.close()


@pytest.fixture
def database(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'shop.db'}"


@pytest.fixture
def app(redis_url: str, database: str) -> Iterator[flask.Flask]:
    app = create_app(TESTING=True, SQLALCHEMY_DATABASE_URI=database, DJQUEUE_REDIS_URL=redis_url)
    with app.app_context():
        db.create_all()
    yield app
    with app.app_context():
        db.engine.dispose()


@pytest.fixture
def client(app: flask.Flask) -> Any:
    return app.test_client()


def queued(r: redis.Redis, queue: str = "default", namespace: str = "") -> list[dict[str, Any]]:
    """The jobs waiting in a queue, oldest first."""
    key = f"{namespace}:queue:{queue}" if namespace else f"queue:{queue}"
    return [json.loads(x) for x in reversed(r.lrange(key, 0, -1))]
