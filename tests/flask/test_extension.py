"""The extension per app: settings from the app factory's config, checked at init_app; two apps
in one process, each with its own Redis; jobs in a fresh app context around every other
middleware; nothing left behind from one app for the next."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from typing import Any

import flask
import pytest
import redis

import djqueue
from djqueue import context
from djqueue.config import Settings
from flask_djqueue import DjQueue
from flask_djqueue import config as flask_config
from flask_djqueue.dashboard import dashboard_blueprint
from tests.redis_server import RedisServer

from .conftest import queued
from .shop import Order, confirm_order, count_orders, create_app, db


@djqueue.job(name="flask_ext.where")
def where() -> str:
    """Which app the job runs in, and whether it has a context of its own."""
    return f"{flask.current_app.name} fresh={'seen' not in flask.g}"


@djqueue.job(name="flask_ext.g_names")
def g_names() -> list[str]:
    return sorted(vars(flask.g))


def test_a_job_finds_g_empty(redis_url: str) -> None:
    app = create_app(DJQUEUE_REDIS_URL=redis_url)
    with app.app_context():
        flask.g.seen = True
        assert g_names.perform_now() == []


def test_the_factory_configures_the_app_from_its_config(redis_url: str, r: redis.Redis) -> None:
    app = create_app(
        DJQUEUE_REDIS_URL=redis_url,
        DJQUEUE_NAMESPACE="shop",
        DJQUEUE_QUEUES=["critical,3", "default"],
        DJQUEUE_CONCURRENCY=4,
    )
    settings = app.extensions["djqueue"].settings
    assert isinstance(settings, Settings)
    assert (settings.namespace, settings.concurrency) == ("shop", 4)
    assert settings.queues == (("critical", 3), ("default", 0))
    with app.app_context():
        jid = count_orders.perform_later()
    assert [job["jid"] for job in queued(r, namespace="shop")] == [jid]
    assert r.smembers("shop:queues") == {"default"}


def test_default_job_options_from_the_config_reach_the_payload(
    redis_url: str, r: redis.Redis
) -> None:
    app = create_app(DJQUEUE_REDIS_URL=redis_url, DJQUEUE_DEFAULT_JOB_OPTIONS={"retry": 5})
    with app.app_context():
        count_orders.perform_later()
        count_orders.set(retry=1).perform_later()
    assert [job["retry"] for job in queued(r)] == [5, 1]


def test_an_unknown_key_fails_at_init_app_with_its_name(redis_url: str) -> None:
    with pytest.raises(djqueue.ConfigurationError) as caught:
        create_app(DJQUEUE_REDIS_URL=redis_url, DJQUEUE_CONCURENCY=4)
    assert str(caught.value) == (
        "DJQUEUE_CONCURENCY: unknown djqueue setting (did you mean DJQUEUE_CONCURRENCY?)"
    )


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("DJQUEUE_CONCURRENCY", 0, "DJQUEUE_CONCURRENCY: must be a positive integer, got 0"),
        ("DJQUEUE_REDIS_URL", "http://x", "DJQUEUE_REDIS_URL: is not a Redis URL"),
        ("DJQUEUE_QUEUES", ["a b"], "DJQUEUE_QUEUES: queue name must be"),
        (
            "DJQUEUE_PERIODIC",
            {"nightly": {"cron": "0 3 * * *"}},
            "DJQUEUE_PERIODIC: 'nightly': 'cron' and 'class' are required",
        ),
        ("DJQUEUE_ENQUEUE_ON_COMMIT", "yes", "DJQUEUE_ENQUEUE_ON_COMMIT: must be True, False or"),
        ("DJQUEUE_TESTING", "fakes", "DJQUEUE_TESTING: must be 'fake', 'inline' or None"),
        ("DJQUEUE_CONTEXT_KEYS", "tenant", "DJQUEUE_CONTEXT_KEYS: must be a list"),
        (
            "DJQUEUE_DEFAULT_JOB_OPTIONS",
            {"colour": "red"},
            "DJQUEUE_DEFAULT_JOB_OPTIONS: unknown job option(s) colour",
        ),
        ("DJQUEUE_OUTBOX_GRACE", -1, "DJQUEUE_OUTBOX_GRACE: must be a number of seconds >= 0"),
    ],
)
def test_a_bad_value_fails_at_init_app_with_the_key(key: str, value: Any, message: str) -> None:
    app = flask.Flask("bad")
    app.config[key] = value
    with pytest.raises(djqueue.ConfigurationError) as caught:
        DjQueue(app)
    assert str(caught.value).startswith(message)
    assert "djqueue" not in app.extensions


@pytest.mark.parametrize(
    ("key", "value"), [("DJQUEUE_ENQUEUE_ON_COMMIT", "outbox"), ("DJQUEUE_OUTBOX_RELAY", True)]
)
def test_the_outbox_without_sqlalchemy_fails_at_init_app(
    key: str, value: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "sqlalchemy", None)  # imports as if not installed
    app = flask.Flask("no_sqlalchemy")
    app.config[key] = value
    with pytest.raises(djqueue.ConfigurationError) as caught:
        DjQueue(app)
    assert str(caught.value) == (
        f"{key}: the outbox is a SQLAlchemy table, and SQLAlchemy is not installed: "
        "pip install sqlalchemy (or flask-sqlalchemy)"
    )


def test_without_sqlalchemy_the_dashboard_looks_for_it_once(
    redis_url: str, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every dashboard page asks whether the app relays an outbox, which needs SQLAlchemy; a
    failed import searches the whole path again, so it is tried once, not on every page."""
    tries = tmp_path / "tries"
    hidden = tmp_path / "hidden" / "sqlalchemy"
    hidden.mkdir(parents=True)
    (hidden / "__init__.py").write_text(
        f"open({str(tries)!r}, 'a').write('tried ')\n"
        "raise ModuleNotFoundError(\"No module named 'sqlalchemy' (hidden by the test)\")\n"
    )
    monkeypatch.syspath_prepend(str(hidden.parent))
    monkeypatch.delitem(sys.modules, "sqlalchemy", raising=False)
    monkeypatch.setattr(flask_config, "_sqlalchemy_absent", False)
    app = flask.Flask("no_sqlalchemy")
    app.config.update(SECRET_KEY="k", DJQUEUE_REDIS_URL=redis_url)
    DjQueue(app)  # its tracking of SQLAlchemy sessions tries once too
    tries.unlink()
    app.register_blueprint(dashboard_blueprint(auth=lambda permission: True))
    client = app.test_client()
    for page in ("/djqueue/", "/djqueue/queues", "/djqueue/"):
        assert client.get(page).status_code == 200
    assert tries.read_text() == "tried "
    monkeypatch.undo()  # SQLAlchemy back (as a test that hid it leaves it): found again
    assert flask_config._sqlalchemy_installed()


@pytest.fixture
def two_apps(
    redis_url: str, second_redis: RedisServer, tmp_path: Any
) -> Iterator[tuple[flask.Flask, flask.Flask]]:
    """``north`` on the session's Redis, ``south`` on a second one, in one process."""
    second_redis.client().flushall()
    north = create_app(
        SQLALCHEMY_DATABASE_URI=f"sqlite:///{tmp_path / 'north.db'}",
        DJQUEUE_REDIS_URL=redis_url,
        DJQUEUE_NAMESPACE="north",
    )
    south = create_app(
        SQLALCHEMY_DATABASE_URI=f"sqlite:///{tmp_path / 'south.db'}",
        DJQUEUE_REDIS_URL=second_redis.url,
        DJQUEUE_NAMESPACE="south",
        DJQUEUE_DEFAULT_QUEUE="low",
    )
    north.name, south.name = "north", "south"
    for app in (north, south):
        with app.app_context():
            db.create_all()
    yield north, south
    for app in (north, south):
        with app.app_context():
            db.engine.dispose()


def test_two_apps_in_one_process_push_to_their_own_redis(
    two_apps: tuple[flask.Flask, flask.Flask], r: redis.Redis, second_redis: RedisServer
) -> None:
    north, south = two_apps
    south_redis = second_redis.client(decode_responses=True)
    north_jid = north.test_client().post("/orders", data={"name": "n"}).json["jid"]
    south_jid = south.test_client().post("/orders", data={"name": "s"}).json["jid"]
    with south.app_context():  # the last app set up is not the one that wins
        with north.app_context():
            nested_jid = count_orders.perform_later()
        later_jid = count_orders.perform_later()

    assert [j["jid"] for j in queued(r, namespace="north")] == [north_jid, nested_jid]
    assert [j["jid"] for j in queued(south_redis, "low", namespace="south")] == [
        south_jid,
        later_jid,
    ]
    assert r.keys("south:*") == [] and south_redis.keys("north:*") == []
    with south.app_context():
        assert where.perform_now() == "south fresh=True"


def test_outside_any_app_context_the_process_settings_apply(
    two_apps: tuple[flask.Flask, flask.Flask], r: redis.Redis
) -> None:
    jid = count_orders.perform_later()
    assert [j["jid"] for j in queued(r)] == [jid]
    assert djqueue.get_settings().namespace == ""


def test_each_job_gets_a_fresh_app_context_around_every_other_middleware(
    redis_url: str, database: str
) -> None:
    seen: list[str] = []

    def added_before_the_app(job: Any, payload: Any, queue: str, call_next: Callable[[], Any]):
        seen.append(flask.current_app.name if flask.has_app_context() else "no app context")
        return call_next()

    djqueue.server_middleware.prepend(added_before_the_app)
    try:
        app = create_app(SQLALCHEMY_DATABASE_URI=database, DJQUEUE_REDIS_URL=redis_url)
        with app.app_context():
            db.create_all()
            flask.g.seen = True
            assert where.perform_now() == "shop fresh=True"
            db.session.add(Order(name="x"))
            db.session.commit()
            assert count_orders.perform_now() == 1
        assert seen == ["shop", "shop"]
        assert list(djqueue.server_middleware)[0].__name__ == "AppContext"
    finally:
        djqueue.server_middleware.remove(added_before_the_app)


def test_an_app_leaves_nothing_behind_for_the_next(redis_url: str, r: redis.Redis) -> None:
    """What one test's app set up (a test mode, a namespace, context keys, a request id header)
    is not what the next test's app gets."""
    first = create_app(
        DJQUEUE_REDIS_URL=redis_url,
        DJQUEUE_TESTING="fake",
        DJQUEUE_NAMESPACE="first",
        DJQUEUE_CONTEXT_KEYS=["tenant"],
        DJQUEUE_REQUEST_ID_HEADER="X-Trace",
    )
    first.add_url_rule("/push", "push", lambda: {"jid": count_orders.perform_later()})
    first.test_client().get("/push", headers={"X-Trace": "t-1"})
    assert count_orders.jobs[0]["request_context"] == {"request_id": "t-1"}
    assert r.keys("*") == []
    count_orders.jobs.clear()

    second = create_app(DJQUEUE_REDIS_URL=redis_url)
    second.add_url_rule("/push", "push", lambda: {"jid": count_orders.perform_later()})
    with context.bind(tenant="acme"):
        answer = second.test_client().get("/push", headers={"X-Trace": "t-2"})
    assert count_orders.jobs == []
    (job,) = queued(r)
    assert job["jid"] == answer.json["jid"]
    assert set(job["request_context"]) == {"request_id"}  # no tenant, and not t-2
    assert job["request_context"]["request_id"] != "t-2"
    assert "X-Trace" not in answer.headers


def test_jobs_outside_an_app_context_run_without_one(redis_url: str) -> None:
    create_app(DJQUEUE_REDIS_URL=redis_url)
    with pytest.raises(RuntimeError, match="outside of application context"):
        where.perform_now()
    with pytest.raises(RuntimeError, match="outside of application context"):
        confirm_order.perform_now(1)
