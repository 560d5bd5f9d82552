"""djqueue's pages in the Django admin: dashboard, queues, scheduled, retries, dead, batches,
periodic, busy, metrics, limits.

Each tab of `djqueue.web.pages` is a `PageAdmin` registered for one of the unmanaged models in
`models`, so it shows in the admin's index and sidebar like any model. Its URLs are the page
table's routes of that tab, each wrapped in ``admin_site.admin_view`` (active staff only, CSRF
on every POST, never cached) around the one view of `views`.

Sites with their own ``AdminSite`` register the same classes there::

    from djqueue.contrib.django.admin import register
    register(my_site)
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest
from django.urls import URLPattern, path

from djqueue.web.pages import ROUTES, TABS

from . import models, views
from .app_order import dashboard_first

#: The tab of each admin model.
TAB_OF_MODEL = {tab.model: tab.name for tab in TABS}


class PageAdmin(admin.ModelAdmin):
    """One djqueue tab. Permissions are djqueue's (``djqueue.view_job``, ``change_job``,
    ``delete_job``), whichever page model they are asked about."""

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return bool(request.user.has_perm("djqueue.view_job"))

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return bool(request.user.has_perm("djqueue.change_job"))

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return bool(request.user.has_perm("djqueue.delete_job"))

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_module_permission(self, request: HttpRequest) -> bool:
        return self.has_view_permission(request)

    def get_model_perms(self, request: HttpRequest) -> dict[str, bool]:
        """What the admin index offers: a "View" link (actions live on the pages)."""
        return {
            "add": False,
            "change": False,
            "delete": False,
            "view": self.has_view_permission(request),
        }

    def get_urls(self) -> list[URLPattern]:
        tab = TAB_OF_MODEL[self.opts.model_name]
        return [
            path(
                views.django_path(route),
                self.admin_site.admin_view(views.view(self, route)),
                name=views.url_name(route),
            )
            for route in ROUTES
            if route.tab == tab
        ]


PAGES = (
    models.Dashboard,
    models.Queue,
    models.ScheduledJob,
    models.RetryJob,
    models.DeadJob,
    models.Batch,
    models.PeriodicJob,
    models.Busy,
    models.Metrics,
    models.Limits,
)


def register(site: admin.AdminSite) -> None:
    """Add djqueue's pages to an admin site (the default site gets them automatically)."""
    for model in PAGES:
        site.register(model, PageAdmin)
    dashboard_first(site)


register(admin.site)
