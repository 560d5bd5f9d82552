"""The transactional outbox on a real database (the default one, PostgreSQL when DATABASE_URL
is set, and the always-SQLite "other" one) and a real Redis, with real worker processes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.core import checks
from django.db import connections, transaction
from django.test import override_settings

import djqueue
from djqueue import outbox
from djqueue.client import Client
from djqueue.contrib.django.models import OutboxJob
from djqueue.contrib.django.outbox import DatabaseSource
from djqueue.errors import RedisUnavailable
from djqueue.outbox import DUTY
from djqueue.payload import normalize
from djqueue.worker import duties
from tests.django.conftest import queued, seen
from tests.django.test_runworker import ROOT
from tests.django.testapp.jobs import mark_order_in, note
from tests.django.testapp.models import Order
from tests.redis_server import RedisServer
from tests.worker_support import RELAY_WAIT, wait_for

DATABASES = ["default", "other"]
pytestmark = pytest.mark.django_db(transaction=True, databases=DATABASES)
OUTBOX = {"ENQUEUE_ON_COMMIT": "outbox", "QUEUES": ["default", "tasks"], "OUTBOX_GRACE": 1.0}


@pytest.fixture(params=DATABASES)
def db(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def rows(db: str) -> list[OutboxJob]:
    return list(OutboxJob.objects.using(db).order_by("pk"))


def child_env(redis_url: str) -> dict[str, str]:
    """The environment of a Django process on the test's Redis and databases."""
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.django.settings",
        "DJQUEUE_REDIS_URL": redis_url,
        "DJQUEUE_TEST_DATABASE_NAME": str(connections["default"].settings_dict["NAME"]),
        "DJQUEUE_TEST_OTHER_DATABASE_NAME": str(connections["other"].settings_dict["NAME"]),
        "PYTHONPATH": str(ROOT),
    }


def killed(script: str, redis_url: str, db: str) -> None:
    """Run ``script`` (given ``db``) in a Django process that kills itself with SIGKILL."""
    process = subprocess.run(
        [sys.executable, "-c", script, db], cwd=ROOT, env=child_env(redis_url), capture_output=True
    )
    assert process.returncode == -signal.SIGKILL, process.stderr.decode()
    assert b"not reached" not in process.stdout


def start_worker(redis_url: str, log: Path) -> subprocess.Popen[bytes]:
    """A runworker process relaying the outbox (grace 1 s) of both test databases."""
    env = {**child_env(redis_url), "DJQUEUE_TEST_OUTBOX": "1"}
    with open(log, "ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "django", "runworker", "-c", "4", "-q", "default"],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )


@pytest.fixture
def workers(tmp_path: Path) -> Iterator[list[subprocess.Popen[bytes]]]:
    """Worker processes a test starts; each stopped with TERM afterwards, exit 0 expected."""
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for process in started:
        process.send_signal(signal.SIGTERM)
    for process in started:
        assert process.wait(30) == 0


# -- in one process ---------------------------------------------------------------------------


def test_commit_pushes_at_once_and_deletes_the_row(r, db):
    with transaction.atomic(using=db):
        order = Order.objects.using(db).create(name="a")
        jid = mark_order_in.set(outbox=True, using=db).perform_later(db, order.pk)
        assert queued(r) == []
        (row,) = rows(db)  # written in the transaction, visible to it
        assert row.jid == jid and json.loads(row.payload)["args"] == [db, order.pk]
    assert [(j["jid"], j["args"]) for j in queued(r)] == [(jid, [db, order.pk])]
    assert "outbox" not in queued(r)[0] and "using" not in queued(r)[0]
    assert rows(db) == []


def test_rollback_leaves_no_row_and_no_job(r, db):
    with pytest.raises(ValueError), transaction.atomic(using=db):
        Order.objects.using(db).create(name="gone")
        mark_order_in.set(outbox=True, using=db).perform_later(db, 1)
        raise ValueError("roll back")
    assert rows(db) == [] and queued(r) == []
    assert not Order.objects.using(db).exists()


def test_a_rolled_back_savepoint_drops_only_its_rows(r, db):
    outboxed = note.set(outbox=True, using=db)
    with transaction.atomic(using=db):
        outboxed.perform_later(1)
        try:
            with transaction.atomic(using=db):
                outboxed.perform_later(2)
                raise ValueError
        except ValueError:
            pass
        outboxed.perform_later(3)
    assert [j["args"] for j in queued(r)] == [[1], [3]]
    assert rows(db) == []


@override_settings(DJQUEUE=OUTBOX)
def test_the_setting_turns_it_on_and_outbox_false_off_for_one_push(r):
    with transaction.atomic():
        note.perform_later(1)
        note.set(outbox=False).perform_later(2)
        assert [json.loads(row.payload)["args"] for row in rows("default")] == [[1]]
    assert sorted(j["args"][0] for j in queued(r)) == [1, 2]
    assert rows("default") == []


@override_settings(DJQUEUE=OUTBOX)
def test_outside_a_transaction_it_pushes_at_once(r):
    jid = note.perform_later(5)
    assert [j["jid"] for j in queued(r)] == [jid] and rows("default") == []


@override_settings(DJQUEUE=OUTBOX)
def test_a_scheduled_job_keeps_its_time(r):
    with transaction.atomic():
        jid = note.perform_in(3600, 1)
        (row,) = rows("default")
        assert row.run_at is not None and row.run_at > time.time() + 3500
    assert [json.loads(m)["jid"] for m in r.zrange("schedule", 0, -1)] == [jid]


@override_settings(DJQUEUE=OUTBOX)
def test_redis_down_at_commit_keeps_the_row_and_the_view_succeeds(client, db):
    own = RedisServer().start()
    djqueue.configure(redis_url=own.url)
    own.stop()
    response = client.post("/orders/outbox/", {"name": "kept", "db": db})
    assert response.status_code == 200
    order = Order.objects.using(db).get(pk=response.json()["id"])
    assert order.name == "kept"
    assert [row.jid for row in rows(db)] == [response.json()["jid"]]
    own.close()


# -- with real worker processes ---------------------------------------------------------------


@pytest.mark.slow
@override_settings(DJQUEUE=OUTBOX)
def test_redis_stopped_before_the_commit_the_job_runs_once_redis_is_back(
    client, db, workers, tmp_path
):
    own = RedisServer()
    own.start()
    djqueue.configure(redis_url=own.url)
    own.stop()
    response = client.post("/orders/outbox/", {"name": "late", "db": db})
    assert response.status_code == 200  # no error reached the view
    order_id = response.json()["id"]
    assert Order.objects.using(db).filter(pk=order_id).exists()
    assert len(rows(db)) == 1
    own.start()  # same port: Redis is back, empty
    log = tmp_path / "worker.log"
    workers.append(start_worker(own.url, log))
    r = own.client(decode_responses=True)
    (report,) = wait_for(
        lambda: seen(r, "order"), what="the relayed job", log=log, timeout=RELAY_WAIT
    )
    assert report == {"kind": "order", "order_id": order_id, "name": "late", "database": db}
    assert Order.objects.using(db).get(pk=order_id).seen_by_job is True
    wait_for(lambda: not rows(db), what="the row deleted", log=log, timeout=RELAY_WAIT)
    r.close()
    own.close()


KILLED_VIEW = """
import os, signal, sys
import django
django.setup()
from django.db import transaction
import djqueue
from tests.django.testapp.jobs import mark_order_in
from tests.django.testapp.models import Order
db = sys.argv[1]
with transaction.atomic(using=db):
    order = Order.objects.using(db).create(name="orphan")
    # Runs after the commit, before the outbox's own push (callbacks run in order).
    transaction.on_commit(lambda: os.kill(os.getpid(), signal.SIGKILL), using=db)
    mark_order_in.set(outbox=True, using=db).perform_later(db, order.pk)
print("not reached", flush=True)
"""


@pytest.mark.slow
def test_kill_9_between_commit_and_push_the_job_still_runs(r, redis_url, db, workers, tmp_path):
    killed(KILLED_VIEW, redis_url, db)
    (order,) = Order.objects.using(db).all()
    assert len(rows(db)) == 1 and queued(r) == []  # committed, never pushed
    log = tmp_path / "worker.log"
    workers.append(start_worker(redis_url, log))
    (report,) = wait_for(
        lambda: seen(r, "order"), what="the relayed job", log=log, timeout=RELAY_WAIT
    )
    assert report["order_id"] == order.pk
    wait_for(lambda: not rows(db), what="the row deleted", log=log, timeout=RELAY_WAIT)


@pytest.mark.slow
def test_two_workers_relay_1000_rows_each_pushed_once(r, redis_url, db, workers, tmp_path):
    client = Client()
    old = time.time() - 60
    payloads = [
        normalize({"class": note.job_name, "args": [n]}, client.settings.default_queue)
        for n in range(1000)
    ]
    OutboxJob.objects.using(db).bulk_create(
        OutboxJob(jid=p["jid"], payload=json.dumps(p), created_at=old) for p in payloads
    )
    logs = [tmp_path / "worker0.log", tmp_path / "worker1.log"]
    workers.extend(start_worker(redis_url, log) for log in logs)
    wait_for(lambda: len(seen(r, "note")) >= 1000, timeout=90, what="1000 jobs", log=logs[0])
    time.sleep(2)  # a second push of any row would show up by now
    reports = seen(r, "note")
    assert sorted(x["number"] for x in reports) == list(range(1000))
    assert len({x["jid"] for x in reports}) == 1000
    assert rows(db) == []
    assert r.llen("queue:default") == 0 and r.zcard("retry") == 0


def old_rows(db: str, count: int) -> list[str]:
    """``count`` rows of note(n) past any grace, as a commit that never pushed leaves them."""
    client = Client()
    payloads = [
        normalize({"class": note.job_name, "args": [n]}, client.settings.default_queue)
        for n in range(count)
    ]
    OutboxJob.objects.using(db).bulk_create(
        OutboxJob(jid=p["jid"], payload=json.dumps(p), created_at=time.time() - 60)
        for p in payloads
    )
    return [p["jid"] for p in payloads]


def test_a_relay_round_with_redis_down_keeps_every_row(db):
    jids = old_rows(db, 120)
    own = RedisServer().start()
    djqueue.configure(redis_url=own.url)
    own.stop()
    with pytest.raises(RedisUnavailable):
        outbox.relay_round(DatabaseSource(db), grace=0)
    assert [row.jid for row in rows(db)] == jids  # the failed push rolled the claim back
    own.start()  # Redis is back (empty): the next round pushes them all
    assert outbox.relay_round(DatabaseSource(db), grace=0) == 120
    assert [j["jid"] for j in queued(own.client())] == jids and rows(db) == []
    own.close()


KILLED_RELAY = """
import os, signal, sys
import django
django.setup()
from djqueue import outbox
from djqueue.client import Client
from djqueue.contrib.django.outbox import DatabaseSource

class KilledAfterPush(Client):
    def raw_push(self, payloads):
        super().raw_push(payloads)  # the jobs are in Redis; the claim never commits
        os.kill(os.getpid(), signal.SIGKILL)

outbox.relay_round(DatabaseSource(sys.argv[1]), grace=0, client=KilledAfterPush())
print("not reached", flush=True)
"""


def test_a_relay_killed_between_push_and_commit_duplicates_at_most_one_claim(r, redis_url, db):
    jids = old_rows(db, 1000)
    killed(KILLED_RELAY, redis_url, db)
    assert len(rows(db)) == 1000  # the killed claim rolled back: every row is still there
    while outbox.relay_round(DatabaseSource(db), grace=0):
        pass
    pushed = [j["jid"] for j in queued(r)]
    assert sorted(set(pushed)) == sorted(jids)  # nothing lost
    assert len(pushed) - len(jids) <= outbox.CLAIM_SIZE  # what the crash pushed twice
    assert rows(db) == []


# -- checks and figures -----------------------------------------------------------------------


def outbox_warnings() -> list[str]:
    return [
        m.id
        for m in checks.run_checks(tags=["djqueue"], include_deployment_checks=False)
        if m.id in ("djqueue.W004", "djqueue.W005")
    ]


def test_check_warns_when_no_worker_relays(worker, redis_url):
    with override_settings(DJQUEUE={**OUTBOX, "REDIS_URL": redis_url}):
        assert outbox_warnings() == ["djqueue.W004"]
        worker()  # a worker that does not relay
        assert outbox_warnings() == ["djqueue.W004"]
        duties.add(DUTY, lambda: False)
        try:
            worker()
        finally:
            duties.remove(DUTY)
        assert outbox_warnings() == []


def test_no_outbox_no_warning(redis_url):
    with override_settings(DJQUEUE={"QUEUES": ["default", "tasks"], "REDIS_URL": redis_url}):
        assert outbox_warnings() == []


@override_settings(DJQUEUE=OUTBOX)
def test_database_check_warns_about_an_old_row(db):
    OutboxJob.objects.using(db).create(jid="x", payload="{}", created_at=time.time() - 120)
    found = [m for m in checks.run_checks(tags=["djqueue", "database"], databases=DATABASES)]
    (warning,) = [m for m in found if m.id == "djqueue.W005"]
    assert "1 job(s), the oldest 12" in warning.msg


@override_settings(DJQUEUE=OUTBOX)
def test_admin_dashboard_and_djqueue_stats_show_the_outbox(admin_client, r, redis_url):
    OutboxJob.objects.create(jid="x", payload="{}", created_at=time.time() - 42)
    page = admin_client.get("/admin/djqueue/dashboard/").content.decode()
    assert "Outbox" in page and "Oldest outbox row (s)" in page
    live = admin_client.get("/admin/djqueue/dashboard/live/").json()
    assert live["figures"]["outbox"] == "1" and 41 <= int(live["figures"]["outbox_age"]) <= 60
    from djqueue import report
    from djqueue.contrib.django.outbox import relay_duty

    assert "outbox" not in report.stats()  # no relay has published anything yet
    relay_duty()()  # one relay round (the row is a job of nothing: dropped, logged)
    OutboxJob.objects.create(jid="y", payload="{}", created_at=time.time())
    relay_duty()()  # the new row is within the grace period: stays, and is counted
    (line,) = [x for x in report.stats().splitlines() if x.startswith("outbox")]
    assert line.startswith("outbox     1 (oldest ") and "relay 0s ago" in line


def test_a_database_without_the_table_is_not_introspected_on_every_page(monkeypatch):
    """The dashboard asks on every page which databases hold the outbox: a database without
    the table is looked at once, and again after a ``migrate`` (which may have created it)."""
    from django.core.management import call_command

    from djqueue.contrib.django import outbox as django_outbox

    monkeypatch.setattr(django_outbox, "_with_table", set())
    monkeypatch.setattr(django_outbox, "_without_table", {})
    introspection = connections["other"].introspection
    looks = []
    table_names = introspection.table_names
    monkeypatch.setattr(
        introspection, "table_names", lambda *a, **k: looks.append(1) or table_names(*a, **k)
    )
    with connections["other"].schema_editor() as editor:
        editor.delete_model(OutboxJob)
    try:
        for _ in range(3):
            assert [s.name for s in django_outbox.sources()] == ["default"]
        assert len(looks) == 1
    finally:
        with connections["other"].schema_editor() as editor:
            editor.create_model(OutboxJob)
    OutboxJob.objects.using("other").create(jid="x", payload="{}", created_at=time.time())
    call_command("migrate", "djqueue", database="other", verbosity=0)
    looks.clear()  # migrate's own
    assert [s.name for s in django_outbox.sources()] == ["default", "other"]
    assert len(looks) == 1
    assert django_outbox.stats().size == 1
