"""A tracked job's lifecycle on the admin's and the dashboard's pages: the rows of its job page,
and the page the 'find job by jid' box answers with.

Both read the job's status hash (`djqueue.lifecycle.status`, one HGETALL), so finding a job by
its jid never scans a queue or a set; a job pushed without a ``retention`` has no status, and
the page says so.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import connection, lifecycle
from ..config import Settings, get_settings
from ..errors import BadKey
from . import display
from .i18n import gettext
from .i18n import gettext_lazy as _
from .job import Field, linkable, time_field

#: A jid as djqueue and Sidekiq write it: 24 hex characters (others may push other strings).
MAX_JID = 100


@dataclass
class StatusPage:
    jid: str
    #: One of `djqueue.lifecycle.STATES`; "unknown" when there is no status.
    state: str
    job_name: str
    fields: list[Field]
    #: The arguments as pushed, as the job pages show them ("" when unknown).
    args: str
    #: What is wrong with the status hash, one line each (`djqueue.lifecycle.JobStatus`).
    problems: tuple[str, ...] = ()
    #: The job's batch (its payload's ``bid``), else empty; linked when `bid_link`.
    bid: str = ""
    bid_link: bool = False


def lifecycle_fields(st: lifecycle.JobStatus) -> list[Field]:
    """The rows of a tracked job's lifecycle; empty when it has none."""
    if st.state == "unknown":
        return []
    state = gettext("%(state)s (cancel requested)") if st.cancel_requested else "%(state)s"
    rows = [Field(_("State"), state % {"state": st.state})]
    for label, value in (
        (_("Scheduled for"), st.scheduled_at),
        (_("Enqueued"), st.enqueued_at),
        (_("Started"), st.started_at),
        (_("Retry at"), st.retry_at),
        (_("Finished"), st.finished_at),
    ):
        if value is not None:
            rows.append(time_field(label, value))
    rows.append(Field(_("Attempts"), str(st.attempts)))
    if st.process:
        rows.append(Field(_("Process"), st.process))
    if st.error_class:
        rows.append(Field(_("Last error"), f"{st.error_class}: {st.error_message or ''}"))
    if st.state == "completed":
        rows.append(Field(_("Result"), st.result_json or "null"))
    if st.retention:
        kept = gettext("%(time)s once finished") % {"time": display.span(st.retention)}
        rows.append(Field(_("Kept for"), kept))
    return rows


def job_lifecycle(jid: str, settings: Settings | None = None) -> list[Field]:
    """The lifecycle rows of the job ``jid`` (a job page shows them when there are any)."""
    if not jid:
        return []
    with connection.translate_errors(settings or get_settings()):
        try:
            st = lifecycle.status(jid, settings)
        except BadKey as exc:  # the job is shown all the same; only its status is unreadable
            return [Field(_("Status"), str(exc))]
    return lifecycle_fields(st) + [Field(_("Status"), line) for line in st.problems]


def status_page(jid: str, settings: Settings | None = None) -> StatusPage:
    """The answer to 'find job by jid'."""
    jid = jid.strip()[:MAX_JID]
    with connection.translate_errors(settings or get_settings()):
        st = lifecycle.status(jid, settings) if jid else lifecycle.JobStatus(jid, "unknown")
    show = (settings or get_settings()).web_show_args
    args = st.args
    return StatusPage(
        jid=jid,
        state=st.state,
        job_name=st.job_class or "",
        fields=lifecycle_fields(st),
        args=display.args_text(args, show, limit=None) if args is not None else "",
        problems=st.problems,
        bid=st.bid,
        bid_link=linkable(st.bid),
    )
