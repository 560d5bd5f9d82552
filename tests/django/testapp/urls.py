from django.contrib import admin
from django.urls import include, path

from . import views

urlpatterns = [
    path("orders/", views.create_order),
    path("orders/outbox/", views.create_order_outbox),
    path("context/", views.push_context),
    path("admin/", admin.site.urls),
    path("djqueue/", include("djqueue.urls")),
]
