import json

from django.db import transaction
from django.http import HttpRequest, JsonResponse
from django.shortcuts import get_object_or_404
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST

from .jobs import confirm_order
from .models import Order


@csrf_exempt  # an API endpoint for the demo; a real one would authenticate
@require_POST
def place_order(request: HttpRequest) -> JsonResponse:
    data = json.loads(request.body or b"{}")
    with transaction.atomic():
        order = Order.objects.create(email=data["email"], total_cents=int(data["total_cents"]))
        jid = confirm_order.perform_later(order.pk)  # pushed when this block commits
    return JsonResponse({"order": order.pk, "jid": jid}, status=201)


@require_GET
def order_status(request: HttpRequest, order_id: int) -> JsonResponse:
    order = get_object_or_404(Order, pk=order_id)
    return JsonResponse(
        {
            "order": order.pk,
            "confirmed": order.confirmed_at is not None,
            "confirmed_for_request": order.confirmed_for_request,
        }
    )
