"""The shop's jobs. Discovery imports this module in the web process and in runworker."""

import json
import logging
import urllib.request
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.mail import send_mail
from django.db.models import Count, Sum
from django.utils import timezone

import djqueue
from djqueue import context

from .models import Order

logger = logging.getLogger(__name__)


@djqueue.job(queue="critical", retry=5)
def confirm_order(order_id: int) -> None:
    # The view pushed this job in the transaction that created the row; it was written to
    # Redis only at commit, so the row is always there.
    order = Order.objects.get(pk=order_id)
    order.confirmed_at = timezone.now()
    order.confirmed_for_request = context.request_id() or ""
    order.save(update_fields=["confirmed_at", "confirmed_for_request"])
    logger.info("confirmed order %s for %s", order.pk, order.email)


def _warehouse_retry_in(count: int, exc: BaseException) -> float:
    """Ten seconds between tries: a warehouse that is down is usually back soon, and with one
    retry the job reaches the dead set (where someone looks) within half a minute."""
    return 10.0


@djqueue.job(retry=1, retry_in=_warehouse_retry_in, retention=3600)
def notify_warehouse(order_id: int) -> None:
    order = Order.objects.get(pk=order_id)
    body = json.dumps({"order": order.pk, "total_cents": order.total_cents}).encode()
    request = urllib.request.Request(
        settings.WAREHOUSE_URL, data=body, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=5):  # raises when the warehouse is down
        pass
    logger.info("told the warehouse about order %s", order.pk)


@djqueue.job(retention=3600)
def remind_unconfirmed(order_id: int) -> None:
    # Pushed with perform_in: it waits in the scheduled set until its time comes.
    order = Order.objects.get(pk=order_id)
    if order.confirmed_at is None:
        send_mail("Your order", f"Order {order.pk} is still waiting.", None, [order.email])
    logger.info("checked order %s for a reminder", order.pk)


@djqueue.job(cron="*/10 * * * * *")
def count_unconfirmed() -> None:
    # Periodic: every worker takes part and each tick is pushed exactly once.
    stale = Order.objects.filter(
        confirmed_at=None, created_at__lt=timezone.now() - timedelta(minutes=5)
    ).count()
    logger.info("%s orders waiting for confirmation for more than five minutes", stale)


@djqueue.job(retention=3600)
def sales_report() -> dict[str, Any]:
    # The return value is kept for the retention, for djqueue.result() and the admin.
    totals = Order.objects.aggregate(orders=Count("pk"), total_cents=Sum("total_cents"))
    confirmed = Order.objects.exclude(confirmed_at=None).count()
    return {
        "orders": totals["orders"],
        "confirmed": confirmed,
        "total_cents": totals["total_cents"] or 0,
    }
