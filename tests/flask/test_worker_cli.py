"""The worker for a Flask app, in subprocesses as a user starts it: ``flask djqueue worker``,
``djqueue worker --app``, ``djqueue worker -r wsgi``, and the warning when there is no app."""

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

from djqueue.client import Client
from tests.redis_server import RedisServer
from tests.worker_support import ROOT, wait_for

from .plain import hide_sqlalchemy, look_at_g, look_at_g_async
from .shop import Order, count_orders, create_app, db

pytestmark = pytest.mark.slow


class Command:
    """One command run as a user would, with the shop's config in ``FLASK_*`` variables."""

    def __init__(
        self, args: list[str], log: Path, redis_url: str, database: str, path: tuple[Path, ...]
    ) -> None:
        self.log = log
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(map(str, (*path, ROOT))),
            "FLASK_DJQUEUE_REDIS_URL": redis_url,
            "FLASK_SQLALCHEMY_DATABASE_URI": database,
        }
        for name in ("DJQUEUE_REDIS_URL", "REDIS_URL", "DJQUEUE_NAMESPACE", "FLASK_APP"):
            env.pop(name, None)
        self._file = open(log, "ab")  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen(
            [sys.executable, *args],
            cwd=ROOT,
            env=env,
            stdout=self._file,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: stop() reaches a reloader's child
        )

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_for(self, predicate: Any, what: str) -> Any:
        """`wait_for`, with this command's output in the failure."""
        return wait_for(predicate, what=what, log=self.log)

    def stop(self) -> None:
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.process.wait(10)
        self._file.close()


@pytest.fixture
def run(tmp_path: Path, redis_url: str, database: str) -> Iterator[Any]:
    started: list[Command] = []

    def start(*args: str, redis: str = redis_url, path: tuple[Path, ...] = ()) -> Command:
        """``path``: folders put before the project's on ``PYTHONPATH``."""
        log = tmp_path / f"command{len(started)}.log"
        command = Command(list(args), log, redis, database, path)
        started.append(command)
        return command

    yield start
    for command in started:
        command.stop()


def process_info(r: redis.Redis, namespace: str = "") -> dict[str, Any]:
    """The ``info`` of the one worker process registered in Redis."""
    prefix = f"{namespace}:" if namespace else ""
    members = wait_for(lambda: r.smembers(f"{prefix}processes"), what="the worker's first beat")
    (identity,) = members
    return json.loads(r.hget(f"{prefix}{identity}", "info") or "{}")


def confirmed(app: flask.Flask, order_id: int) -> Order | None:
    with app.app_context():
        order = db.session.get(Order, order_id)
        return order if order is not None and order.status == "confirmed" else None


def test_flask_djqueue_worker_honours_its_flags_and_runs_jobs_in_the_app_context(
    run: Any, app: flask.Flask, r: redis.Redis, redis_url: str, database: str
) -> None:
    # The web side sends to "orders"; the worker's app config knows only "default".
    web = create_app(
        SQLALCHEMY_DATABASE_URI=database,
        DJQUEUE_REDIS_URL=redis_url,
        DJQUEUE_DEFAULT_QUEUE="orders",
    )
    worker = run(
        "-m", "flask", "--app", "tests.flask.shop", "djqueue", "worker", "-q", "orders", "-c", "3"
    )
    info = process_info(r)
    assert (info["queues"], info["concurrency"]) == (["orders"], 3)

    order = (
        web.test_client()
        .post("/orders", data={"name": "a"}, headers={"X-Request-ID": "req-flask", "X-User": "7"})
        .json
    )
    done = worker.wait_for(lambda: confirmed(app, order["id"]), "the order confirmed")
    assert (done.request_id, done.user_id, done.app_name) == ("req-flask", 7, "shop")
    log = worker.wait_for(lambda: "confirmed order" in worker.output() and worker.output(), "log")
    assert f"request_id=req-flask INFO: confirmed order {order['id']}" in log
    signals = worker.wait_for(lambda: r.lrange("shop:signals", 0, -1), "the signal receiver")
    assert signals == ["shop.confirm_order in shop"]  # the receiver saw current_app


def test_two_worker_processes_use_db_session_each_with_its_own_connections(
    run: Any, app: flask.Flask, r: redis.Redis, redis_url: str, database: str
) -> None:
    web = create_app(
        SQLALCHEMY_DATABASE_URI=database,
        DJQUEUE_REDIS_URL=redis_url,
        DJQUEUE_DEFAULT_QUEUE="orders",
    )
    worker = run(
        "-m", "flask", "--app", "tests.flask.shop", "djqueue", "worker", "-q", "orders",
        "--processes", "2",
    )  # fmt: skip
    worker.wait_for(lambda: r.scard("processes") == 2, "two worker processes")
    client = web.test_client()
    ids = [client.post("/orders", data={"name": f"o{n}"}).json["id"] for n in range(20)]
    for order_id in ids:
        worker.wait_for(lambda order_id=order_id: confirmed(app, order_id), "every order")
    pids = {int(identity.split(":")[1]) for identity in r.smembers("processes")}
    assert worker.process.pid not in pids and len(pids) == 2
    worker.process.send_signal(signal.SIGTERM)
    assert worker.process.wait(30) == 0


@pytest.mark.parametrize("how", ["--app", "-r wsgi"])
def test_djqueue_worker_with_an_app_and_flags_that_win_over_its_config(
    how: str,
    run: Any,
    app: flask.Flask,
    redis_url: str,
    database: str,
    second_redis: RedisServer,
) -> None:
    """The app's config names the session's Redis; the flags name another Redis and namespace,
    a queue, a concurrency, a timeout and a tag: the flags win, every one."""
    second_redis.client().flushall()
    loading = (
        ["--app", "tests.flask.shop:create_app"] if how == "--app" else ["-r", "tests.flask.wsgi"]
    )
    flags = [
        "--redis-url",
        second_redis.url,
        "--namespace",
        "other",
        "-q",
        "orders",
        "-c",
        "2",
        "-t",
        "7",
        "--tag",
        "shop-worker",
    ]
    worker = run("-m", "djqueue.worker.cli", "worker", *loading, *flags)
    other = second_redis.client(decode_responses=True)
    info = process_info(other, "other")
    assert (info["queues"], info["concurrency"], info["tag"]) == (["orders"], 2, "shop-worker")
    assert redis.Redis.from_url(redis_url).keys("*") == []

    web = create_app(
        SQLALCHEMY_DATABASE_URI=database,
        DJQUEUE_REDIS_URL=second_redis.url,
        DJQUEUE_NAMESPACE="other",
        DJQUEUE_DEFAULT_QUEUE="orders",
    )
    order = web.test_client().post("/orders", data={"name": "b"}).json
    done = worker.wait_for(lambda: confirmed(app, order["id"]), "the order confirmed")
    assert done.app_name == "shop"
    signals = worker.wait_for(lambda: other.lrange("shop:signals", 0, -1), "the signal receiver")
    assert signals == ["shop.confirm_order in shop"]
    worker.process.send_signal(signal.SIGTERM)
    assert worker.process.wait(20) == 0
    assert "shutting down (waiting up to 7 s for running jobs)" in worker.output()


def test_a_worker_without_an_app_says_so_when_it_starts(
    run: Any, r: redis.Redis, redis_url: str
) -> None:
    """And runs, with its flags: a worker is not a push outside any app."""
    worker = run(
        "-m", "djqueue.worker.cli", "worker", "-r", "tests.flask.shop", "--redis-url", redis_url
    )
    log = worker.wait_for(lambda: "no Flask app" in worker.output() and worker.output(), "warning")
    assert "jobs run outside any app context" in log
    assert "djqueue worker --app MODULE:create_app" in log
    assert process_info(r)["concurrency"] == 10


def test_two_apps_and_no_app_flag_is_an_error(run: Any) -> None:
    worker = run(
        "-m", "djqueue.worker.cli", "worker", "-r", "tests.flask.wsgi", "-r", "tests.flask.wsgi2"
    )
    assert worker.process.wait(30) == 1
    assert "2 Flask apps are set up with DjQueue in this worker" in worker.output()


def test_flask_djqueue_reports_and_help(
    run: Any, app: flask.Flask, r: redis.Redis, redis_url: str
) -> None:
    with app.app_context():
        jid = count_orders.perform_later()
    base = ["-m", "flask", "--app", "tests.flask.shop", "djqueue"]
    queues, stats, status, helped = (
        run(*base, "queues"),
        run(*base, "stats"),
        run(*base, "status", str(jid)),
        run(*base, "worker", "--help"),
    )
    for command in (queues, stats, helped):
        assert command.process.wait(30) == 0, command.output()
    assert queues.output().splitlines()[1].split()[:2] == ["default", "1"]
    assert "enqueued   1" in stats.output()
    assert f"(read from Redis at {redis_url})" in stats.output()  # the app's, said once
    assert status.process.wait(30) == 1 and f"job {jid}: unknown" in status.output()
    assert "DJQUEUE_CONCURRENCY, now 10" in helped.output()
    assert "usage: flask djqueue worker" in helped.output()


def test_an_app_without_sqlalchemy_runs_jobs_and_shows_its_dashboard(
    run: Any, r: redis.Redis, tmp_path: Path
) -> None:
    """What ``pip install "djqueue[flask]"`` gives: Flask without SQLAlchemy."""
    hidden = (hide_sqlalchemy(tmp_path / "hidden"),)
    web = run(
        "-c",
        "import sqlalchemy",
        path=hidden,
    )
    assert web.process.wait(30) == 1
    assert "No module named 'sqlalchemy'" in web.output()
    web = run(
        "-c",
        "from tests.flask.plain import create_app, note\n"
        "app = create_app()\n"
        "with app.app_context():\n"
        "    note.perform_later('pushed from the app')\n"
        "page = app.test_client().get('/djqueue/')\n"
        "print(page.status_code, page.get_data(as_text=True))\n",
        path=hidden,
    )
    assert web.process.wait(30) == 0, web.output()
    assert web.output().startswith("200 ")
    assert "<h1>Dashboard</h1>" in web.output()
    stats = run("-m", "flask", "--app", "tests.flask.plain", "djqueue", "stats", path=hidden)
    assert stats.process.wait(30) == 0, stats.output()
    assert "enqueued   1" in stats.output()
    worker = run("-m", "flask", "--app", "tests.flask.plain", "djqueue", "worker", path=hidden)
    worker.wait_for(lambda: r.lrange("plain:notes", 0, -1), "the job run by the worker")
    assert r.lrange("plain:notes", 0, -1) == ["pushed from the app"]


def test_each_job_finds_g_empty(run: Any, r: redis.Redis) -> None:
    """A fresh ``g`` per job, as per request: nothing of djqueue's, nothing of the job before."""
    worker = run("-m", "flask", "--app", "tests.flask.plain", "djqueue", "worker", "-c", "1")
    for job in (look_at_g, look_at_g, look_at_g_async, look_at_g_async):
        job.perform_later()
    worker.wait_for(lambda: r.llen("plain:g") == 4, "the jobs run")
    assert r.lrange("plain:g", 0, -1) == ["(empty)"] * 4


def test_an_unknown_job_is_explained_the_flask_way(run: Any, r: redis.Redis) -> None:
    """The error a dashboard shows for a job the worker does not know names the app's imports,
    not the plain worker's -r."""
    worker = run("-m", "flask", "--app", "tests.flask.plain", "djqueue", "worker")
    Client().push({"class": "plain.renamed_job", "args": [], "retry": 1})
    (entry,) = worker.wait_for(lambda: r.zrange("retry", 0, -1), "the job in the retry set")
    assert json.loads(entry)["error_message"] == (
        "no job is registered as 'plain.renamed_job' in this process; import the module that "
        "defines it where the app 'plain' is made (its factory: `from . import jobs`), so that "
        "loading the app registers them"
    )


@pytest.mark.long
def test_flask_djqueue_worker_reload_restarts_when_a_module_changes(
    run: Any, r: redis.Redis, tmp_path: Path
) -> None:
    module = tmp_path / "reloadable_jobs.py"
    source = (
        "import djqueue\nfrom tests.jobs_for_worker import r\n\n"
        "@djqueue.job(name='t.version')\ndef version():\n    r().rpush('versions', {v!r})\n"
    )
    module.write_text(source.format(v="one"))
    worker = run(
        "-m", "flask", "--app", "tests.flask.shop", "djqueue", "worker", "-r", str(module),
        "--reload",
    )  # fmt: skip
    worker.wait_for(lambda: r.scard("processes") == 1, "the worker")
    r.lpush("queue:default", json.dumps({"class": "t.version", "args": [], "jid": "a1"}))
    worker.wait_for(lambda: r.lrange("versions", 0, -1) == ["one"], "the first version")
    time.sleep(1.1)
    module.write_text(source.format(v="two"))
    worker.wait_for(lambda: "bye" in worker.output(), "the old worker leaving as on TERM")
    worker.wait_for(lambda: r.scard("processes") == 1, "the new worker")
    r.lpush("queue:default", json.dumps({"class": "t.version", "args": [], "jid": "a2"}))
    worker.wait_for(lambda: r.lrange("versions", 0, -1) == ["one", "two"], "the new version")
    # The reloader killed: the worker it ran stops too (it watches its parent at each beat).
    worker.process.kill()
    worker.process.wait(30)
    worker.wait_for(lambda: r.scard("processes") == 0, "the worker gone with its reloader")


@pytest.mark.long
def test_flask_djqueue_worker_reload_survives_a_syntax_error_in_a_job_module(
    run: Any, r: redis.Redis, tmp_path: Path
) -> None:
    """The app imports its jobs module; a syntax error saved there is reported, the reloader
    keeps watching, and the worker starts once the file is fixed (as `flask run` does)."""
    (tmp_path / "reload_shop.py").write_text(
        "from flask import Flask\n\nimport reload_jobs  # noqa: F401\n"
        "from flask_djqueue import DjQueue\n\n\n"
        "def create_app():\n    app = Flask(__name__)\n    app.config.from_prefixed_env()\n"
        "    DjQueue(app)\n    return app\n"
    )
    jobs = tmp_path / "reload_jobs.py"
    jobs.write_text("import djqueue\n\n@djqueue.job(name='t.fixed')\ndef fixed(:\n    pass\n")
    app = str(tmp_path / "reload_shop.py")
    worker = run("-m", "flask", "--app", app, "djqueue", "worker", "--reload")
    worker.wait_for(lambda: "SyntaxError" in worker.output(), "the error reported")
    assert "reload_jobs.py" in worker.output()
    time.sleep(1.1)  # a new modification time the reloader can tell apart
    assert worker.process.poll() is None, worker.output()
    jobs.write_text(
        "import djqueue\nfrom tests.jobs_for_worker import r\n\n"
        "@djqueue.job(name='t.fixed')\ndef fixed(n):\n    r().rpush('fixed', n)\n"
    )
    r.lpush("queue:default", json.dumps({"class": "t.fixed", "args": [7], "jid": "b1"}))
    worker.wait_for(lambda: r.lrange("fixed", 0, -1) == ["7"], "the job run by the fixed module")


def test_flask_djqueue_worker_burst_runs_the_queued_jobs_then_exits_0(
    run: Any, app: flask.Flask, r: redis.Redis, redis_url: str, database: str
) -> None:
    web = create_app(SQLALCHEMY_DATABASE_URI=database, DJQUEUE_REDIS_URL=redis_url)
    ids = [web.test_client().post("/orders", data={"name": f"b{n}"}).json["id"] for n in range(3)]
    worker = run("-m", "flask", "--app", "tests.flask.shop", "djqueue", "worker", "--burst")
    assert worker.process.wait(60) == 0, worker.output()
    assert all(confirmed(app, order_id) for order_id in ids), worker.output()
    assert "burst: the queues are empty" in worker.output()
