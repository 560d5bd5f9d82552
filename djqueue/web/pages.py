"""The page table: every page of the web app, once, for both mounts.

A `Tab` is one entry of the tab bar (and one model in the Django admin's index, which is why
it carries the admin's model name); a `Route` is one URL under a tab, with its handler and
methods. The Django mount loops over the routes in ``get_urls()`` (URL
``<model>/<path>/``, name ``djqueue_<model>_<route>``, the tab's root being the admin's
``changelist``); the Flask mount adds one blueprint rule per route (``/<segment>/<path>``,
endpoint ``<route>``). Paths use the ``<converter:name>`` syntax both frameworks share.

Who may do what: seeing any page needs ``view``; each posted action needs the permission its
`djqueue.web.actions.Action` (or the periodic actions) names, clearing a queue ``delete``,
pausing and resuming one, quieting and stopping processes ``change``, cancelling a batch
``delete`` (its waiting jobs are removed) — the `Route.acts` column says which, for the docs
and for the mounts that want to hide a page's buttons.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import BadKey, RedisUnavailable
from . import display, handlers, i18n
from .i18n import gettext_lazy as _
from .problems import bad_key_page, unavailable_page
from .results import Render, Result, WebRequest


@dataclass(frozen=True)
class Tab:
    name: str
    label: str  # marked with gettext_lazy: shown in the request's language
    #: The Django admin's model of the tab (`djqueue.contrib.django.models`).
    model: str
    #: The tab's first URL segment in the Flask blueprint ("" for the dashboard).
    segment: str


@dataclass(frozen=True)
class Route:
    name: str
    tab: str
    #: Below the tab's URL; "" for the tab's own page.
    path: str
    handler: Callable[..., Result]
    methods: tuple[str, ...] = ("GET",)
    #: The permissions a POST here may need: "change", "delete" (per action, see above).
    acts: tuple[str, ...] = ()
    #: Django's routes end in "/" but for files ("assets/djqueue.css").
    slash: bool = True


#: The tab bar, in order.
TABS = (
    Tab("index", _("Dashboard"), "dashboard", ""),
    Tab("queues", _("Queues"), "queue", "queues"),
    Tab("scheduled", _("Scheduled"), "scheduledjob", "scheduled"),
    Tab("retries", _("Retries"), "retryjob", "retries"),
    Tab("dead", _("Dead"), "deadjob", "dead"),
    Tab("batches", _("Batches"), "batch", "batches"),
    Tab("periodic", _("Periodic"), "periodicjob", "periodic"),
    Tab("busy", _("Busy"), "busy", "busy"),
    Tab("metrics", _("Metrics"), "metrics", "metrics"),
    Tab("limits", _("Limits"), "limits", "limits"),
)
POST = ("GET", "POST")
BOTH = ("change", "delete")
#: Every page. A path with a fixed segment comes before one that would swallow it.
ROUTES = (
    Route("index", "index", "", handlers.index),
    Route("live", "index", "live", handlers.live),
    Route("asset", "index", "assets/<name>", handlers.asset, slash=False),
    Route("job_status", "index", "job", handlers.job_status),
    Route("queues", "queues", "", handlers.queues, POST, BOTH),
    Route("queue_job", "queues", "<path:queue>/job/<path:key>", handlers.queue_job, POST, BOTH),
    Route("queue", "queues", "<path:queue>", handlers.queue, POST, BOTH),
    Route("scheduled", "scheduled", "", handlers.scheduled, POST, BOTH),
    Route("scheduled_job", "scheduled", "<path:key>", handlers.scheduled_job, POST, BOTH),
    Route("retries", "retries", "", handlers.retries, POST, BOTH),
    Route("retries_job", "retries", "<path:key>", handlers.retries_job, POST, BOTH),
    Route("dead", "dead", "", handlers.dead, POST, BOTH),
    Route("dead_job", "dead", "<path:key>", handlers.dead_job, POST, BOTH),
    Route("batches", "batches", "", handlers.batches),
    Route("batch_job", "batches", "<bid>/job/<jid>", handlers.batch_job),
    Route("batch", "batches", "<bid>", handlers.batch, POST, ("delete",)),
    Route("periodic", "periodic", "", handlers.periodic, POST, BOTH),
    Route("periodic_entry", "periodic", "<path:name>", handlers.periodic_entry, POST, BOTH),
    Route("busy", "busy", "", handlers.busy, POST, ("change",)),
    Route("metrics", "metrics", "", handlers.metrics),
    Route("limits", "limits", "", handlers.limits),
)
TAB = {tab.name: tab for tab in TABS}
ROUTE = {route.name: route for route in ROUTES}


def serve(route: Route, req: WebRequest, **arguments: Any) -> Result:
    """Run the route's handler with times in the request's zone; Redis down or a key of the
    wrong type gives the problem page (503 naming the URL, or the key and its type).
    `forms.Refused` goes up (403)."""
    with display.in_zone(req.zone), i18n.active(req.language):
        try:
            found = route.handler(req, **arguments)
        except RedisUnavailable as exc:
            found = handlers.problem(unavailable_page(exc, req.mount.redis_setting))
        except BadKey as exc:
            found = handlers.problem(bad_key_page(exc))
    if isinstance(found, Render):
        found.tab = route.tab
    return found


def nav(req: WebRequest, current: str) -> list[tuple[str, str, bool]]:
    """The tab bar, in the request's language: label, URL, whether it is the current tab."""
    with i18n.active(req.language):
        return [(str(tab.label), req.url(tab.name), tab.name == current) for tab in TABS]
