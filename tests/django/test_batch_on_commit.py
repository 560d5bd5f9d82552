"""A `djqueue.Batch` inside a transaction with enqueue-on-commit: its jobs wait for the commit
and create their batch when they are written; a rollback leaves neither jobs nor batch."""

from __future__ import annotations

import pytest
from django.db import transaction

import djqueue
from tests.django.conftest import queued
from tests.django.testapp.jobs import count_orders, mark_order

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_batch_is_written_with_its_jobs_at_the_commit(r):
    with transaction.atomic():
        with djqueue.Batch(description="orders", on_success=count_orders.s()) as batch:
            mark_order.perform_bulk([[1], [2]])
        assert queued(r) == [] and batch.status() is None  # nothing before the commit
    jobs = queued(r)
    assert {job["bid"] for job in jobs} == {batch.bid} and len(jobs) == 2
    state = batch.status()
    assert state is not None and state.total == 2 and not state.complete


def test_a_rollback_leaves_no_batch(r):
    with pytest.raises(ValueError), transaction.atomic():
        with djqueue.Batch(on_success=count_orders.s()) as batch:
            mark_order.perform_later(1)
        raise ValueError("roll back")
    assert queued(r) == [] and batch.status() is None
    assert r.zcard("djqueue:batches") == 0


def test_a_batch_through_the_outbox_row_is_created_when_the_row_is_pushed(r):
    """The definition travels in the row (the payload as it will be pushed) and is taken out
    when the row's job is written."""
    from djqueue.contrib.django.models import OutboxJob

    with transaction.atomic():
        with djqueue.Batch(on_success=count_orders.s()) as batch:
            mark_order.set(outbox=True).perform_later(1)
        (row,) = OutboxJob.objects.all()
        assert "djqueue_batch" in row.payload
    (job,) = queued(r)
    assert job["bid"] == batch.bid and "djqueue_batch" not in job
    assert batch.status().total == 1 and not OutboxJob.objects.exists()
