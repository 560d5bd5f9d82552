"""The admin views: permission checks, `djqueue.web` for the content, admin templates.

Every view is reached through ``admin_site.admin_view`` (see `admin`), so only active staff
get here and every POST passed Django's CSRF check. Seeing needs ``djqueue.view_job``; an action
needs the permission its `djqueue.web.actions.Action` names. Changes are POST, answered with a
message and a redirect (so a reload does not repeat them); an action on every job of a list
first asks "Retry all 12,345 jobs?".
"""

from __future__ import annotations

from collections.abc import Callable
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

from djqueue.errors import BadKey, RedisUnavailable
from djqueue.outbox import OutboxStats
from djqueue.web import assets, forms
from djqueue.web import busy as web_busy
from djqueue.web import periodic as web_periodic
from djqueue.web import queues as web_queues
from djqueue.web.actions import permitted
from djqueue.web.dashboard import POLL_CHOICES, poll_interval
from djqueue.web.dashboard import dashboard as read_dashboard
from djqueue.web.job import job_page
from djqueue.web.lifecycle import status_page
from djqueue.web.lists import job_list as read_list
from djqueue.web.problems import ProblemPage, bad_key_page, unavailable_page
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
    ("Periodic", "periodicjob"),
    ("Busy", "busy"),
)
#: Model name of each list kind's page.
MODEL = {"queue": "queue", "scheduled": "scheduledjob", "retries": "retryjob", "dead": "deadjob"}


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
        "djqueue_lists_js": url(page, "dashboard", "asset", "lists.js"),
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


def unavailable(page: PageAdmin, request: HttpRequest, error: RedisUnavailable) -> HttpResponse:
    """What every page answers when Redis does not: a 503 naming the URL (password hidden)."""
    return problem(page, request, unavailable_page(error, 'DJQUEUE["REDIS_URL"]'))


def bad_key(page: PageAdmin, request: HttpRequest, error: BadKey) -> HttpResponse:
    """What a page answers when the key it shows holds the wrong type: its name, its type."""
    return problem(page, request, bad_key_page(error))


def problem(page: PageAdmin, request: HttpRequest, found: ProblemPage) -> HttpResponse:
    return render(page, request, "problem.html", found.title, found=found, status=found.status)


# -- dashboard --------------------------------------------------------------------------------


def _outbox() -> OutboxStats | None:
    """The outbox's figures (rows in the database, not Redis) when the project chose the
    outbox, or when rows wait (jobs kept because Redis was down at commit)."""
    from .outbox import outbox_chosen, relay_enabled, stats

    found = stats() if relay_enabled() else None
    return found if found is not None and (found.size or outbox_chosen()) else None


def dashboard(page: PageAdmin, request: HttpRequest) -> HttpResponse:
    _need(page, request)
    found = read_dashboard(outbox=_outbox())
    models = {**MODEL, "queues": "queue", "busy": "busy"}
    return render(
        page,
        request,
        "dashboard.html",
        "djqueue dashboard",
        dashboard=found,
        figure_links=found.linked(lambda name: url(page, models[name])),
        poll=poll_interval(request.GET.get("poll")),
        poll_choices=POLL_CHOICES,
        live_url=url(page, "dashboard", "live"),
        status_url=url(page, "dashboard", "status"),
        script_url=url(page, "dashboard", "asset", "dashboard.js"),
    )


def dashboard_live(page: PageAdmin, request: HttpRequest) -> HttpResponse:
    _need(page, request)
    try:
        return JsonResponse(read_dashboard(outbox=_outbox()).live())
    except RedisUnavailable as exc:
        return JsonResponse({"error": str(exc)}, status=503)


def asset(page: PageAdmin, request: HttpRequest, name: str) -> HttpResponse:
    """The dashboard's script and the pages' stylesheet, shared with the Flask dashboard."""
    found = assets.read(name)
    if found is None:
        raise Http404(name)
    body, content_type = found
    response = HttpResponse(body, content_type=content_type)
    response["Cache-Control"] = "private, max-age=3600"
    return response


# -- queues -----------------------------------------------------------------------------------


def queues(page: PageAdmin, request: HttpRequest) -> HttpResponse:
    _need(page, request)
    if request.method == "POST":
        return _answer(
            page,
            request,
            url(page, "queue"),
            forms.clear_queue,
            request.POST,
            allowed(page, request),
        )
    rows = web_queues.queues_page()
    links = [(row, url(page, "queue", "jobs", row.name)) for row in rows]
    return render(page, request, "queues.html", "Queues", rows=links)


# -- lists and jobs ---------------------------------------------------------------------------


def job_list(page: PageAdmin, request: HttpRequest, kind: str, name: str = "") -> HttpResponse:
    _need(page, request)
    params = ListQuery.parse(request.GET)
    here = request.get_full_path()
    if request.method == "POST":
        return _answer(
            page,
            request,
            here,
            forms.list_action,
            kind,
            request.POST,
            params,
            allowed(page, request),
            queue=name,
        )
    found = read_list(kind, params, queue=name)
    model = MODEL[kind]
    job_urls = [
        url(page, model, "job", *((name, row.key) if kind == "queue" else (row.key,)))
        for row in found.rows
    ]
    may = allowed(page, request)
    return render(
        page,
        request,
        "job_list.html",
        found.title,
        list=found,
        rows=list(zip(found.rows, job_urls, strict=True)),
        allowed_actions=permitted(found.actions, may),
        list_url=here,
        clear_url=url(page, "queue") if kind == "queue" else "",
    )


def job(page: PageAdmin, request: HttpRequest, kind: str, key: str, name: str = "") -> HttpResponse:
    _need(page, request)
    model = MODEL[kind]
    list_url = url(page, model, "jobs", name) if kind == "queue" else url(page, model)
    if request.method == "POST":
        return _answer(
            page,
            request,
            list_url,
            forms.job_action,
            kind,
            key,
            request.POST,
            allowed(page, request),
            queue=name,
        )
    found = job_page(kind, key, queue=name)
    may = allowed(page, request)
    return render(
        page,
        request,
        "job.html",
        found.job_name if found else "Job not found",
        job=found,
        list_url=list_url,
        allowed_actions=permitted(found.actions, may) if found else [],
        status=200 if found else 404,
    )


def job_status(page: PageAdmin, request: HttpRequest) -> HttpResponse:
    """The answer to the dashboard's 'find job by jid' box: the job's lifecycle."""
    _need(page, request)
    found = status_page(request.GET.get("jid", ""))
    title = f"Job {found.jid}" if found.jid else "Find job by jid"
    return render(
        page,
        request,
        "status.html",
        title,
        found=found,
        status_url=url(page, "dashboard", "status"),
        dashboard_url=url(page, "dashboard"),
        status=200 if found.fields or not found.jid else 404,
    )


# -- periodic jobs ----------------------------------------------------------------------------


def periodic(page: PageAdmin, request: HttpRequest) -> HttpResponse:
    """Every periodic job, with its row buttons and the action menu for the ticked rows."""
    _need(page, request)
    here = url(page, "periodicjob")
    if request.method == "POST":
        return _answer(
            page,
            request,
            here,
            web_periodic.periodic_action,
            request.POST,
            allowed(page, request),
        )
    found = web_periodic.periodic_list()
    entry_urls = [url(page, "periodicjob", "entry", row.name) for row in found.rows]
    return render(
        page,
        request,
        "periodic_list.html",
        "Periodic",
        list=found,
        rows=list(zip(found.rows, entry_urls, strict=True)),
        allowed_actions=permitted(found.actions, allowed(page, request)),
        list_url=here,
    )


def periodic_entry(page: PageAdmin, request: HttpRequest, name: str) -> HttpResponse:
    """One periodic job: its fields, next ticks, payload and the jids it pushed."""
    _need(page, request)
    list_url = url(page, "periodicjob")
    here = url(page, "periodicjob", "entry", name)
    if request.method == "POST":
        deleting = request.POST.get("action") == "delete" and request.POST.get("confirm") == "yes"
        return _answer(
            page,
            request,
            list_url if deleting else here,
            web_periodic.periodic_action,
            request.POST,
            allowed(page, request),
            name=name,
        )
    found = web_periodic.periodic_page(name)
    return render(
        page,
        request,
        "periodic.html",
        name if found else "Periodic job not found",
        entry=found,
        name=name,
        list_url=list_url,
        status_url=url(page, "dashboard", "status"),
        allowed_actions=permitted(found.actions, allowed(page, request)) if found else [],
        status=200 if found else 404,
    )


# -- busy -------------------------------------------------------------------------------------


def busy(page: PageAdmin, request: HttpRequest) -> HttpResponse:
    _need(page, request)
    if request.method == "POST":
        return _answer(
            page,
            request,
            url(page, "busy"),
            forms.signal_processes,
            request.POST,
            allowed(page, request),
        )
    found = web_busy.busy_page()
    return render(page, request, "busy.html", "Busy", busy=found)


# -- answering a POST -------------------------------------------------------------------------


def allowed(page: PageAdmin, request: HttpRequest) -> forms.Allowed:
    """The check `djqueue.web.forms` asks: ``"change"`` or ``"delete"``."""
    return lambda permission: (
        page.has_change_permission(request)
        if permission == "change"
        else page.has_delete_permission(request)
    )


def _answer(
    page: PageAdmin,
    request: HttpRequest,
    back: str,
    handler: Callable[..., forms.Outcome],
    *args: Any,
    **kwargs: Any,
) -> HttpResponse:
    """Run a form handler: 403 when refused, the question page when it asks first, else its
    message and a redirect to ``back`` (so a reload does not repeat the action)."""
    try:
        outcome = handler(*args, **kwargs)
    except forms.Refused:
        raise PermissionDenied from None
    if outcome.question:
        return render(
            page,
            request,
            "confirm.html",
            "Are you sure?",
            question=outcome.question,
            note=outcome.note,
            fields=outcome.fields,
            back=back,
        )
    (messages.success if outcome.ok else messages.warning)(request, outcome.message)
    return HttpResponseRedirect(back)
