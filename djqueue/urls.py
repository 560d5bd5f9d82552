"""djqueue's own URLs for a Django project: ``path("djqueue/", include("djqueue.urls"))``
serves the Prometheus exposition at ``djqueue/metrics``
(`djqueue.contrib.django.metrics_view`)."""

from django.urls import path

from .contrib.django.metrics_view import metrics

app_name = "djqueue"
urlpatterns = [path("metrics", metrics, name="metrics")]
