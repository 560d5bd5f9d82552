from django.contrib import admin
from django.urls import include, path

from . import views

urlpatterns = [
    path("orders/", views.create_order),
    path("orders/outbox/", views.create_order_outbox),
    path("context/", views.push_context),
    path("tasks/async/", views.enqueue_from_async),
    path("tasks/async/<str:result_id>/", views.result_from_async),
    path("admin/", admin.site.urls),
    path("djqueue/", include("djqueue.urls")),
]
