from accounts import views as accounts
from django.contrib import admin
from django.urls import path
from orders import views as orders

urlpatterns = [
    path("", accounts.home),
    path("signup/", accounts.signup),
    path("welcome/", accounts.welcome, name="welcome"),
    path("orders/", orders.place_order),
    path("orders/<int:order_id>/", orders.order_status),
    path("admin/", admin.site.urls),
]
