"""djqueue.testing's fake and inline modes in Django tests: pushes held for commit behave as in
production, so a TestCase sees them only through captureOnCommitCallbacks."""

from __future__ import annotations

import pytest
from django.db import transaction
from django.test import TestCase

from djqueue import testing
from tests.django.testapp.jobs import mark_order
from tests.django.testapp.models import Order


class FakeModeInTestCase(TestCase):
    def setUp(self) -> None:
        self.mode = testing.fake()
        self.addCleanup(self.mode.__exit__)
        testing.clear_all()

    def test_a_push_is_recorded_when_the_transaction_would_commit(self) -> None:
        response_order = Order.objects.create(name="t")
        with self.captureOnCommitCallbacks(execute=True) as callbacks:
            jid = mark_order.perform_later(response_order.pk)
            self.assertEqual(mark_order.jobs, [])
        self.assertEqual(len(callbacks), 1)
        self.assertEqual([j["jid"] for j in mark_order.jobs], [jid])

    def test_without_executing_the_callbacks_nothing_is_recorded(self) -> None:
        with self.captureOnCommitCallbacks(execute=False):
            mark_order.perform_later(1)
        self.assertEqual(mark_order.jobs, [])

    def test_the_view_pushes_at_commit(self) -> None:
        with self.captureOnCommitCallbacks(execute=True):
            order_id = self.client.post("/orders/", {"name": "v"}).json()["id"]
        (payload,) = mark_order.jobs
        self.assertEqual(payload["args"], [order_id])
        self.assertEqual(mark_order.jobs.drain(), 1)
        self.assertTrue(Order.objects.get(pk=order_id).seen_by_job)


class InlineModeInTestCase(TestCase):
    def test_the_job_runs_at_commit_inside_the_test_transaction(self) -> None:
        with testing.inline():
            order = Order.objects.create(name="i")
            with self.captureOnCommitCallbacks(execute=True):
                mark_order.perform_later(order.pk)
                order.refresh_from_db()
                self.assertFalse(order.seen_by_job)
            order.refresh_from_db()
            self.assertTrue(order.seen_by_job)


@pytest.mark.django_db
def test_pytest_django_fake_fixture(djqueue_fake, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        mark_order.perform_later(5)
        assert djqueue_fake.jobs == []
    assert [j["args"] for j in djqueue_fake.jobs_for(mark_order)] == [[5]]


@pytest.mark.django_db(transaction=True)
def test_pytest_django_inline_fixture_in_a_real_transaction(djqueue_inline):
    with transaction.atomic():
        order = Order.objects.create(name="p")
        mark_order.perform_later(order.pk)
        order.refresh_from_db()
        assert not order.seen_by_job
    order.refresh_from_db()
    assert order.seen_by_job
