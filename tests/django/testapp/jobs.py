"""Jobs the tests push; found by discovery (nothing imports this module by hand)."""

from __future__ import annotations

import json
import logging

from django.utils import translation

import djqueue
from djqueue import context
from djqueue.connection import get_redis

from .models import Order

logger = logging.getLogger(__name__)

SEEN = "djqueue-tests:seen"


def record(kind: str, **values: object) -> None:
    """Jobs report what they saw through a Redis list the test reads."""
    get_redis().rpush(SEEN, json.dumps({"kind": kind, **values}))


@djqueue.job
def mark_order(order_id: int) -> None:
    order = Order.objects.get(pk=order_id)
    order.seen_by_job = True
    order.save(update_fields=["seen_by_job"])
    record("order", order_id=order_id, name=order.name)


@djqueue.job
async def mark_order_async(order_id: int) -> None:
    """mark_order with Django's async ORM, on the worker's event loop."""
    order = await Order.objects.aget(pk=order_id)
    order.seen_by_job = True
    await order.asave(update_fields=["seen_by_job"])
    record("async-order", order_id=order_id, name=order.name)


@djqueue.job
def mark_order_in(database: str, order_id: int) -> None:
    """mark_order for a row in any database (the outbox tests run on both)."""
    order = Order.objects.using(database).get(pk=order_id)
    Order.objects.using(database).filter(pk=order_id).update(seen_by_job=True)
    record("order", order_id=order_id, name=order.name, database=database)


@djqueue.job
def note(number: int) -> None:
    """Reports its number: the outbox tests count how often each job ran."""
    record("note", number=number, jid=djqueue.current_job()["jid"])


@djqueue.job
def report_context(label: str) -> None:
    logger.info("reporting %s", label)
    record(
        "context",
        label=label,
        request_id=context.request_id(),
        user_id=context.user_id(),
        language=translation.get_language(),
    )


@djqueue.job
def count_orders() -> int:
    return Order.objects.count()
