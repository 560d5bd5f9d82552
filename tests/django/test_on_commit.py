"""Enqueue on commit, on a real database and a real Redis (a redis-server of the test's own
where Redis must be down)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest
from django.db import DatabaseError, connection, transaction
from django.test import override_settings

import djqueue
from djqueue import outbox
from djqueue.contrib.django.models import OutboxJob
from djqueue.contrib.django.outbox import DatabaseSource
from djqueue.errors import RedisUnavailable
from tests.django.conftest import queued
from tests.django.testapp.jobs import count_orders, mark_order
from tests.django.testapp.models import Order
from tests.redis_server import RedisServer

pytestmark = pytest.mark.django_db(transaction=True)


def test_commit_pushes_and_the_jid_is_known_at_call_time(r):
    with transaction.atomic():
        order = Order.objects.create(name="a")
        jid = mark_order.perform_later(order.pk)
        assert len(jid) == 24
        assert queued(r) == []
    jobs = queued(r)
    assert [(j["jid"], j["class"], j["args"]) for j in jobs] == [
        (jid, "tests.django.testapp.jobs.mark_order", [order.pk])
    ]
    assert "on_commit" not in jobs[0] and "using" not in jobs[0]


def test_rollback_does_not_push(r):
    with pytest.raises(ValueError):
        with transaction.atomic():
            mark_order.perform_later(1)
            raise ValueError("roll back")
    assert queued(r) == []
    assert r.exists("queues") == 0


def test_nested_blocks_push_once_at_the_outermost_commit(r):
    with transaction.atomic():
        with transaction.atomic():
            jid = mark_order.perform_later(1)
        assert queued(r) == []
        with transaction.atomic():
            count_orders.perform_later()
        assert queued(r) == []
    assert [j["class"].rsplit(".", 1)[1] for j in queued(r)] == ["mark_order", "count_orders"]
    assert queued(r)[0]["jid"] == jid


def test_a_rolled_back_savepoint_drops_only_its_own_jobs(r):
    with transaction.atomic():
        mark_order.perform_later(1)
        try:
            with transaction.atomic():
                mark_order.perform_later(2)
                raise ValueError
        except ValueError:
            pass
        mark_order.perform_later(3)
    assert [j["args"] for j in queued(r)] == [[1], [3]]


def test_outside_a_transaction_it_pushes_at_once(r):
    jid = mark_order.perform_later(7)
    assert [j["jid"] for j in queued(r)] == [jid]


def test_on_commit_false_pushes_inside_the_block(r):
    with transaction.atomic():
        jid = mark_order.set(on_commit=False).perform_later(1)
        assert [j["jid"] for j in queued(r)] == [jid]
    assert "on_commit" not in queued(r)[0]


@override_settings(DJQUEUE={"ENQUEUE_ON_COMMIT": False})
def test_setting_off_pushes_inside_the_block(r):
    with transaction.atomic():
        mark_order.perform_later(1)
        assert len(queued(r)) == 1


def test_perform_in_and_perform_at_wait_for_commit_too(r):
    with transaction.atomic():
        mark_order.perform_in(3600, 1)
        mark_order.perform_at(4102444800, 2)
        assert r.zcard("schedule") == 0
    assert r.zcard("schedule") == 2


def test_perform_bulk_waits_and_is_written_in_one_batch(r):
    written = []
    from djqueue.client import Client

    real = Client.raw_push

    def spy(self, payloads):
        written.append(len(payloads))
        return real(self, payloads)

    Client.raw_push = spy
    try:
        with transaction.atomic():
            jids = mark_order.perform_bulk([[i] for i in range(250)], batch_size=100)
            assert len(jids) == 250
            assert written == [] and queued(r) == []
    finally:
        Client.raw_push = real
    assert [j["jid"] for j in queued(r)] == jids
    assert written == [100, 100, 50]


@pytest.mark.django_db(transaction=True, databases=["default", "other"])
def test_using_names_the_database_whose_commit_counts(r):
    with transaction.atomic():
        mark_order.set(using="other").perform_later(1)  # no block open on "other"
        assert len(queued(r)) == 1
    with transaction.atomic(using="other"):
        with transaction.atomic():
            mark_order.set(using="other").perform_later(2)
        assert len(queued(r)) == 1  # "default" committed; "other" has not
    assert [j["args"] for j in queued(r)] == [[1], [2]]


@pytest.mark.django_db(transaction=True, databases=["default", "other"])
def test_without_using_it_waits_for_every_open_transaction(r):
    with transaction.atomic(using="other"):
        with transaction.atomic():
            mark_order.perform_later(1)
        assert queued(r) == []
    assert len(queued(r)) == 1
    with pytest.raises(ValueError):
        with transaction.atomic(using="other"):
            with transaction.atomic():
                mark_order.perform_later(2)
            raise ValueError
    assert [j["args"] for j in queued(r)] == [[1]]


@pytest.fixture
def stopped_redis() -> Iterator[RedisServer]:
    """djqueue configured on a real redis-server that is then stopped (started again by the
    test when Redis comes back, empty, on the same port)."""
    own = RedisServer().start()
    djqueue.configure(redis_url=own.url)
    own.stop()
    yield own
    own.close()


def test_redis_down_at_commit_keeps_the_jobs_in_the_outbox(client, stopped_redis):
    response = client.post("/orders/", {"name": "kept"})
    assert response.status_code == 200  # the view does not fail once its data committed
    with transaction.atomic():
        Order.objects.create(name="later")
        later = mark_order.perform_in(3600, 2)
    order = Order.objects.get(pk=response.json()["id"])
    kept = list(OutboxJob.objects.order_by("pk"))
    assert [row.jid for row in kept] == [response.json()["jid"], later]
    assert json.loads(kept[0].payload)["args"] == [order.pk]
    assert kept[1].run_at is not None and kept[1].run_at > time.time() + 3500
    stopped_redis.start()  # Redis is back: a worker's relay pushes them
    while outbox.relay_round(DatabaseSource("default"), grace=0):
        pass
    r = stopped_redis.client()
    assert [j["jid"] for j in queued(r)] == [response.json()["jid"]]
    assert [json.loads(m)["jid"] for m in r.zrange("schedule", 0, -1)] == [later]
    assert not OutboxJob.objects.exists()


@pytest.mark.django_db(transaction=True, databases=["default", "other"])
def test_a_push_waiting_for_two_databases_is_kept_in_the_first_with_the_table(stopped_redis):
    with transaction.atomic(using="other"):
        with transaction.atomic():
            jid = mark_order.perform_later(1)
    assert [row.jid for row in OutboxJob.objects.using("default")] == [jid]
    assert not OutboxJob.objects.using("other").exists()


@pytest.fixture
def without_outbox_table() -> Iterator[None]:
    """The default database as a project that never ran ``migrate djqueue`` has it."""
    with connection.schema_editor() as editor:
        editor.delete_model(OutboxJob)
    yield
    with connection.schema_editor() as editor:
        editor.create_model(OutboxJob)


def test_redis_down_at_commit_without_the_outbox_table_says_to_migrate(
    stopped_redis, without_outbox_table
):
    with pytest.raises(RedisUnavailable, match=r"run `python manage.py migrate djqueue`"):
        with transaction.atomic():
            Order.objects.create(name="kept")
            mark_order.perform_later(1)
    assert Order.objects.filter(name="kept").exists()


def test_the_outbox_without_its_table_says_to_migrate(r, without_outbox_table):
    with pytest.raises(DatabaseError) as raised, transaction.atomic():
        mark_order.set(outbox=True).perform_later(1)
    assert "run `python manage.py migrate djqueue`" in "\n".join(raised.value.__notes__)


@pytest.mark.django_db(transaction=False)
def test_test_case_semantics_with_capture_on_commit_callbacks(
    r, django_capture_on_commit_callbacks
):
    # pytest-django's non-transactional tests run inside a transaction, like TestCase.
    jid = mark_order.perform_later(1)
    assert queued(r) == []
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        other = mark_order.perform_later(2)
    assert len(callbacks) == 1
    assert [j["jid"] for j in queued(r)] == [other]
    assert jid != other


def test_a_model_instance_as_argument_gets_a_hint(r):
    order = Order(name="not saved", pk=7)
    with pytest.raises(TypeError, match=r"pass its primary key \(e.g. user.pk\)"):
        mark_order.perform_later(order)


def test_a_unique_job_held_for_the_commit_is_skipped_then_if_its_lock_is_held(r):
    once = mark_order.set(unique_for=60)
    with transaction.atomic():
        first = once.perform_later(1)
        second = once.perform_later(1)  # the jid at once: the lock is taken at the commit
        assert first and second and queued(r) == []
    assert [job["jid"] for job in queued(r)] == [first]
    assert once.perform_later(1) is None  # outside a transaction: skipped at once
