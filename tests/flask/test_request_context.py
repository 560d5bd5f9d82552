"""Request context through Flask's test client: the request id (sent or made) and what the app's
hook returns travel with the jobs a request pushes, and the job sees them."""

from __future__ import annotations

import logging
from typing import Any

import flask
import pytest
import redis

import djqueue
from djqueue import context
from djqueue.testing import drain_all

from .conftest import queued
from .shop import Order, count_orders, create_app, db


@djqueue.job(name="flask_ctx.report")
def report() -> dict[str, Any]:
    """What the job knows of the request behind it; pushes a follow-up job."""
    logging.getLogger("flask_ctx").info("reporting")
    follow_up.perform_later()
    return context.current()


@djqueue.job(name="flask_ctx.follow_up")
def follow_up() -> None:
    pass


def test_the_request_id_and_the_hooks_values_travel(client: Any, r: redis.Redis) -> None:
    answer = client.post("/orders", data={"name": "a"}, headers={"X-Request-ID": "req-42"})
    assert answer.headers["X-Request-ID"] == "req-42"
    client.post("/orders", data={"name": "b"}, headers={"X-User": "7"})
    first, second = queued(r)
    assert first["request_context"] == {"request_id": "req-42"}
    made = second["request_context"]
    assert made["user_id"] == 7 and len(made["request_id"]) == 32  # a new uuid4 hex


def test_a_suspicious_request_id_is_replaced(client: Any, r: redis.Redis) -> None:
    answer = client.post("/orders", data={"name": "a"}, headers={"X-Request-ID": "x" * 129})
    rid = queued(r)[0]["request_context"]["request_id"]
    assert rid != "x" * 129 and answer.headers["X-Request-ID"] == rid


def test_the_job_sees_the_request_it_came_from(redis_url: str, database: str) -> None:
    app = create_app(
        SQLALCHEMY_DATABASE_URI=database, DJQUEUE_REDIS_URL=redis_url, DJQUEUE_TESTING="fake"
    )
    with app.app_context():
        db.create_all()
    client = app.test_client()
    order = client.post(
        "/orders", data={"name": "a"}, headers={"X-Request-ID": "req-7", "X-User": "3"}
    ).json
    with app.app_context():
        assert drain_all() == 1
        assert client.get(f"/orders/{order['id']}").json == {
            "status": "confirmed",
            "request_id": "req-7",
            "user": 3,
        }
        db.engine.dispose()


def test_jobs_pushed_by_a_job_carry_the_context_on_and_log_lines_have_it(
    redis_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    app = create_app(DJQUEUE_REDIS_URL=redis_url, DJQUEUE_TESTING="fake")
    app.add_url_rule("/report", "report", lambda: {"jid": report.perform_later()})
    app.test_client().get("/report", headers={"X-Request-ID": "req-9", "X-User": "5"})
    caplog.handler.addFilter(context.RequestIdFilter())
    with app.app_context(), caplog.at_level(logging.INFO, logger="flask_ctx"):
        assert report.jobs.perform_one() == {"request_id": "req-9", "user_id": 5}
    assert [record.request_id for record in caplog.records] == ["req-9"]  # type: ignore[attr-defined]
    assert follow_up.jobs[0]["request_context"] == {"request_id": "req-9", "user_id": 5}
    follow_up.jobs.clear()


def test_context_keys_are_per_app(redis_url: str) -> None:
    tenants = create_app(DJQUEUE_REDIS_URL=redis_url, DJQUEUE_CONTEXT_KEYS=["tenant"])
    plain = create_app(DJQUEUE_REDIS_URL=redis_url)
    for app in (tenants, plain):
        with app.test_request_context("/", headers={"X-Request-ID": "r1"}):
            app.preprocess_request()
            with context.bind(tenant="acme", email="stays@home.example"):
                count_orders.perform_later()
    r = redis.Redis.from_url(redis_url, decode_responses=True)
    carried = [job["request_context"] for job in queued(r)]
    assert carried == [{"request_id": "r1", "tenant": "acme"}, {"request_id": "r1"}]


def test_before_request_functions_of_the_app_push_with_the_id_too(
    redis_url: str, r: redis.Redis
) -> None:
    app = flask.Flask("early")
    app.config["DJQUEUE_REDIS_URL"] = redis_url

    @app.before_request
    def audit() -> None:  # registered before DjQueue(app)
        count_orders.perform_later()

    from flask_djqueue import DjQueue

    DjQueue(app)
    app.add_url_rule("/", "index", lambda: "ok")
    app.test_client().get("/", headers={"X-Request-ID": "req-early"})
    assert queued(r)[0]["request_context"] == {"request_id": "req-early"}


def test_no_context_outside_requests(app: flask.Flask, r: redis.Redis) -> None:
    with app.app_context():
        db.session.add(Order(name="a"))
        db.session.commit()
        count_orders.perform_later()
    assert "request_context" not in queued(r)[0]
    assert context.request_id() is None
