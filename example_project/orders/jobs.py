"""The shop's jobs. Discovery imports this module in the web process and in runworker."""

import logging

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
