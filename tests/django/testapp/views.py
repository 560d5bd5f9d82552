from __future__ import annotations

import threading

from django.db import transaction
from django.http import HttpRequest, JsonResponse

from .jobs import mark_order, mark_order_in, report_context
from .models import Order
from .tasks import shout


def create_order(request: HttpRequest) -> JsonResponse:
    """Creates a row and pushes a job about it in one transaction."""
    with transaction.atomic():
        order = Order.objects.create(name=request.POST.get("name", "order"))
        jid = mark_order.perform_later(order.pk)
    return JsonResponse({"id": order.pk, "jid": jid})


def push_context(request: HttpRequest) -> JsonResponse:
    jid = report_context.perform_later(request.GET.get("label", "view"))
    return JsonResponse({"jid": jid, "request_id": request.request_id})  # type: ignore[attr-defined]


def create_order_outbox(request: HttpRequest) -> JsonResponse:
    """create_order through the outbox, in the database named by ``db``."""
    database = request.POST.get("db", "default")
    with transaction.atomic(using=database):
        order = Order.objects.using(database).create(name=request.POST.get("name", "order"))
        jid = mark_order_in.set(outbox=True, using=database).perform_later(database, order.pk)
    return JsonResponse({"id": order.pk, "jid": jid})


async def enqueue_from_async(request: HttpRequest) -> JsonResponse:
    """An async view enqueueing a task (``aenqueue``); says which thread it ran on."""
    result = await shout.aenqueue(request.GET.get("text", "hi"))
    enqueued = result.enqueued_at.isoformat() if result.enqueued_at else None
    return JsonResponse({"id": result.id, "thread": threading.get_ident(), "enqueued": enqueued})


async def result_from_async(request: HttpRequest, result_id: str) -> JsonResponse:
    """An async view reading a task's result (``aget_result``)."""
    result = await shout.aget_result(result_id)
    value = result.return_value if result.status == "SUCCESSFUL" else None
    return JsonResponse({"status": str(result.status), "value": value, "args": result.args})
