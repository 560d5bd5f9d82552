"""The django.tasks backend inside a `djqueue.Batch`: a task enqueued in the block joins the
batch as a job pushed by ``perform_later`` would, since both go through the client's one push
(`djqueue.client.Client.push`), where the batch collects its jobs."""

from __future__ import annotations

import json

import pytest

import djqueue
from djqueue.api import Batch
from djqueue.store import Keys
from tests.django.conftest import queued
from tests.django.testapp.tasks import add_order

pytestmark = pytest.mark.django_db(transaction=True)


@djqueue.job(name="tasks_batch.plain")
def plain(n: int) -> None:
    pass


def test_a_task_enqueued_inside_a_batch_joins_it(r):
    with djqueue.Batch(description="orders") as batch:
        result = add_order.enqueue("book")
        jid = plain.perform_later(1)
    payloads = {p["jid"]: p for p in queued(r)}
    assert set(payloads) == {result.id, jid}
    assert {p.get("bid") for p in payloads.values()} == {batch.bid}
    state = Batch(batch.bid).state()
    assert state is not None and state.description == "orders"
    assert (state.total, state.pending) == (2, 2)
    assert sorted(state.pending_jids) == sorted([result.id, jid])
    assert r.zscore(Keys().batches, batch.bid) is not None
    assert json.loads(r.hget(Keys().batch(batch.bid), "total")) == 2
