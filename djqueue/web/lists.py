"""The list pages: one queue, the scheduled jobs, the retries and the dead jobs.

`job_list` reads one page (one MULTI, or a filtered read inside Redis) and returns everything
a renderer draws: the rows as display text, the page numbers, the filter choices with their
links, and the actions the list offers. A renderer adds only its own markup, URLs for the job
pages, and the checks of who may do what.
"""

from __future__ import annotations

import dataclasses
import time
from collections import Counter
from dataclasses import dataclass, field

from ..api import DeadSet, JobRecord, Queue, RetrySet, ScheduledSet, SortedEntry, SortedSet
from ..config import Settings
from ..store.listing import Filter
from . import display
from .actions import Action, actions_for
from .i18n import gettext
from .i18n import gettext_lazy as _
from .paging import Paging
from .query import ListQuery

#: The job sets by the name their pages go by.
SETS: dict[str, type[SortedSet]] = {
    "scheduled": ScheduledSet,
    "retries": RetrySet,
    "dead": DeadSet,
}
TITLES = {
    "scheduled": _("Scheduled"),
    "retries": _("Retries"),
    "dead": _("Dead"),
    "queue": _("Queue"),
}
#: The heading of the time column: what the score (or ``enqueued_at``) means on each list.
WHEN = {
    "scheduled": _("Run at"),
    "retries": _("Next retry"),
    "dead": _("Died"),
    "queue": _("Enqueued"),
}
#: Filter choices listed in the sidebar; the rest are reached by clicking a job's name.
MAX_CHOICES = 30
#: Characters of an error shown in a list row.
ERROR_IN_LIST = 140


def list_title(kind: str, queue: str) -> str:
    """A list's title ("Queue mailers", "Retries"), in the request's language."""
    return gettext("Queue %(name)s") % {"name": queue} if kind == "queue" else str(TITLES[kind])


@dataclass
class Row:
    """One job as a list row, every value already text."""

    #: Names the entry in a selection and in its job page's URL ("SCORE-JID", "INDEX-JID").
    key: str
    jid: str
    job_name: str
    args: str
    queue: str
    at: float | None
    when: str
    when_exact: str
    error: str
    retry_count: str
    #: Why this entry is not a job (bad JSON, wrapped as djqueue.Malformed), or empty.
    problem: str
    #: Query string listing only jobs of this row's name.
    filter_url: str = ""


@dataclass
class Choice:
    """One entry of a sidebar filter: its label, match count (None when counts are off),
    whether it is the current filter, and the query string selecting it."""

    label: str
    count: int | None
    selected: bool
    url: str


@dataclass
class JobList:
    kind: str
    title: str
    when_label: str
    query: ListQuery
    paging: Paging
    rows: list[Row]
    #: Jobs in the queue or set now, filtered or not.
    size: int
    #: Jobs the search and filters kept (None when the list is not filtered).
    matches: int | None
    job_choices: list[Choice]
    queue_choices: list[Choice]
    actions: list[Action]
    show_args: bool
    #: The queue's name, on a queue's page.
    queue_name: str = ""
    #: On a queue's page: no worker takes jobs from it (`djqueue.api.Queue.pause`).
    paused: bool = False
    #: On a queue's page: its jobs parked for a limiter's slots (`djqueue.api.Queue.parked`).
    parked: int = 0
    #: Query strings of the other pages, for the paginator (None marks elided pages).
    page_links: list[tuple[int | None, str]] = field(default_factory=list)
    #: Query strings turning the sidebar's counts on or off, and dropping every filter.
    facets_url: str = ""
    clear_url: str = ""
    #: The entries a filter searched, 1-based first and last, when that was a part of the
    #: list (`djqueue.store.listing.SEARCH_PART`): the matches and counts are the part's.
    searched: tuple[int, int] | None = None
    #: The parts before and after it: (first entry, last entry, query string).
    previous_part: tuple[int, int, str] | None = None
    next_part: tuple[int, int, str] | None = None

    @property
    def total(self) -> int:
        return self.size if self.matches is None else self.matches

    @property
    def search_help(self) -> str:
        """What the search box finds (`djqueue.store.listing.Filter`), under the box."""
        if self.show_args:
            return gettext(
                "A jid, a job name, or text in the arguments or the error, in any case "
                "(a jid as written)."
            )
        return gettext(
            "A jid, a job name, or text in the error, in any case (a jid as written; "
            "arguments are hidden on this site)."
        )


def source(kind: str, queue: str = "", settings: Settings | None = None) -> Queue | SortedSet:
    """The API object a list page reads: ``"queue"`` (with its name) or a job set's name."""
    if kind == "queue":
        return Queue(queue, settings=settings)
    try:
        return SETS[kind](settings=settings)
    except KeyError:
        raise ValueError(f"no list named {kind!r}") from None


def job_list(
    kind: str, params: ListQuery, queue: str = "", settings: Settings | None = None
) -> JobList:
    """One page of a list, as `ListQuery` asks for it."""
    where = source(kind, queue, settings)
    show_args = where.settings.web_show_args
    keep = list_filter(kind, params, where.settings)
    paging = Paging(params.page, 0)
    listing = where.page(paging.offset, paging.per_page, keep, params.facets, first=params.first)
    paging = Paging(params.page, listing.total)
    searched, previous_part, next_part = _parts(params, listing.part, listing.size)
    now = time.time()
    rows = [row(record, kind, show_args, now) for record in listing.records]
    for found in rows:
        found.filter_url = params.url(job=found.job_name)
    on_page = sorted({r.job_name for r in rows}) if not params.facets else []
    job_choices = _choices("job", params, listing.names, on_page)
    queue_choices: list[Choice] = []
    if kind != "queue":
        known = [q.name for q in Queue.all(settings=where.settings)] if not params.facets else []
        queue_choices = _choices("queue", params, listing.queues, known)
    links = [(n, params.url(page=n) if n else "") for n in paging.links()]
    return JobList(
        kind=kind,
        title=list_title(kind, queue),
        when_label=WHEN[kind],
        query=params,
        paging=paging,
        rows=rows,
        size=listing.size,
        matches=listing.matches if keep else None,
        job_choices=job_choices,
        queue_choices=queue_choices,
        actions=actions_for(kind),
        show_args=show_args,
        queue_name=queue,
        paused=isinstance(where, Queue) and where.paused,
        parked=where.parked if isinstance(where, Queue) else 0,
        page_links=links,
        facets_url=params.url(facets=not params.facets, page=params.page),
        clear_url=ListQuery(facets=params.facets).url(),
        searched=searched,
        previous_part=previous_part,
        next_part=next_part,
    )


def match_count(
    kind: str, params: ListQuery, queue: str = "", settings: Settings | None = None
) -> int:
    """Every job the list's filters match, in the whole list, not only the part a page
    searches: what an action on all of them is about to change (a confirmation, read once)."""
    where = source(kind, queue, settings)
    keep = list_filter(kind, params, where.settings)
    return where.page(0, 1, keep, all_entries=True).total


def _parts(
    params: ListQuery, part: tuple[int, int] | None, size: int
) -> tuple[tuple[int, int] | None, tuple[int, int, str] | None, tuple[int, int, str] | None]:
    """The entries searched (1-based) and the parts before and after them, with their links,
    when a filter searched part of the list. A part past the end of the list (it shrank, or
    the URL was typed) searched nothing: its link back goes to the list's last part."""
    if part is None:
        return None, None, None
    first, end = part

    def link(number: int) -> tuple[int, int, str]:
        start, stop = params.entries(number)
        return start + 1, min(stop, size), params.url(part=number)

    if first >= size:
        last = params.parts(size)
        return None, (link(last) if last else None), None
    previous = link(params.part - 1) if params.part > 1 else None
    following = link(params.part + 1) if end < size else None
    return (first + 1, end), previous, following


def list_filter(kind: str, params: ListQuery, settings: Settings) -> Filter:
    """What a list shows of its queue or set: the search and the filters (a queue page has
    no queue filter: it is one queue)."""
    keep = params.filter(settings.web_show_args)
    return dataclasses.replace(keep, queue="") if kind == "queue" else keep


def row(record: JobRecord, kind: str, show_args: bool, now: float | None = None) -> Row:
    """A record as display text."""
    at: float | None
    if isinstance(record, SortedEntry):
        key, at = record.key, record.at
    else:
        key = f"{record.index if record.index is not None else ''}-{record.name}"
        at = record.enqueued_at or record.created_at
    error = ""
    if record.has_error:
        error = f"{record.error_class}: {record.error_message or ''}".strip()
        if len(error) > ERROR_IN_LIST:
            error = error[: ERROR_IN_LIST - 1] + "…"
    problem = record.parse_error or (gettext("not a job") if record.is_malformed else "")
    count = record.retry_count
    return Row(
        key=key,
        jid=record.jid or "",
        job_name=record.display_name or gettext("(none)"),
        args=display.args_text(record.display_args, show_args),
        queue=record.queue or "",
        at=at,
        when=display.relative(at, now),
        when_exact=display.exact(at),
        error=error,
        retry_count="" if count is None else str(count),
        problem=problem,
    )


def _choices(name: str, params: ListQuery, counts: Counter[str], known: list[str]) -> list[Choice]:
    """Sidebar entries: "All", then the names with matches (most first) when counts are on,
    else the names at hand (the jobs on the page, the known queues); the current one always."""
    current = getattr(params, name)
    labels = [label for label, _ in counts.most_common(MAX_CHOICES)] if counts else sorted(known)
    labels = labels[:MAX_CHOICES]
    if current and current not in labels:
        labels.append(current)
    found = [Choice(gettext("All"), None, not current, params.url(**{name: ""}))]
    for label in labels:
        count = counts.get(label, 0) if params.facets else None
        link = params.url(**{name: label})
        found.append(Choice(label or gettext("(none)"), count, label == current, link))
    return found
