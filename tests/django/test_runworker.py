"""``manage.py runworker`` as a real subprocess, on the test database and the private Redis."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.db import connection

import djqueue
from djqueue.contrib.django.tasks_framework import TaskResultStatus, default_task_backend
from tests.django.conftest import seen
from tests.django.testapp.models import Order
from tests.django.testapp.tasks import add_order, nap, shout
from tests.worker_support import wait_for

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

ROOT = Path(__file__).resolve().parents[2]


class Runworker:
    """``manage.py runworker`` subprocesses for one test. Each runs in a session of its own and
    is ended with its children (a reloader's worker, a swarm's) when the test ends, passed or
    failed: a worker left behind would take the jobs of the tests after it."""

    def __init__(self, redis_url: str) -> None:
        self.redis_url = redis_url
        self.processes: list[subprocess.Popen] = []

    def start(self, log: Path, *args: str, **extra_env: str) -> subprocess.Popen:
        env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "tests.django.settings",
            "DJQUEUE_REDIS_URL": self.redis_url,
            "DJQUEUE_TEST_DATABASE_NAME": str(connection.settings_dict["NAME"]),
            "PYTHONPATH": str(ROOT),
            **extra_env,
        }
        command = [sys.executable, "-m", "django", "runworker", "-c", "2"]
        command += ["-q", "default", "-q", "tasks", *args]
        with open(log, "wb") as out:
            process = subprocess.Popen(
                command,
                cwd=ROOT,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.processes.append(process)
        return process

    def stop(self, process: subprocess.Popen, log: Path) -> None:
        """TERM, as a deploy sends it; the process must exit 0 within 30 s."""
        process.send_signal(signal.SIGTERM)
        code = process.wait(30)
        assert code == 0, log.read_text()

    def end_all(self) -> None:
        for process in self.processes:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            process.wait()


@pytest.fixture
def runworker(redis_url: str) -> Iterator[Runworker]:
    workers = Runworker(redis_url)
    yield workers
    workers.end_all()


@pytest.fixture
def worker(runworker: Runworker, tmp_path: Path) -> Iterator[Path]:
    """A runworker process; yields the path of its log, stopped with TERM after."""
    log = tmp_path / "worker.log"
    process = runworker.start(log)
    yield log
    runworker.stop(process, log)


def edit(path: Path, text: str, log: Path) -> None:
    """Writes ``text`` to ``path`` and waits for the reloader to say it is reloading. Django's
    reloader takes the time a file had when it first looked at it as the file's start: on a
    loaded machine that first look can come after the edit, which it then never sees. So, as a
    developer saving again would, the file's modification time moves on every 2 s until the
    reloader has acted."""

    def reloads() -> int:
        return log.read_text().count("changed, reloading")

    before = reloads()
    path.write_text(text)
    for attempt in range(15):
        if attempt:
            later = time.time() + attempt
            os.utime(path, (later, later))
        try:
            wait_for(lambda: reloads() > before, 2)
            return
        except AssertionError:
            continue
    raise AssertionError(f"no reload within 30 s of editing {path}\n{log.read_text()}")


def reports_of(r, kind: str, count: int = 1, log: Path | None = None) -> list[dict]:
    """The worker's first ``count`` reports of ``kind`` (`tests.worker_support.wait_for`)."""

    def found() -> list[dict]:
        got = seen(r, kind)
        return got if len(got) >= count else []

    return wait_for(found, 30, f"{count} {kind!r} report(s) from the worker", log)


def test_the_job_sees_the_row_its_view_created(client, r, worker):
    response = client.post("/orders/", {"name": "first"})
    order_id = response.json()["id"]
    (report,) = reports_of(r, "order", log=worker)
    assert report == {"kind": "order", "order_id": order_id, "name": "first"}
    assert Order.objects.get(pk=order_id).seen_by_job is True
    assert r.zcard("retry") == 0  # it found the row on its first try


def test_two_worker_processes_each_with_its_own_database_connection(client, r, runworker, tmp_path):
    log = tmp_path / "swarm.log"
    swarm = runworker.start(log, "--processes", "2")
    ids = [client.post("/orders/", {"name": f"o{n}"}).json()["id"] for n in range(20)]
    reports = reports_of(r, "order", count=20, log=log)
    assert sorted(report["order_id"] for report in reports) == sorted(ids)
    assert Order.objects.filter(seen_by_job=True).count() == 20
    assert log.read_text().count("djqueue 0.1.0 starting") == 2
    runworker.stop(swarm, log)  # TERM, and the swarm exits 0


def test_an_async_job_uses_the_async_orm_on_the_event_loop(r, worker):
    from tests.django.testapp.jobs import mark_order_async

    orders = [Order.objects.create(name=f"async{n}") for n in range(20)]
    for order in orders:
        mark_order_async.perform_later(order.id)
    reports = reports_of(r, "async-order", count=20, log=worker)
    assert sorted(report["order_id"] for report in reports) == sorted(o.id for o in orders)
    assert Order.objects.filter(seen_by_job=True).count() == 20
    assert "fail:" not in worker.read_text()


def test_request_context_and_log_lines_in_the_worker(client, r, worker):
    user = User.objects.create_user("grace")
    client.force_login(user)
    client.get("/context/?label=w", headers={"x-request-id": "req-77", "accept-language": "de"})
    (report,) = reports_of(r, "context", log=worker)
    assert report == {
        "kind": "context",
        "label": "w",
        "request_id": "req-77",
        "user_id": user.pk,
        "language": "de",
    }
    # One handler, one format for every line of the worker, the app's own included: the
    # line names the job and the request behind it.
    line = "request_id=req-77 INFO: reporting w"
    wait_for(lambda: line in worker.read_text(), 10, "the job's log line", worker)
    (line,) = [x for x in worker.read_text().splitlines() if "reporting w" in x]
    assert "class=tests.django.testapp.jobs.report_context" in line


def test_django_tasks_run_in_runworker(r, worker):
    result = add_order.enqueue("from a task", mark=True)
    shout.enqueue("quiet")
    (report,) = reports_of(r, "task", log=worker)
    assert report["name"] == "from a task"
    assert Order.objects.get(pk=report["order_id"]).seen_by_job is True
    assert reports_of(r, "async-task", log=worker) == [{"kind": "async-task", "text": "QUIET"}]
    assert len(result.id) == 24
    # The log names the task, not the wrapper job that runs it.
    assert f"class=tests.django.testapp.tasks.add_order jid={result.id} INFO: start" in (
        worker.read_text()
    )


def test_200_async_tasks_awaiting_a_second_finish_together_with_five_threads(
    r, runworker, tmp_path
):
    """200 ``async def`` tasks that each await 1 s, one ``runworker -c 5``: they are awaited
    together on the worker's event loop (up to its async concurrency, 100 by default), so
    they finish in a few seconds, where five threads running them one by one would take 40 s.
    What shows it without a clock: the first task to wake had seen far more than five start."""
    log = tmp_path / "worker.log"
    results = [nap.enqueue(1.0) for _ in range(200)]
    process = runworker.start(log, "-c", "5")
    started = time.monotonic()

    def all_done() -> list:
        found = [default_task_backend.get_result(result.id) for result in results]
        return found if all(f.status == TaskResultStatus.SUCCESSFUL for f in found) else []

    found = wait_for(all_done, 60, "200 naps SUCCESSFUL", log)
    elapsed = time.monotonic() - started
    woke_seeing = sorted(f.return_value for f in found)
    assert woke_seeing[0] > 20, (woke_seeing[:10], elapsed)
    print(f"200 naps of 1 s with -c 5: done {elapsed:.1f} s after the worker was started")
    runworker.stop(process, log)


def test_runworker_help_shows_the_projects_values_and_setting_names():
    from djqueue.contrib.django.management.commands.runworker import Command

    text = " ".join(Command().create_parser("manage.py", "runworker").format_help().split())
    assert "DJQUEUE['CONCURRENCY'], now 10" in text
    assert "DJQUEUE['QUEUES'], now default tasks" in text


def test_with_debug_on_each_line_is_written_once_in_one_format(r, runworker, tmp_path):
    """Django's DEBUG console handler printed every django.tasks line a second time, in its
    own format, beside djqueue's."""
    log = tmp_path / "debug-worker.log"
    process = runworker.start(log, DJQUEUE_TEST_DEBUG="1")
    result = add_order.enqueue("debug on")
    reports_of(r, "task", log=log)
    wait_for(
        lambda: f"id={result.id}" in log.read_text() and "SUCCESSFUL" in log.read_text(),
        10,
        "the task's SUCCESSFUL line",
        log,
    )
    runworker.stop(process, log)
    lines = [x for x in log.read_text().splitlines() if f"Task id={result.id}" in x]
    assert len(lines) == 2  # RUNNING, SUCCESSFUL: once each
    assert all(" pid=" in x and f"jid={result.id}" in x for x in lines)


def test_runworker_reload_restarts_the_worker_when_a_job_module_changes(r, runworker, tmp_path):
    module = tmp_path / "reloadable_jobs.py"
    source = (
        "import djqueue\nfrom tests.jobs_for_worker import r\n\n"
        "@djqueue.job(name='t.version')\ndef version():\n    r().rpush('versions', {v!r})\n"
    )
    module.write_text(source.format(v="one"))
    log = tmp_path / "reload.log"
    reloader = runworker.start(log, "-r", str(module), "--reload")
    djqueue.Client().push({"class": "t.version", "args": []})
    wait_for(lambda: r.lrange("versions", 0, -1) == ["one"], 30, "version one ran", log)
    time.sleep(1.1)  # a new modification time the reloader can tell apart
    edit(module, source.format(v="two"), log)
    wait_for(lambda: "bye" in log.read_text(), 30, "the old worker leaving as on TERM", log)
    wait_for(lambda: r.scard("processes") == 1, 30, "one worker process", log)
    djqueue.Client().push({"class": "t.version", "args": []})
    wait_for(lambda: r.llen("versions") >= 2, 30, "version two ran", log)
    assert r.lrange("versions", 0, -1) == ["one", "two"], log.read_text()
    assert "changed, reloading" in log.read_text()
    runworker.stop(reloader, log)  # TERM to the reloader, which ends its worker process
    pids = [int(identity.split(":")[1]) for identity in r.smembers("processes")]
    wait_for(
        lambda: not any(os.path.exists(f"/proc/{pid}") for pid in pids),
        60,
        "the worker gone with its reloader",
    )


def test_runworker_reload_survives_a_syntax_error_in_a_jobs_module(r, runworker, tmp_path):
    """As runserver does: a broken jobs module (found by discovery, at Django's start-up) is
    reported and watched; once the file is fixed, the worker starts and runs its job."""
    app = tmp_path / "reload_app"
    app.mkdir()
    (app / "__init__.py").write_text("")
    jobs = app / "jobs.py"
    jobs.write_text("import djqueue\n\n@djqueue.job(name='t.fixed')\ndef fixed(:\n    pass\n")
    (tmp_path / "reload_settings.py").write_text(
        "from tests.django.settings import *  # noqa: F403\n\n"
        "INSTALLED_APPS = [*INSTALLED_APPS, 'reload_app']  # noqa: F405\n"
    )
    log = tmp_path / "reload.log"
    reloader = runworker.start(
        log,
        "--reload",
        DJANGO_SETTINGS_MODULE="reload_settings",
        PYTHONPATH=f"{tmp_path}{os.pathsep}{ROOT}",
    )
    wait_for(lambda: "SyntaxError" in log.read_text(), 30, "the SyntaxError reported", log)
    assert "djqueue: a jobs module failed to import" in log.read_text(), log.read_text()
    assert "reload_app/jobs.py" in log.read_text()
    time.sleep(1.1)  # a new modification time the reloader can tell apart
    fixed = "import djqueue\nfrom tests.jobs_for_worker import r\n\n"
    fixed += "@djqueue.job(name='t.fixed')\ndef fixed(n):\n    r().rpush('fixed', n)\n"
    edit(jobs, fixed, log)
    djqueue.Client().push({"class": "t.fixed", "args": [7]})
    wait_for(lambda: r.lrange("fixed", 0, -1) == ["7"], 30, "the fixed job ran", log)
    runworker.stop(reloader, log)  # TERM to the reloader; it exits 0


def test_runworker_burst_runs_the_queued_jobs_then_exits_0(r, redis_url, tmp_path):
    from tests.django.testapp.jobs import mark_order

    order = Order.objects.create(name="first")
    mark_order.perform_later(order.pk)
    add_order.enqueue("burst")
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.django.settings",
        "DJQUEUE_REDIS_URL": redis_url,
        "DJQUEUE_TEST_DATABASE_NAME": str(connection.settings_dict["NAME"]),
        "PYTHONPATH": str(ROOT),
    }
    done = subprocess.run(
        [sys.executable, "-m", "django", "runworker", "--burst", "-q", "default", "-q", "tasks"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "burst: the queues are empty" in done.stderr
    assert reports_of(r, "task")  # the django.tasks task ran
    assert Order.objects.filter(name="burst").exists()
    order.refresh_from_db()
    assert order.seen_by_job
    assert r.llen("queue:default") == 0 and r.llen("queue:tasks") == 0


@pytest.mark.slow
def test_a_priority_task_pushed_after_fifty_runs_before_them(r, runworker, tmp_path):
    """runworker listens to each task queue's bands around it: strict order fetches
    default:high before default, even with one thread."""
    for n in range(50):
        add_order.enqueue(f"plain {n}")
    add_order.using(priority=100).enqueue("urgent")
    log = tmp_path / "worker.log"
    process = runworker.start(log, "-c", "1")
    reports = reports_of(r, "task", count=51, log=log)
    runworker.stop(process, log)
    assert reports[0]["name"] == "urgent"
    assert [x["name"] for x in reports[1:]] == [f"plain {n}" for n in range(50)]
