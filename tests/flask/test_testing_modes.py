"""``DJQUEUE_TESTING``: an app's own fake and inline modes, which keep the commit hold and do not
outlive the app."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import flask
import pytest
import redis

import djqueue
from djqueue.testing import drain_all

from .conftest import queued
from .shop import Order, confirm_order, count_orders, create_app, db


@pytest.fixture
def make_app(redis_url: str, database: str) -> Iterator[Any]:
    made: list[flask.Flask] = []

    def make(**config: Any) -> flask.Flask:
        app = create_app(SQLALCHEMY_DATABASE_URI=database, DJQUEUE_REDIS_URL=redis_url, **config)
        with app.app_context():
            db.create_all()
        made.append(app)
        return app

    yield make
    for app in made:
        with app.app_context():
            db.engine.dispose()
    confirm_order.jobs.clear()
    count_orders.jobs.clear()


def status(app: flask.Flask, order_id: int) -> str:
    with app.app_context():
        return db.session.get(Order, order_id).status


def test_fake_records_at_commit_and_drains_in_the_app(make_app: Any, r: redis.Redis) -> None:
    app = make_app(DJQUEUE_TESTING="fake")
    client = app.test_client()
    kept = client.post("/orders", data={"name": "kept"}).json
    client.post("/orders", data={"name": "dropped", "rollback": "1"})
    assert [job["jid"] for job in confirm_order.jobs] == [kept["jid"]]
    assert r.keys("*") == []
    with app.app_context():
        confirm_order.jobs.drain()
    assert status(app, kept["id"]) == "confirmed"


def test_inline_runs_after_the_commit_never_before(make_app: Any) -> None:
    app = make_app(DJQUEUE_TESTING="inline")
    client = app.test_client()
    order = client.post("/orders", data={"name": "a"}).json
    # confirm_order raises LookupError if it runs before the row is committed.
    assert status(app, order["id"]) == "confirmed"
    dropped = client.post("/orders", data={"name": "b", "rollback": "1"}).json
    with app.app_context():
        assert db.session.get(Order, dropped["id"]) is None


def test_an_inline_jobs_error_reaches_the_commit(make_app: Any) -> None:
    app = make_app(DJQUEUE_TESTING="inline")
    with app.app_context():
        db.session.add(Order(name="a"))
        confirm_order.perform_later(999)
        with pytest.raises(LookupError, match="order 999"):
            db.session.commit()


def test_the_mode_belongs_to_the_app(make_app: Any, r: redis.Redis) -> None:
    fake = make_app(DJQUEUE_TESTING="fake")
    real = make_app()
    with fake.app_context():
        count_orders.perform_later()
    with real.app_context():
        jid = count_orders.perform_later()
    outside = count_orders.perform_later()
    assert len(count_orders.jobs) == 1
    assert [job["jid"] for job in queued(r)] == [jid, outside]
    assert djqueue.testing.mode() == "disabled"


def test_process_wide_modes_still_cover_apps_without_one(
    make_app: Any, djqueue_fake: Any, r: redis.Redis
) -> None:
    app = make_app()
    with app.app_context():
        db.session.add(Order(name="a"))
        count_orders.perform_later()
        assert count_orders.jobs == []
        db.session.commit()
        assert len(count_orders.jobs) == 1
        assert drain_all() == 1
    assert r.keys("*") == []
