"""The Batches pages: every batch kept, newest first, with its progress; one batch with its
counts, callbacks, failed jobs, pending jids, parent and children; and its Cancel action.

Read through `djqueue.api.batches` (`djqueue.store.batch_read`): a list page is two round
trips, a batch page three (its keys, then its children among the batches made after it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..api import DeadSet, Queue, RetrySet, ScheduledSet, SortedSet
from ..api.batches import Batch, Batches
from ..config import Settings, get_settings
from ..errors import BadKey
from ..store.batch_read import PENDING_SHOWN, BatchState
from . import display
from .forms import Allowed, Form, Outcome, Refused, nothing_chosen
from .i18n import gettext
from .i18n import gettext_lazy as _
from .job import Field, linkable, time_field
from .paging import Paging
from .query import ListQuery

#: Failed jobs listed on a batch's page at most (the latest first).
FAILED_SHOWN = 100
#: The words of `BatchState.status`.
STATUS_WORDS = {
    "pending": _("pending"),
    "complete": _("complete"),
    "success": _("success"),
    "dead": _("dead"),
    "cancelled": _("cancelled"),
}
#: The callbacks' kinds as the page names them.
CALLBACK_WORDS = {
    "complete": _("On complete"),
    "success": _("On success"),
    "death": _("On death"),
}
#: The sets searched first, in order, when a batch's job is followed to its own page.
JOB_SETS: tuple[tuple[str, type[SortedSet]], ...] = (
    ("retries", RetrySet),
    ("dead", DeadSet),
    ("scheduled", ScheduledSet),
)


@dataclass
class Progress:
    """The progress bar: each part's share of the batch's jobs, in percent, and its words."""

    succeeded: float
    dead: float
    label: str


def progress(state: BatchState) -> Progress:
    total = max(state.total, 1)
    succeeded = min(state.succeeded, state.total)
    dead = min(state.dead, state.total - succeeded)
    label = gettext("%(succeeded)s of %(total)s succeeded") % {
        "succeeded": display.number(succeeded),
        "total": display.number(state.total),
    }
    return Progress(round(100 * succeeded / total, 1), round(100 * dead / total, 1), label)


@dataclass
class BatchRow:
    bid: str
    link: bool
    description: str
    #: When it was made: the time, how long ago, and the exact UTC time (empty when unknown).
    created: tuple[str, str, str]
    status: str
    status_word: str
    progress: Progress
    total: str
    pending: str
    failures: str
    dead: str
    problems: list[str]
    #: False when the batch's hash is of the wrong type (only its id and problem show).
    readable: bool


def _row(state: BatchState) -> BatchRow:
    return BatchRow(
        bid=state.bid,
        link=linkable(state.bid),
        description=state.description,
        created=(
            display.timestamp(state.created_at),
            display.relative(state.created_at),
            display.iso(state.created_at),
        )
        if state.created_at is not None
        else ("", "", ""),
        status=state.status,
        status_word=str(STATUS_WORDS[state.status]),
        progress=progress(state),
        total=display.number(state.total),
        pending=display.number(state.pending),
        failures=display.number(state.failures),
        dead=display.number(state.dead),
        problems=[str(BadKey(key, what)) for key, what in state.problems],
        readable=state.readable,
    )


@dataclass
class BatchesPage:
    rows: list[BatchRow]
    paging: Paging
    #: (page number or None for a gap, its URL).
    page_links: list[tuple[int | None, str]]


def batches_page(query: Any, settings: Settings | None = None) -> BatchesPage:
    """A page of the batches, newest first (``?p=N``)."""
    params = ListQuery.parse(query)
    paging = Paging(params.page, 0)
    states, total = Batches(settings).page(paging.offset, paging.per_page)
    paging = Paging(params.page, total)
    links = [(n, params.url(page=n) if n else "") for n in paging.links()]
    return BatchesPage([_row(s) for s in states], paging, links)


@dataclass
class CallbackRow:
    kind: str
    job: str
    args: str
    queue: str
    #: When it was pushed, or empty while the batch has not got there.
    pushed: Field


@dataclass
class FailedRow:
    jid: str
    link: bool
    job: str
    error: str
    at: Field


@dataclass
class BatchPage:
    state: BatchState
    row: BatchRow
    fields: list[Field]
    parent_link: bool
    children: list[str]
    callbacks: list[CallbackRow]
    failed: list[FailedRow]
    #: Failures not listed (beyond `FAILED_SHOWN`).
    failed_more: int
    #: (jid, linkable) of the jobs not yet succeeded, `PENDING_SHOWN` at most.
    pending: list[tuple[str, bool]]
    #: True when the batch has more pending jobs than are listed.
    pending_more: bool
    problems: list[str] = field(default_factory=list)


def batch_page(bid: str, settings: Settings | None = None) -> BatchPage | None:
    """One batch, or None when there is no such batch (or it expired)."""
    batch = Batch(bid, settings)
    state = batch.state()
    if state is None:
        return None
    show_args = batch.settings.web_show_args
    fields = [Field(_("Batch"), state.bid)]
    if state.created_at is not None:
        fields.append(time_field(_("Created"), state.created_at))
    for label, value in (
        (_("Jobs"), state.total),
        (_("Succeeded"), state.succeeded),
        (_("Pending"), state.pending),
        (_("Not run yet"), state.remaining),
        (_("Failures"), state.failures),
        (_("Dead"), state.dead),
    ):
        fields.append(Field(str(label), display.number(value)))
    for label, moment in (
        (_("Completed"), state.complete_at),
        (_("Succeeded at"), state.success_at),
        (_("Died"), state.death_at),
        (_("Cancelled"), state.cancelled_at),
    ):
        if moment is not None:
            fields.append(time_field(str(label), moment))
    failed = sorted(state.failed.items(), key=lambda item: _when(item[1]), reverse=True)
    return BatchPage(
        state=state,
        row=_row(state),
        fields=fields,
        parent_link=linkable(state.parent),
        children=batch.children(state),
        callbacks=_callbacks(state, show_args),
        failed=[_failed(jid, failure) for jid, failure in failed[:FAILED_SHOWN]],
        failed_more=max(0, state.failing - FAILED_SHOWN, len(failed) - FAILED_SHOWN),
        pending=[(jid, linkable(jid)) for jid in state.pending_jids],
        pending_more=state.pending > len(state.pending_jids)
        and len(state.pending_jids) >= PENDING_SHOWN,
        problems=[str(BadKey(key, what)) for key, what in state.problems],
    )


def _when(failure: dict[str, Any]) -> float:
    at = failure.get("at")
    return float(at) if isinstance(at, (int, float)) and not isinstance(at, bool) else 0.0


def _failed(jid: str, failure: dict[str, Any]) -> FailedRow:
    error = str(failure.get("error_class") or "")
    if failure.get("error_message"):
        error = f"{error}: {failure['error_message']}"
    at = _when(failure)
    when = time_field("", at) if at else Field("", "")
    return FailedRow(jid, linkable(jid), str(failure.get("class") or ""), error, when)


def _callbacks(state: BatchState, show_args: bool) -> list[CallbackRow]:
    times = {"complete": state.complete_at, "success": state.success_at, "death": state.death_at}
    rows = []
    for kind, items in state.callbacks.items():
        word = str(CALLBACK_WORDS.get(kind, kind))
        at = times.get(kind)
        pushed = time_field("", at) if at is not None else Field("", "")
        for item in items:
            args = item.get("args")
            rows.append(
                CallbackRow(
                    kind=word,
                    job=str(item.get("display_class") or item.get("class") or ""),
                    args=display.args_text(args if isinstance(args, list) else [], show_args),
                    queue=str(item.get("queue") or ""),
                    pushed=pushed,
                )
            )
    return rows


def job_location(jid: str, settings: Settings | None = None) -> tuple[str, dict[str, str]] | None:
    """Where a batch's job waits or lies now, as the route of its job page and the route's
    arguments: the retry set, the dead set, the schedule, then each queue (searched inside
    Redis, in that order); None when it is in none of them (running, or done)."""
    for route, jobs in JOB_SETS:
        found = jobs(settings=settings).find_job(jid)
        if found is not None:
            return f"{route}_job", {"key": found.key}
    for queue in Queue.all(settings):
        if queue.find_job(jid) is not None:
            # A queue's row key is INDEX-JID; the job page looks for the jid from index 0 on.
            return "queue_job", {"queue": queue.name, "key": f"0-{jid}"}
    return None


def cancel_batch(
    form: Form, allowed: Allowed, bid: str = "", settings: Settings | None = None
) -> Outcome:
    """Cancel the batch after asking: its waiting jobs are removed (the ``delete``
    permission, as clearing a queue), the running ones see it cancelled."""
    if not allowed("delete"):
        raise Refused("delete")
    if form.get("action") != "cancel":
        return nothing_chosen()
    batch = Batch(bid, settings or get_settings())
    state = batch.state()
    if state is None:
        return Outcome(gettext("Batch %(bid)s is no longer here.") % {"bid": bid}, ok=False)
    if state.cancelled:
        return Outcome(gettext("Batch %(bid)s was cancelled already.") % {"bid": bid}, ok=False)
    if form.get("confirm") != "yes":
        question = gettext("Cancel batch %(name)s?") % {"name": state.description or bid}
        note = gettext(
            "Of its %(pending)s jobs not yet succeeded, those waiting in a queue, the schedule "
            "or the retry set are removed; jobs running now see the batch cancelled."
        ) % {"pending": display.number(state.pending)}
        return Outcome(question=question, fields={"action": "cancel"}, note=note)
    batch.cancel()
    return Outcome(gettext("Cancelled batch %(name)s.") % {"name": state.description or bid})
