"""The admin views: permission checks, `djqueue.web` for the content, admin templates.

Every view is reached through ``admin_site.admin_view`` (see `admin`), so only active staff
get here and every POST passed Django's CSRF check. Seeing needs ``djqueue.view_job``; an action
needs the permission its `djqueue.web.actions.Action` names. Changes are POST, answered with a
message and a redirect (so a reload does not repeat them); an action on every job of a list
first asks "Retry all 12,345 jobs?".
"""

from __future__ import annotations

from importlib import resources
from typing import TYPE_CHECKING, Any

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseRedirect,
    JsonResponse,
)
from django.template.response import TemplateResponse
from django.urls import reverse

from djqueue.errors import RedisUnavailable
from djqueue.web import busy as web_busy
from djqueue.web import queues as web_queues
from djqueue.web.actions import Action, find_action, run
from djqueue.web.dashboard import POLL_CHOICES, poll_interval
from djqueue.web.dashboard import dashboard as read_dashboard
from djqueue.web.job import job_page
from djqueue.web.lists import job_list as read_list
from djqueue.web.query import ListQuery

if TYPE_CHECKING:
    from .admin import PageAdmin

#: The pages in the order of the admin's djqueue tab bar: label, model name.
NAV = (
    ("Dashboard", "dashboard"),
    ("Queues", "queue"),
    ("Scheduled", "scheduledjob"),
    ("Retries", "retryjob"),
    ("Dead", "deadjob"),
    ("Busy", "busy"),
)
#: Model name of each list kind's page.
MODEL = {"queue": "queue", "scheduled": "scheduledjob", "retries": "retryjob", "dead": "deadjob"}
#: Files `asset` serves from `djqueue.web`'s static folder, with their content types.
ASSETS = {"dashboard.js": "text/javascript", "djqueue.css": "text/css"}


def url(page: PageAdmin, model: str, suffix: str = "changelist", *args: Any) -> str:
    return reverse(f"{page.admin_site.name}:djqueue_{model}_{suffix}", args=args)


def render(
    page: PageAdmin, request: HttpRequest, template: str, title: str, **values: Any
) -> TemplateResponse:
    """A page in the admin's frame, with djqueue's tab bar."""
    current = page.opts.model_name
    status = values.pop("status", 200)
    context = {
        **page.admin_site.each_context(request),
        "opts": page.opts,
        "title": title,
        "djqueue_nav": [(label, url(page, model), model == current) for label, model in NAV],
        "djqueue_asset": url(page, "dashboard", "asset", "djqueue.css"),
        "has_change": page.has_change_permission(request),
        "has_delete": page.has_delete_permission(request),
        **values,
    }
    return TemplateResponse(request, f"djqueue/admin/{template}", context, status=status)


def _need(page: PageAdmin, request: HttpRequest, permission: str = "view") -> None:
    allowed = {
        "view": page.has_view_permission,
        "change": page.has_change_permission,
        "delete": page.has_delete_permission,
    }[permission](request)
    if not allowed:
        raise PermissionDenied


def _unavailable(page: PageAdmin, request: HttpRequest, error: RedisUnavailable) -> HttpResponse:
    return render(
        page, request, "unavailable.html", "Redis is unavailable", error=error, status=503
    )


# -- dashboard --------------------------------------------------------------------------------


def dashboard(page: PageAdmin, request: HttpRequest) -> HttpResponse:
    _need(page, request)
    try:
        found = read_dashboard()
    except RedisUnavailable as exc:
        return _unavailable(page, request, exc)
    links = {kind: url(page, MODEL[kind]) for kind in ("scheduled", "retries", "dead")}
    links.update(queues=url(page, "queue"), busy=url(page, "busy"))
    return render(
        page,
        request,
        "dashboard.html",
        "djqueue dashboard",
        dashboard=found,
        figure_links=[(f, links.get(f.link, "")) for f in found.figures],
        poll=poll_interval(request.GET.get("poll")),
        poll_choices=POLL_CHOICES,
        live_url=url(page, "dashboard", "live"),
        script_url=url(page, "dashboard", "asset", "dashboard.js"),
    )


def dashboard_live(page: PageAdmin, request: HttpRequest) -> HttpResponse:
    _need(page, request)
    try:
        return JsonResponse(read_dashboard().live())
    except RedisUnavailable as exc:
        return JsonResponse({"error": str(exc)}, status=503)


def asset(page: PageAdmin, request: HttpRequest, name: str) -> HttpResponse:
    """The dashboard's script and the pages' stylesheet, shared with the Flask dashboard."""
    if name not in ASSETS:
        raise Http404(name)
    body = resources.files("djqueue.web").joinpath(f"static/{name}").read_bytes()
    response = HttpResponse(body, content_type=ASSETS[name])
    response["Cache-Control"] = "private, max-age=3600"
    return response


# -- queues -----------------------------------------------------------------------------------


def queues(page: PageAdmin, request: HttpRequest) -> HttpResponse:
    _need(page, request)
    if request.method == "POST":
        _need(page, request, "delete")
        name = request.POST.get("queue", "")
        if request.POST.get("confirm") != "yes":
            size = web_queues.Queue(name).size
            return render(
                page,
                request,
                "confirm.html",
                "Are you sure?",
                question=f"Clear queue {name}: delete all {size:,} of its jobs?",
                fields={"queue": name},
                back=url(page, "queue"),
            )
        messages.success(request, web_queues.clear(name))
        return HttpResponseRedirect(url(page, "queue"))
    try:
        rows = web_queues.queues_page()
    except RedisUnavailable as exc:
        return _unavailable(page, request, exc)
    links = [(row, url(page, "queue", "jobs", row.name)) for row in rows]
    return render(page, request, "queues.html", "Queues", rows=links)


# -- lists and jobs ---------------------------------------------------------------------------


def job_list(page: PageAdmin, request: HttpRequest, kind: str, name: str = "") -> HttpResponse:
    _need(page, request)
    params = ListQuery.parse(request.GET)
    if request.method == "POST":
        return _list_action(page, request, kind, name, params)
    try:
        found = read_list(kind, params, queue=name)
    except RedisUnavailable as exc:
        return _unavailable(page, request, exc)
    model = MODEL[kind]
    job_urls = [
        url(page, model, "job", *((name, row.key) if kind == "queue" else (row.key,)))
        for row in found.rows
    ]
    allowed = _allowed(page, request, found.actions)
    return render(
        page,
        request,
        "job_list.html",
        found.title,
        list=found,
        rows=list(zip(found.rows, job_urls, strict=True)),
        allowed_actions=allowed,
        list_url=request.get_full_path(),
        clear_url=url(page, "queue") if kind == "queue" else "",
    )


def _list_action(
    page: PageAdmin, request: HttpRequest, kind: str, name: str, params: ListQuery
) -> HttpResponse:
    back = request.get_full_path()
    try:
        action = find_action(kind, request.POST.get("action", ""))
    except ValueError:
        messages.warning(request, "No action was chosen. Nothing was changed.")
        return HttpResponseRedirect(back)
    _need(page, request, action.permission)
    keys = request.POST.getlist("_selected_action")
    every = request.POST.get("select_across") == "1"
    if not keys and not every:
        messages.warning(
            request, "Jobs must be selected in order to act on them. Nothing was changed."
        )
        return HttpResponseRedirect(back)
    keep = params.filter(read_show_args())
    try:
        if every and request.POST.get("confirm") != "yes":
            total = read_list(kind, params, queue=name).total
            return render(
                page,
                request,
                "confirm.html",
                "Are you sure?",
                question=action.confirm(total),
                fields={"action": action.name, "select_across": "1"},
                back=back,
            )
        result = run(kind, action.name, keys, every, keep, queue=name)
    except RedisUnavailable as exc:
        return _unavailable(page, request, exc)
    (messages.success if result.ok else messages.warning)(request, result.message)
    return HttpResponseRedirect(back)


def _allowed(page: PageAdmin, request: HttpRequest, actions: list[Action]) -> list[Action]:
    """The actions this user may run."""
    can = {
        "change": page.has_change_permission(request),
        "delete": page.has_delete_permission(request),
    }
    return [a for a in actions if can[a.permission]]


def read_show_args() -> bool:
    import djqueue

    return djqueue.get_settings().web_show_args


def job(page: PageAdmin, request: HttpRequest, kind: str, key: str, name: str = "") -> HttpResponse:
    _need(page, request)
    model = MODEL[kind]
    list_url = url(page, model, "jobs", name) if kind == "queue" else url(page, model)
    if request.method == "POST":
        try:
            action = find_action(kind, request.POST.get("action", ""))
        except ValueError:
            raise PermissionDenied from None
        _need(page, request, action.permission)
        result = run(kind, action.name, [key], queue=name)
        (messages.success if result.ok else messages.warning)(request, result.message)
        return HttpResponseRedirect(list_url)
    try:
        found = job_page(kind, key, queue=name)
    except RedisUnavailable as exc:
        return _unavailable(page, request, exc)
    allowed = _allowed(page, request, found.actions) if found else []
    title = found.job_name if found else "Job not found"
    return render(
        page,
        request,
        "job.html",
        title,
        job=found,
        list_url=list_url,
        allowed_actions=allowed,
        status=200 if found else 404,
    )


# -- busy -------------------------------------------------------------------------------------


def busy(page: PageAdmin, request: HttpRequest) -> HttpResponse:
    _need(page, request)
    if request.method == "POST":
        _need(page, request, "change")
        action = request.POST.get("action", "")
        if action not in web_busy.SIGNALS:
            messages.warning(request, "No action was chosen. Nothing was changed.")
        else:
            identity = request.POST.get("identity") or None
            sent, message = web_busy.signal(action, identity)
            (messages.success if sent else messages.warning)(request, message)
        return HttpResponseRedirect(url(page, "busy"))
    try:
        found = web_busy.busy_page()
    except RedisUnavailable as exc:
        return _unavailable(page, request, exc)
    return render(page, request, "busy.html", "Busy", busy=found)
