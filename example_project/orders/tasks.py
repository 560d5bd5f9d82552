"""Work written for Django's Tasks framework; the TASKS setting hands it to djqueue's workers."""

from django.core.mail import send_mail
from django.tasks import task

from .models import Order


@task()
def send_receipt(order_id: int) -> str:
    order = Order.objects.get(pk=order_id)
    send_mail(
        "Your receipt",
        f"Order {order.pk}: {order.total_cents / 100:.2f}",
        None,
        [order.email],
    )
    return order.email
