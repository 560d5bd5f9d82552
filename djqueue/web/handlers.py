"""Every page's GET and POST, once for both mounts: compute the page (`djqueue.web`), or run
the posted form (`forms`, `periodic`) and answer with its question or a redirect.

Each handler takes a `WebRequest` and the route's arguments and returns a `results.Result`.
Permissions: the mount lets only viewers in; each action checks the permission it needs
through ``req.allowed`` (`forms.Refused` when refused, which the mount answers with 403).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

from ..errors import RedisUnavailable
from . import assets, forms
from . import batches as web_batches
from . import busy as web_busy
from . import limits as web_limits
from . import metrics as web_metrics
from . import periodic as web_periodic
from . import queues as web_queues
from .actions import permitted
from .dashboard import POLL_CHOICES, poll_interval
from .dashboard import dashboard as read_dashboard
from .i18n import gettext
from .job import job_page
from .lifecycle import status_page
from .lists import job_list as read_list
from .problems import ProblemPage
from .query import ListQuery
from .results import File, Json, NotFound, Redirect, Render, Result, WebRequest


def problem(found: ProblemPage) -> Render:
    return Render("problem.html", found.title, {"found": found}, status=found.status)


def answer(
    req: WebRequest,
    back: str,
    handler: Callable[..., forms.Outcome],
    *args: Any,
    cancel: str = "",
    **kw: Any,
) -> Result:
    """Run a form handler: the question page when it asks first (its "No" goes to ``cancel``,
    else ``back``), else its message and a redirect to ``back``. `forms.Refused` goes up to
    the mount (403)."""
    outcome = handler(*args, allowed=req.allowed, settings=req.settings, **kw)
    if outcome.question:
        context = {"question": outcome.question, "note": outcome.note, "back": cancel or back}
        return Render(
            "confirm.html", gettext("Are you sure?"), {**context, "fields": outcome.fields}
        )
    return Redirect(back, outcome.message, outcome.ok)


# -- dashboard --------------------------------------------------------------------------------


def index(req: WebRequest) -> Result:
    found = read_dashboard(req.settings, outbox=req.outbox())
    context = {
        "dashboard": found,
        "figure_links": found.linked(req.url),
        "poll": poll_interval(req.query.get("poll")),
        "poll_choices": POLL_CHOICES,
    }
    return Render("dashboard.html", gettext("Dashboard"), context)


def live(req: WebRequest) -> Result:
    try:
        return Json(read_dashboard(req.settings, outbox=req.outbox()).live())
    except RedisUnavailable as exc:
        return Json({"error": str(exc)}, status=503)


def asset(req: WebRequest, name: str) -> Result:
    found = assets.read(name)
    return File(*found) if found is not None else NotFound(name)


def job_status(req: WebRequest) -> Result:
    """The answer to the dashboard's 'find job by jid' box: the job's lifecycle."""
    found = status_page(str(req.query.get("jid", "")), req.settings)
    title = gettext("Job %(jid)s") % {"jid": found.jid} if found.jid else gettext("Find job by jid")
    status = 200 if found.fields or not found.jid else 404
    return Render(
        "status.html", title, {"found": found}, status, [(gettext("Dashboard"), req.url("index"))]
    )


# -- queues and lists -------------------------------------------------------------------------


def queues(req: WebRequest) -> Result:
    if req.method == "POST":
        if req.form.get("action") in forms.PAUSE_ACTIONS:
            return answer(req, req.url("queues"), forms.pause_queue, req.form)
        return answer(req, req.url("queues"), forms.clear_queue, req.form)
    rows = web_queues.queues_page(req.settings)
    links = [(row, req.url("queue", queue=row.name)) for row in rows]
    return Render("queues.html", gettext("Queues"), {"rows": links})


def queue(req: WebRequest, queue: str) -> Result:
    return _list(req, "queue", queue)


def scheduled(req: WebRequest) -> Result:
    return _list(req, "scheduled")


def retries(req: WebRequest) -> Result:
    return _list(req, "retries")


def dead(req: WebRequest) -> Result:
    return _list(req, "dead")


def _list_url(req: WebRequest, kind: str, queue: str) -> str:
    return req.url("queue", queue=queue) if kind == "queue" else req.url(kind)


def _job_url(req: WebRequest, kind: str, key: str, queue: str) -> str:
    if kind == "queue":
        return req.url("queue_job", queue=queue, key=key)
    return req.url(f"{kind}_job", key=key)


def _list(req: WebRequest, kind: str, queue: str = "") -> Result:
    params = ListQuery.parse(req.query)
    here = req.full_path
    if req.method == "POST":
        if kind == "queue" and req.form.get("action") in forms.PAUSE_ACTIONS:
            return answer(req, here, forms.pause_queue, req.form, queue=queue)
        return answer(req, here, forms.list_action, kind, req.form, params, queue=queue)
    found = read_list(kind, params, queue=queue, settings=req.settings)
    job_urls = [_job_url(req, kind, row.key, queue) for row in found.rows]
    context = {
        "list": found,
        "rows": list(zip(found.rows, job_urls, strict=True)),
        "allowed_actions": permitted(found.actions, req.allowed),
        "list_url": here,
    }
    crumbs = [(gettext("Queues"), req.url("queues"))] if kind == "queue" else []
    title = queue if kind == "queue" else found.title
    return Render("job_list.html", title, context, crumbs=crumbs)


def queue_job(req: WebRequest, queue: str, key: str) -> Result:
    return _job(req, "queue", key, queue)


def scheduled_job(req: WebRequest, key: str) -> Result:
    return _job(req, "scheduled", key)


def retries_job(req: WebRequest, key: str) -> Result:
    return _job(req, "retries", key)


def dead_job(req: WebRequest, key: str) -> Result:
    return _job(req, "dead", key)


def _job(req: WebRequest, kind: str, key: str, queue: str = "") -> Result:
    back = _list_url(req, kind, queue)
    if req.method == "POST":
        here = req.full_path
        return answer(req, back, forms.job_action, kind, key, req.form, queue=queue, cancel=here)
    found = job_page(kind, key, queue=queue, settings=req.settings)
    context = {
        "job": found,
        "list_url": back,
        "allowed_actions": permitted(found.actions, req.allowed) if found else [],
    }
    crumbs = [(gettext("Queues"), req.url("queues"))] if kind == "queue" else []
    crumbs.append((found.list_title if found else gettext("List"), back))
    title = found.job_name if found else gettext("Job not found")
    return Render("job.html", title, context, 200 if found else 404, crumbs)


# -- batches ---------------------------------------------------------------------------------


def batches(req: WebRequest) -> Result:
    """Every batch kept, newest first, with its progress."""
    found = web_batches.batches_page(req.query, req.settings)
    return Render("batches.html", gettext("Batches"), {"batches": found})


def batch(req: WebRequest, bid: str) -> Result:
    """One batch: counts, callbacks, failed jobs, pending jids, parent and children; Cancel."""
    here = req.url("batch", bid=bid)
    if req.method == "POST":
        return answer(req, here, web_batches.cancel_batch, req.form, bid=bid)
    found = web_batches.batch_page(bid, req.settings)
    title = (found.state.description or bid) if found else gettext("Batch not found")
    crumbs = [(gettext("Batches"), req.url("batches"))]
    return Render("batch.html", title, {"batch": found, "bid": bid}, 200 if found else 404, crumbs)


def batch_job(req: WebRequest, bid: str, jid: str) -> Result:
    """A batch's job, followed to its page where it waits or lies (the retry set, the dead
    set, the schedule, a queue), else to its lifecycle (find by jid)."""
    found = web_batches.job_location(jid, req.settings)
    if found is not None:
        return Redirect(req.url(found[0], **found[1]))
    return Redirect(f"{req.url('job_status')}?{urlencode({'jid': jid})}")


# -- periodic, busy and metrics --------------------------------------------------------------


def periodic(req: WebRequest) -> Result:
    """Every periodic job, with its row buttons and the action menu for the ticked rows."""
    here = req.url("periodic")
    if req.method == "POST":
        return answer(req, here, web_periodic.periodic_action, req.form)
    found = web_periodic.periodic_list(req.settings)
    entry_urls = [req.url("periodic_entry", name=row.name) for row in found.rows]
    context = {
        "list": found,
        "rows": list(zip(found.rows, entry_urls, strict=True)),
        "allowed_actions": permitted(found.actions, req.allowed),
        "list_url": here,
    }
    return Render("periodic_list.html", gettext("Periodic"), context)


def periodic_entry(req: WebRequest, name: str) -> Result:
    """One periodic job: its fields, next ticks, message and the jids it pushed."""
    list_url = req.url("periodic")
    if req.method == "POST":
        deleting = req.form.get("action") == "delete" and req.form.get("confirm") == "yes"
        back = list_url if deleting else req.url("periodic_entry", name=name)
        return answer(req, back, web_periodic.periodic_action, req.form, name=name)
    found = web_periodic.periodic_page(name, req.settings)
    context = {
        "entry": found,
        "name": name,
        "list_url": list_url,
        "allowed_actions": permitted(found.actions, req.allowed) if found else [],
    }
    title = name if found else gettext("Periodic job not found")
    return Render(
        "periodic.html", title, context, 200 if found else 404, [(gettext("Periodic"), list_url)]
    )


def busy(req: WebRequest) -> Result:
    if req.method == "POST":
        return answer(req, req.url("busy"), forms.signal_processes, req.form)
    return Render("busy.html", gettext("Busy"), {"busy": web_busy.busy_page(req.settings)})


def metrics(req: WebRequest) -> Result:
    """Per job class over a range; each row links to its retries and dead jobs (the lists'
    ``?job=`` filter)."""
    found = web_metrics.metrics_page(req.query, req.settings)
    filters = [f"?{urlencode({'job': row.name})}" for row in found.rows]
    links = [
        (row, req.url("retries") + job, req.url("dead") + job)
        for row, job in zip(found.rows, filters, strict=True)
    ]
    return Render("metrics.html", gettext("Metrics"), {"metrics": found, "rows": links})


def limits(req: WebRequest) -> Result:
    """Every limiter: its kind, limit, use now and how often it refused a job."""
    found = web_limits.limits_page(req.settings)
    return Render("limits.html", gettext("Limits"), {"limits": found})
