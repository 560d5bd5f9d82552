"""What a page handler is given and what it answers, with no web framework in sight.

A mount (the Django admin's, the Flask blueprint's) turns its request into a `WebRequest`,
calls the handler the page table (`pages`) names, and turns the answer into its own response:
a `Render` (a page body to draw inside its frame; the "are you sure?" question is one too), a
`Redirect` with a message to show after it, `Json` for the live views, a `File` (the
scripts and the stylesheets) or `NotFound`. So the GET/POST logic of every page exists once.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..config import Settings
from .forms import Allowed


@dataclass(frozen=True)
class Mount:
    """What differs between the two mounts and shows in the pages' words and markup."""

    #: Where the Redis URL is set, named in the "Redis does not answer" page.
    redis_setting: str
    #: How a worker is started, named on the Busy page when none runs.
    worker_command: str
    #: The setting that declares periodic jobs, named on the empty Periodic page.
    periodic_setting: str
    #: ``"sidebar-first"`` (Django 6's changelist, the Flask frame) or ``"sidebar-last"``
    #: (Django 5.2's): where a list's filter sidebar sits in the markup.
    layout: str = "sidebar-first"


@dataclass
class WebRequest:
    """One request as the handlers see it."""

    method: str
    #: The query string (``request.GET`` / ``request.args``).
    query: Mapping[str, Any]
    #: The posted form (``request.POST`` / ``request.form``).
    form: Any  # a `forms.Form`: QueryDict and MultiDict both fit, as far as type checkers see
    #: This page's path with its query string: where a list's actions come back to.
    full_path: str
    #: ``allowed("change")`` / ``allowed("delete")``, the mount's permission check.
    allowed: Allowed
    #: ``url(route_name, **arguments)``: the mount's URL of another page of the table.
    url: Callable[..., str]
    mount: Mount
    #: The djqueue settings to read (None: the process's own, as in Django).
    settings: Settings | None = None
    #: The outbox's figures for the dashboard, when the project uses the outbox.
    outbox: Callable[[], Any] = lambda: None
    #: The zone the page's times read in (Django's current time zone, Flask's
    #: ``DJQUEUE_TIME_ZONE``); `pages.serve` sets it around the handler.
    zone: dt.tzinfo = dt.UTC
    #: The reader's language (Django's ``get_language()``, Flask's ``locale`` hook): a code
    #: `djqueue.web.i18n.normalize` maps to a catalog, English when none fits.
    language: str = "en"


@dataclass
class Render:
    """Draw ``template`` (a page body under ``djqueue/web/templates``) inside the frame."""

    template: str
    title: str
    context: dict[str, Any] = field(default_factory=dict)
    status: int = 200
    #: The breadcrumbs between the djqueue section and the title: ``(label, url)``.
    crumbs: list[tuple[str, str]] = field(default_factory=list)
    #: The tab the page belongs to (set by `pages.serve` from the route).
    tab: str = ""


@dataclass
class Redirect:
    """Go to ``url`` and show ``message`` there (so a reload does not repeat an action); no
    message: only go there."""

    url: str
    message: str = ""
    ok: bool = True


@dataclass
class Json:
    data: dict[str, Any]
    status: int = 200


@dataclass
class File:
    body: bytes
    content_type: str


@dataclass
class NotFound:
    """Nothing here (a file that is not served): the mount's own 404."""

    what: str


Result = Render | Redirect | Json | File | NotFound
