"""The transactional outbox with SQLAlchemy (Flask-SQLAlchemy's session), on SQLite and, when
DATABASE_URL is set, on a PostgreSQL database of its own; real Redis, real worker processes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import flask
import pytest
import redis
from sqlalchemy import create_engine, insert, select, text
from sqlalchemy.exc import DBAPIError

import djqueue
from djqueue import outbox
from djqueue.client import Client
from djqueue.errors import RedisUnavailable
from djqueue.payload import normalize
from flask_djqueue.outbox import EngineSource, outbox_metadata, outbox_table
from tests.redis_server import RedisServer
from tests.worker_support import RELAY_WAIT, wait_for

from .conftest import queued
from .shop import Order, confirm_order, create_app, db
from .test_worker_cli import ROOT

ENGINES = ["sqlite"] + (["postgresql"] if os.environ.get("DATABASE_URL") else [])


@pytest.fixture(params=ENGINES)
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A SQLite file, or a PostgreSQL database made for this test and dropped after it."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'shop.db'}"
        return
    base = os.environ["DATABASE_URL"].replace("postgres://", "postgresql+psycopg://", 1)
    name = f"djqueue_flask_outbox_{os.getpid()}"
    admin = create_engine(base, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f"DROP DATABASE IF EXISTS {name}"))
        connection.execute(text(f"CREATE DATABASE {name}"))
    yield base.rsplit("/", 1)[0] + "/" + name
    with admin.connect() as connection:
        connection.execute(text(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
    admin.dispose()


def outbox_app(redis_url: str, database: str) -> flask.Flask:
    app = create_app(
        TESTING=True,
        SQLALCHEMY_DATABASE_URI=database,
        DJQUEUE_REDIS_URL=redis_url,
        DJQUEUE_ENQUEUE_ON_COMMIT="outbox",
        DJQUEUE_OUTBOX_GRACE=1.0,
    )
    with app.app_context():
        db.create_all()
        outbox_metadata.create_all(db.engine)
    return app


@pytest.fixture
def app(redis_url: str, database: str) -> Iterator[flask.Flask]:
    app = outbox_app(redis_url, database)
    yield app
    with app.app_context():
        db.engine.dispose()


def rows(app: flask.Flask) -> list[Any]:
    with app.app_context(), db.engine.connect() as connection:
        return list(connection.execute(select(outbox_table).order_by(outbox_table.c.id)))


def worker(app: flask.Flask, redis_url: str, database: str, log: Path) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "FLASK_DJQUEUE_REDIS_URL": redis_url,
        "FLASK_SQLALCHEMY_DATABASE_URI": database,
        "FLASK_DJQUEUE_ENQUEUE_ON_COMMIT": '"outbox"',
        "FLASK_DJQUEUE_OUTBOX_GRACE": "1.0",
    }
    for name in ("DJQUEUE_REDIS_URL", "REDIS_URL", "DJQUEUE_NAMESPACE", "FLASK_APP"):
        env.pop(name, None)
    with open(log, "ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "flask", "--app", "tests.flask.shop", "djqueue", "worker"],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )


@pytest.fixture
def workers() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for process in started:
        process.send_signal(signal.SIGTERM)
    for process in started:
        assert process.wait(30) == 0


def relayed(app: flask.Flask, order_id: int, log: Path) -> None:
    """Wait for a worker's relay to push the order's job, the job to confirm it, and the
    relay to delete its row."""
    wait_for(lambda: status(app, order_id) == "confirmed", RELAY_WAIT, "the relayed job", log)
    wait_for(lambda: not rows(app), RELAY_WAIT, "the row deleted", log)


def status(app: flask.Flask, order_id: int) -> str | None:
    with app.app_context():
        order = db.session.get(Order, order_id)
        return order.status if order is not None else None


def test_commit_pushes_at_once_and_deletes_the_row(app: flask.Flask, r: redis.Redis) -> None:
    with app.app_context():
        order = Order(name="a")
        db.session.add(order)
        db.session.flush()
        jid = confirm_order.perform_later(order.id)
        inside = list(db.session.execute(select(outbox_table.c.jid)).scalars())
        assert inside == [jid] and queued(r) == []
        db.session.commit()
    assert [j["jid"] for j in queued(r)] == [jid]
    assert "outbox" not in queued(r)[0]
    assert rows(app) == []


def test_the_outbox_without_its_table_says_how_to_create_it(redis_url: str, database: str) -> None:
    app = create_app(
        SQLALCHEMY_DATABASE_URI=database,
        DJQUEUE_REDIS_URL=redis_url,
        DJQUEUE_ENQUEUE_ON_COMMIT="outbox",
    )
    with app.app_context():
        db.create_all()  # the app's tables, not outbox_metadata's
        db.session.add(Order(name="a"))
        with pytest.raises(DBAPIError) as raised:
            confirm_order.perform_later(1)
        db.session.rollback()
        db.engine.dispose()
    assert "outbox_metadata.create_all(db.engine)" in "\n".join(raised.value.__notes__)


def test_a_relay_round_with_redis_down_keeps_every_row(app: flask.Flask) -> None:
    client = Client()
    payloads = [
        normalize({"class": "shop.count_orders", "args": []}, client.settings.default_queue)
        for _ in range(80)
    ]
    with app.app_context(), db.engine.begin() as connection:
        connection.execute(
            insert(outbox_table),
            [{"jid": p["jid"], "payload": json.dumps(p), "created_at": 1.0} for p in payloads],
        )
    own = RedisServer().start()
    app.extensions["djqueue"].configured = djqueue.Settings(redis_url=own.url)
    own.stop()
    with app.app_context():
        with pytest.raises(RedisUnavailable):
            outbox.relay_round(EngineSource(db.engine), grace=0)
        assert [row.jid for row in rows(app)] == [p["jid"] for p in payloads]
        own.start()  # Redis is back: the next round pushes them all
        assert outbox.relay_round(EngineSource(db.engine), grace=0) == 80
    assert len(queued(own.client())) == 80 and rows(app) == []
    own.close()


def test_rollback_leaves_no_row_and_no_job(client: Any, app: flask.Flask, r: redis.Redis) -> None:
    client.post("/orders", data={"name": "dropped", "rollback": "1"})
    assert rows(app) == [] and queued(r) == []


def test_outbox_false_holds_the_push_as_before(app: flask.Flask, r: redis.Redis) -> None:
    with app.app_context():
        db.session.add(Order(name="b"))
        db.session.flush()
        confirm_order.set(outbox=False).perform_later(1)
        assert list(db.session.execute(select(outbox_table.c.jid))) == []
        db.session.commit()
    assert len(queued(r)) == 1


@pytest.mark.slow
def test_redis_stopped_before_the_commit_the_job_runs_once_redis_is_back(
    database: str, workers: list[Any], tmp_path: Path
) -> None:
    own = RedisServer().start()
    app = outbox_app(own.url, database)
    own.stop()
    response = app.test_client().post("/orders", data={"name": "late"})
    assert response.status_code == 200  # no error reached the view
    order_id = response.json["id"]
    assert status(app, order_id) == "new" and len(rows(app)) == 1
    own.start()
    log = tmp_path / "worker.log"
    workers.append(worker(app, own.url, database, log))
    relayed(app, order_id, log)
    with app.app_context():
        db.engine.dispose()
    own.close()


KILLED_VIEW = """
import os, signal, sys
from sqlalchemy import event
from tests.flask.shop import Order, confirm_order, create_app, db
app = create_app(DJQUEUE_ENQUEUE_ON_COMMIT="outbox")
with app.app_context():
    order = Order(name="orphan")
    db.session.add(order)
    db.session.flush()
    confirm_order.perform_later(order.id)
    # after_commit comes before the outbox's own push (held until the transaction ends).
    event.listen(db.session(), "after_commit", lambda s: os.kill(os.getpid(), signal.SIGKILL))
    db.session.commit()
print("not reached", flush=True)
"""


@pytest.mark.slow
def test_kill_9_between_commit_and_push_the_job_still_runs(
    app: flask.Flask, redis_url: str, database: str, r: redis.Redis, workers: list[Any], tmp_path
) -> None:
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "FLASK_DJQUEUE_REDIS_URL": redis_url,
        "FLASK_SQLALCHEMY_DATABASE_URI": database,
    }
    command = [sys.executable, "-c", KILLED_VIEW]
    web = subprocess.run(command, cwd=ROOT, env=env, capture_output=True)
    assert web.returncode == -signal.SIGKILL, web.stderr.decode()
    with app.app_context():
        (order,) = db.session.execute(select(Order)).scalars()
        order_id = order.id
    assert len(rows(app)) == 1 and queued(r) == []
    log = tmp_path / "worker.log"
    workers.append(worker(app, redis_url, database, log))
    relayed(app, order_id, log)


@pytest.mark.long
@pytest.mark.slow
def test_two_workers_relay_1000_rows_each_pushed_once(
    app: flask.Flask, redis_url: str, database: str, r: redis.Redis, workers: list[Any], tmp_path
) -> None:
    client = Client()
    payloads = [
        normalize({"class": "shop.count_orders", "args": []}, client.settings.default_queue)
        for _ in range(1000)
    ]
    old = time.time() - 60
    with app.app_context(), db.engine.begin() as connection:
        connection.execute(
            insert(outbox_table),
            [{"jid": p["jid"], "payload": json.dumps(p), "created_at": old} for p in payloads],
        )
    logs = [tmp_path / "worker0.log", tmp_path / "worker1.log"]
    workers.extend(worker(app, redis_url, database, log) for log in logs)
    wait_for(lambda: not rows(app), timeout=60, what="the outbox emptied", log=logs[0])

    def processed() -> int:
        return int(r.get("stat:processed") or 0)

    wait_for(lambda: processed() >= 1000, timeout=60, what="1000 jobs processed", log=logs[0])
    time.sleep(2)  # a second push of any row would be taken by now
    # Both are up (on a loaded machine one may still be starting when the other is done), so
    # each has its TERM handler when the TERM comes.
    wait_for(lambda: r.scard("processes") == 2, timeout=60, what="both workers up", log=logs[1])
    for process in workers:  # a clean stop flushes each worker's counts
        process.send_signal(signal.SIGTERM)
    for process in workers:
        assert process.wait(30) == 0
    workers.clear()
    assert processed() == 1000 and r.llen("queue:default") == 0


def test_the_dashboard_and_flask_djqueue_stats_show_the_outbox(
    app: flask.Flask, r: redis.Redis
) -> None:
    from flask_djqueue.dashboard import dashboard_blueprint

    app.config["SECRET_KEY"] = "test"
    app.register_blueprint(dashboard_blueprint(auth=lambda permission: True), url_prefix="/jobs")
    with app.app_context(), db.engine.begin() as connection:
        connection.execute(
            outbox_table.insert().values(jid="x", payload="{}", created_at=time.time() - 42)
        )
    page = app.test_client().get("/jobs/").get_data(as_text=True)
    assert "Outbox" in page and "Oldest outbox row (s)" in page
    live = app.test_client().get("/jobs/live").get_json()
    assert live["figures"]["outbox"] == "1" and 41 <= int(live["figures"]["outbox_age"]) <= 60
    result = app.test_cli_runner().invoke(args=["djqueue", "stats"])
    assert result.exit_code == 0, result.output
    (line,) = [x for x in result.output.splitlines() if x.startswith("outbox")]
    assert line.startswith("outbox     1 (oldest 4")
