"""djqueue's pages in the Django admin: dashboard, queues, scheduled, retries, dead, periodic,
busy.

Each page is a `PageAdmin` registered for one of the unmanaged models in `models`, so it shows
in the admin's index and sidebar like any model, and its URLs are wrapped in
``admin_site.admin_view`` (active staff only, CSRF on every POST, never cached). What a page
shows is computed by `djqueue.web`; the views in `views` only check permissions, call it, and
render templates that extend the admin's own.

Sites with their own ``AdminSite`` register the same classes there::

    from djqueue.contrib.django.admin import register
    register(my_site)
"""

from __future__ import annotations

import functools
from typing import Any

from django.contrib import admin
from django.http import HttpRequest, HttpResponse
from django.urls import URLPattern, path
from django.utils import timezone

from djqueue.errors import BadKey, RedisUnavailable
from djqueue.web import display

from . import models, views
from .app_order import dashboard_first

#: The admin's model name of each list page, and the `djqueue.web.lists` kind it shows.
KINDS = {"scheduledjob": "scheduled", "retryjob": "retries", "deadjob": "dead"}


class PageAdmin(admin.ModelAdmin):
    """One djqueue page. Permissions are djqueue's (``djqueue.view_job``, ``change_job``,
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

    def url_name(self, suffix: str) -> str:
        return f"{self.opts.app_label}_{self.opts.model_name}_{suffix}"

    def get_urls(self) -> list[URLPattern]:
        def wrap(view: Any) -> Any:
            return self.admin_site.admin_view(self._redis_errors(view))

        return [
            path("", wrap(self.changelist_view), name=self.url_name("changelist")),
            *[
                path(route, wrap(view), name=self.url_name(name))
                for route, view, name in self.pages()
            ],
        ]

    def pages(self) -> list[tuple[str, Any, str]]:
        """Further ``(route, view, name suffix)`` of this page."""
        return []

    def _redis_errors(self, view: Any) -> Any:
        """``view``, answering the 503 page when Redis does not answer (every page reads it),
        its times shown in the site's time zone."""

        @functools.wraps(view)
        def answer(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            try:
                # Times read in the site's zone: TIME_ZONE, or the one a middleware activated.
                with display.in_zone(timezone.get_current_timezone()):
                    return view(request, *args, **kwargs)
            except RedisUnavailable as exc:
                return views.unavailable(self, request, exc)
            except BadKey as exc:
                return views.bad_key(self, request, exc)

        return answer


class DashboardAdmin(PageAdmin):
    def changelist_view(self, request: HttpRequest, extra_context: Any = None) -> HttpResponse:
        return views.dashboard(self, request)

    def live_view(self, request: HttpRequest) -> HttpResponse:
        return views.dashboard_live(self, request)

    def asset_view(self, request: HttpRequest, name: str) -> HttpResponse:
        return views.asset(self, request, name)

    def pages(self) -> list[tuple[str, Any, str]]:
        return [
            ("live/", self.live_view, "live"),
            ("assets/<str:name>", self.asset_view, "asset"),
            ("job/", self.status_view, "status"),
        ]

    def status_view(self, request: HttpRequest) -> HttpResponse:
        return views.job_status(self, request)


class QueueAdmin(PageAdmin):
    def changelist_view(self, request: HttpRequest, extra_context: Any = None) -> HttpResponse:
        return views.queues(self, request)

    def jobs_view(self, request: HttpRequest, name: str) -> HttpResponse:
        return views.job_list(self, request, "queue", name)

    def job_view(self, request: HttpRequest, name: str, key: str) -> HttpResponse:
        return views.job(self, request, "queue", key, name)

    def pages(self) -> list[tuple[str, Any, str]]:
        return [
            ("<path:name>/job/<path:key>/", self.job_view, "job"),
            ("<path:name>/", self.jobs_view, "jobs"),
        ]


class JobSetAdmin(PageAdmin):
    """Scheduled, retries or dead: a list, and a page per job."""

    @property
    def kind(self) -> str:
        return KINDS[self.opts.model_name]

    def changelist_view(self, request: HttpRequest, extra_context: Any = None) -> HttpResponse:
        return views.job_list(self, request, self.kind)

    def job_view(self, request: HttpRequest, key: str) -> HttpResponse:
        return views.job(self, request, self.kind, key)

    def pages(self) -> list[tuple[str, Any, str]]:
        return [("<path:key>/", self.job_view, "job")]


class PeriodicAdmin(PageAdmin):
    """The periodic jobs (sidekiq-cron's "Cron" tab), and a page per entry."""

    def changelist_view(self, request: HttpRequest, extra_context: Any = None) -> HttpResponse:
        return views.periodic(self, request)

    def entry_view(self, request: HttpRequest, name: str) -> HttpResponse:
        return views.periodic_entry(self, request, name)

    def pages(self) -> list[tuple[str, Any, str]]:
        return [("<path:name>/", self.entry_view, "entry")]


class BusyAdmin(PageAdmin):
    def changelist_view(self, request: HttpRequest, extra_context: Any = None) -> HttpResponse:
        return views.busy(self, request)


PAGES: dict[type, type[PageAdmin]] = {
    models.Dashboard: DashboardAdmin,
    models.Queue: QueueAdmin,
    models.ScheduledJob: JobSetAdmin,
    models.RetryJob: JobSetAdmin,
    models.DeadJob: JobSetAdmin,
    models.PeriodicJob: PeriodicAdmin,
    models.Busy: BusyAdmin,
}


def register(site: admin.AdminSite) -> None:
    """Add djqueue's pages to an admin site (the default site gets them automatically)."""
    for model, model_admin in PAGES.items():
        site.register(model, model_admin)
    dashboard_first(site)


register(admin.site)
