"""The Django mount of `djqueue.web`: one view per route of the page table, in the admin's frame.

Every view is reached through ``admin_site.admin_view`` (see `admin`), so only active staff
get here and every POST passed Django's CSRF check. Seeing needs ``djqueue.view_job``; an action
needs the permission it names (``change_job``, ``delete_job``). The handler's answer becomes a
response here: a page body (drawn by Jinja) inside ``djqueue/admin/frame.html``, which extends
the admin's ``base_site.html``; a message and a redirect; JSON; a file.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import django
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.middleware.csrf import get_token
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import timezone, translation
from django.utils.safestring import mark_safe
from markupsafe import Markup, escape

from djqueue.outbox import OutboxStats
from djqueue.web import forms
from djqueue.web.pages import ROUTE, TAB, Route, nav, serve
from djqueue.web.render import draw
from djqueue.web.results import (
    File,
    Json,
    Mount,
    NotFound,
    Redirect,
    Render,
    Result,
    WebRequest,
)

if TYPE_CHECKING:
    from .admin import PageAdmin

#: Django 6 marks breadcrumbs up as a list and puts a changelist's filters first; 5.2 not.
DJANGO_6 = django.VERSION >= (6, 0)
MOUNT = Mount(
    redis_setting='DJQUEUE["REDIS_URL"]',
    worker_command="python manage.py runworker",
    periodic_setting='DJQUEUE["PERIODIC"]',
    layout="sidebar-first" if DJANGO_6 else "sidebar-last",
)


def django_path(route: Route) -> str:
    """The route below its model's admin URL."""
    return f"{route.path}/" if route.path and route.slash else route.path


def url_name(route: Route) -> str:
    """``djqueue_<model>_changelist`` for a tab's own page (what the admin index links to)."""
    return f"djqueue_{TAB[route.tab].model}_{route.name if route.path else 'changelist'}"


def url(site: str, route: str, /, **arguments: Any) -> str:
    return reverse(f"{site}:{url_name(ROUTE[route])}", kwargs=arguments)


def _outbox() -> OutboxStats | None:
    """The outbox's figures (rows in the database, not Redis) when the project chose the
    outbox, or when rows wait (jobs kept because Redis was down at commit)."""
    from .outbox import outbox_chosen, relay_enabled, stats

    found = stats() if relay_enabled() else None
    return found if found is not None and (found.size or outbox_chosen()) else None


def view(page: PageAdmin, route: Route) -> Callable[..., HttpResponse]:
    """The Django view of ``route``, for the `PageAdmin` of its tab."""

    def answer(request: HttpRequest, **arguments: Any) -> HttpResponse:
        if not page.has_view_permission(request):
            raise PermissionDenied
        if request.method not in route.methods:
            return HttpResponse(status=405)
        req = WebRequest(
            method=request.method,
            query=request.GET,
            form=request.POST,
            full_path=request.get_full_path(),
            allowed=lambda permission: _may(page, request, permission),
            url=functools.partial(url, page.admin_site.name),
            mount=MOUNT,
            outbox=_outbox,
            # TIME_ZONE, or the zone a middleware activated for this request.
            zone=timezone.get_current_timezone(),
            # LANGUAGE_CODE, or the language LocaleMiddleware activated for this request.
            language=translation.get_language() or "en",
        )
        try:
            found = serve(route, req, **arguments)
        except forms.Refused:
            raise PermissionDenied from None
        return respond(page, request, req, found)

    answer.__name__ = route.name
    return answer


def _may(page: PageAdmin, request: HttpRequest, permission: str) -> bool:
    if permission == "change":
        return page.has_change_permission(request)
    return permission == "delete" and page.has_delete_permission(request)


def respond(page: PageAdmin, request: HttpRequest, req: WebRequest, found: Result) -> HttpResponse:
    if isinstance(found, Redirect):
        # Django's messages drop an empty one: a redirect without a message shows none.
        (messages.success if found.ok else messages.warning)(request, found.message)
        return HttpResponseRedirect(found.url)
    if isinstance(found, Json):
        return JsonResponse(found.data, status=found.status)
    if isinstance(found, File):
        response = HttpResponse(found.body, content_type=found.content_type)
        response["Cache-Control"] = "private, max-age=3600"
        return response
    if isinstance(found, NotFound):
        raise Http404(found.what)
    return frame(page, request, req, found)


def frame(page: PageAdmin, request: HttpRequest, req: WebRequest, found: Render) -> HttpResponse:
    csrf = Markup('<input type="hidden" name="csrfmiddlewaretoken" value="{}">').format(
        escape(get_token(request))
    )
    context = {
        **page.admin_site.each_context(request),
        "opts": page.opts,
        "title": found.title,
        # Drawn by Jinja with autoescaping on: every value in it is escaped already.
        "body": mark_safe(draw(found, req, csrf)),  # noqa: S308
        "crumbs": found.crumbs,
        "djqueue_nav": nav(req, found.tab),
        "djqueue_asset": req.url("asset", name="djqueue.css"),
        "change_list": found.template.endswith("_list.html"),
        "django_6": DJANGO_6,
    }
    return TemplateResponse(request, "djqueue/admin/frame.html", context, status=found.status)
