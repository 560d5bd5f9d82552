"""Enqueue on commit with SQLAlchemy, on a real SQLite file and a real Redis: Flask-SQLAlchemy's
session and a plain Session, commit, rollback, savepoints, bulk pushes, opt-outs, and Redis
down at commit (a redis-server of the test's own, stopped)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import flask
import pytest
import redis
from sqlalchemy import create_engine, select, text, update
from sqlalchemy.orm import Session

import djqueue
from djqueue import outbox
from djqueue.errors import RedisUnavailable
from flask_djqueue.outbox import EngineSource, outbox_metadata, outbox_table
from tests.redis_server import RedisServer

from .conftest import queued
from .shop import Order, confirm_order, count_orders, db


def jids(r: redis.Redis) -> list[str]:
    return [job["jid"] for job in queued(r)]


@pytest.fixture
def ctx(app: flask.Flask) -> Iterator[None]:
    with app.app_context():
        yield


def test_a_view_that_commits_pushes_and_one_that_rolls_back_does_not(
    client: Any, r: redis.Redis
) -> None:
    saved = client.post("/orders", data={"name": "kept"}).json
    dropped = client.post("/orders", data={"name": "dropped", "rollback": "1"}).json
    assert len(dropped["jid"]) == 24  # known at call time all the same
    assert jids(r) == [saved["jid"]]
    job = queued(r)[0]
    assert job["args"] == [saved["id"]] and "on_commit" not in job


def test_the_push_waits_for_the_commit_and_the_jid_is_known_at_once(
    ctx: None, r: redis.Redis
) -> None:
    order = Order(name="a")
    db.session.add(order)
    db.session.flush()
    jid = confirm_order.perform_later(order.id)
    assert len(jid) == 24 and jids(r) == []
    db.session.commit()
    assert jids(r) == [jid]


def test_pending_changes_hold_the_push_too(ctx: None, r: redis.Redis) -> None:
    db.session.add(Order(name="not flushed yet"))
    count_orders.perform_later()
    assert jids(r) == []
    db.session.commit()
    assert len(jids(r)) == 1


def test_a_push_in_a_transaction_that_only_read_goes_out_when_it_ends(
    ctx: None, r: redis.Redis
) -> None:
    db.session.execute(select(Order)).all()
    db.session.execute(text("SELECT 1"))
    assert db.session().in_transaction()
    jid = count_orders.perform_later()
    assert jids(r) == []  # a write may follow: held
    db.session.rollback()  # nothing was written: nothing to undo, so a view that never
    assert jids(r) == [jid]  # commits loses nothing


def test_a_push_before_the_first_write_is_dropped_with_the_rollback(
    ctx: None, r: redis.Redis
) -> None:
    db.session.execute(select(Order)).all()
    jid = count_orders.perform_later()  # push, then save the jid on the new row
    db.session.add(Order(name=jid))
    db.session.flush()
    db.session.rollback()
    db.session.execute(select(Order)).all()
    jid = count_orders.perform_later()
    db.session.add(Order(name=jid))  # not even flushed
    db.session.rollback()
    assert jids(r) == []


def test_a_bulk_update_holds_the_push(ctx: None, r: redis.Redis) -> None:
    db.session.add(Order(name="a"))
    db.session.commit()
    db.session.execute(update(Order).values(status="bulk"))
    count_orders.perform_later()
    assert jids(r) == []
    db.session.rollback()
    db.session.execute(select(Order)).all()
    count_orders.perform_later()  # before the bulk update this time
    db.session.execute(update(Order).values(status="bulk"))
    db.session.rollback()
    assert jids(r) == []
    assert db.session.scalars(select(Order.status)).all() == ["new"]


def test_a_change_closed_without_commit_drops_the_push(
    ctx: None, r: redis.Redis, database: str
) -> None:
    db.session.add(Order(name="a"))
    db.session.commit()
    engine = create_engine(database)
    with Session(engine) as session:
        order = session.scalars(select(Order)).one()
        count_orders.perform_later()
        order.status = "changed, never flushed"
    assert jids(r) == []
    engine.dispose()


def test_sql_text_writes_hold_the_push(ctx: None, r: redis.Redis) -> None:
    db.session.execute(text("INSERT INTO \"order\" (name, status) VALUES ('raw', 'new')"))
    count_orders.perform_later()
    assert jids(r) == []
    db.session.rollback()
    assert jids(r) == []


def test_a_rolled_back_savepoint_drops_only_its_own_jobs(ctx: None, r: redis.Redis) -> None:
    db.session.add(Order(name="outer"))
    first = count_orders.perform_later()
    savepoint = db.session.begin_nested()
    db.session.add(Order(name="inner"))
    count_orders.perform_later()
    savepoint.rollback()
    released = db.session.begin_nested()
    db.session.add(Order(name="kept"))
    kept = count_orders.perform_later()
    released.commit()
    last = count_orders.perform_later()
    assert jids(r) == []
    db.session.commit()
    assert jids(r) == [first, kept, last]


def test_a_bulk_push_waits_and_is_written_whole(ctx: None, r: redis.Redis) -> None:
    db.session.add(Order(name="a"))
    pushed = confirm_order.perform_bulk([[n] for n in range(250)], batch_size=100)
    assert len(pushed) == 250 and jids(r) == []
    r.config_resetstat()
    db.session.commit()
    assert jids(r) == pushed
    pushes = r.info("commandstats")["cmdstat_evalsha"]
    assert pushes["calls"] - pushes["failed_calls"] == 3  # a round trip per batch


def test_opting_out_per_call(ctx: None, r: redis.Redis) -> None:
    db.session.add(Order(name="a"))
    now = count_orders.set(on_commit=False).perform_later()
    assert jids(r) == [now]
    assert "on_commit" not in queued(r)[0]
    db.session.rollback()
    assert jids(r) == [now]


def test_opting_out_by_setting(redis_url: str, database: str, r: redis.Redis) -> None:
    from .shop import create_app

    app = create_app(
        SQLALCHEMY_DATABASE_URI=database,
        DJQUEUE_REDIS_URL=redis_url,
        DJQUEUE_ENQUEUE_ON_COMMIT=False,
    )
    with app.app_context():
        db.create_all()
        db.session.add(Order(name="b"))
        now = count_orders.perform_later()
        waits = count_orders.set(on_commit=True).perform_later()
        assert jids(r) == [now]
        db.session.commit()
        db.engine.dispose()
    assert jids(r) == [now, waits]


def test_a_plain_session_holds_pushes_too(ctx: None, r: redis.Redis, database: str) -> None:
    engine = create_engine(database)
    with Session(engine) as session:
        session.add(Order(name="plain"))
        committed = count_orders.perform_later()
        assert jids(r) == []
        session.commit()
        assert jids(r) == [committed]
        session.add(Order(name="rolled back"))
        count_orders.perform_later()
        session.rollback()
        session.add(Order(name="closed without commit"))
        count_orders.perform_later()
    assert jids(r) == [committed]
    engine.dispose()


def test_a_push_waits_for_every_session_in_a_transaction(
    ctx: None, r: redis.Redis, database: str
) -> None:
    engine = create_engine(database)
    with Session(engine) as other:
        other.execute(text("SELECT 1"))
        db.session.add(Order(name="a"))
        jid = count_orders.perform_later()
        other.commit()
        assert jids(r) == []
        db.session.commit()
        assert jids(r) == [jid]
    engine.dispose()


@pytest.fixture
def stopped_redis(app: flask.Flask) -> Iterator[RedisServer]:
    """The app's pushes go to a real redis-server that is then stopped (the test starts it
    again, empty, on the same port, when Redis comes back)."""
    own = RedisServer().start()
    app.extensions["djqueue"].configured = djqueue.Settings(redis_url=own.url)
    own.stop()
    yield own
    own.close()


def test_redis_down_at_commit_keeps_the_jobs_in_the_outbox(
    app: flask.Flask, stopped_redis: RedisServer
) -> None:
    with app.app_context():
        outbox_metadata.create_all(db.engine)
    response = app.test_client().post("/orders", data={"name": "kept"})
    assert response.status_code == 200  # the view does not fail once its data committed
    with app.app_context():
        db.session.add(Order(name="later"))
        later = count_orders.perform_in(3600)
        db.session.commit()
        kept = db.session.execute(select(outbox_table).order_by(outbox_table.c.id)).all()
        assert [row.jid for row in kept] == [response.json["jid"], later]
        assert json.loads(kept[0].payload)["args"] == [response.json["id"]]
        assert kept[1].run_at > time.time() + 3500
        stopped_redis.start()  # Redis is back: a worker's relay pushes them
        while outbox.relay_round(EngineSource(db.engine), grace=0):
            pass
        assert db.session.execute(select(outbox_table)).all() == []
    r = stopped_redis.client()
    assert jids(r) == [response.json["jid"]]
    assert [json.loads(m)["jid"] for m in r.zrange("schedule", 0, -1)] == [later]


def test_redis_down_at_commit_without_the_outbox_table_says_how_to_create_it(
    app: flask.Flask, stopped_redis: RedisServer
) -> None:
    with app.app_context():
        db.session.add(Order(name="kept"))
        count_orders.perform_later()
        with pytest.raises(RedisUnavailable, match=r"outbox_metadata\.create_all\(db\.engine\)"):
            db.session.commit()
        assert db.session.query(Order).count() == 1  # the session is usable afterwards
