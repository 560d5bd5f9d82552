"""One job's page: every field, the whole payload, the decoded backtrace, what can be done.

A job page is named by the list it was found in and the row's key. When the job has moved
since (it ran, was retried, was deleted), `job_page` returns None and the renderer says so,
as Sidekiq's Web UI does, instead of an error.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from typing import Any

from .. import connection
from ..api import JobRecord, Queue, SortedEntry, SortedSet
from ..config import Settings, get_settings
from ..store import Keys
from ..store.unique import Lock, read_lock
from . import display
from .actions import Action, actions_for, queue_records
from .frames import Frame, frames
from .i18n import gettext
from .i18n import gettext_lazy as _
from .lists import WHEN, list_title, source

#: An id that can sit in a URL path as it is (`linkable`).
LINKABLE = re.compile(r"[A-Za-z0-9_-]{1,100}")


@dataclass
class Field:
    label: str
    value: str
    #: Exact form of a time (shown on hover), or empty.
    title: str = ""


@dataclass
class JobPage:
    kind: str
    key: str
    list_title: str
    queue_name: str
    jid: str
    job_name: str
    fields: list[Field]
    payload: str
    #: The stored backtrace, innermost frame first (`djqueue.web.frames`).
    frames: list[Frame]
    error: str
    problem: str
    actions: list[Action]
    #: The job's lifecycle when it is tracked (`djqueue.web.lifecycle`), else empty.
    lifecycle: list[Field] = field(default_factory=list)
    #: The batch the job belongs to (its payload's ``bid``), else empty.
    bid: str = ""
    #: Whether ``bid`` can be linked to its batch's page (`linkable`).
    bid_link: bool = False


def job_page(
    kind: str, key: str, queue: str = "", settings: Settings | None = None
) -> JobPage | None:
    """The job named by ``key`` in a list, or None when it is no longer there."""
    where = source(kind, queue, settings)
    record = find(where, key)
    if record is None:
        return None
    show_args = where.settings.web_show_args
    rows: list[Field] = [
        Field(_("Job"), record.display_name or gettext("(none)")),
        Field(_("JID"), record.jid or ""),
        Field(_("Queue"), record.queue or ""),
        Field(_("Arguments"), display.args_text(record.display_args, show_args, limit=None)),
    ]
    if record.display_name != record.job_name and record.job_name:
        rows.insert(1, Field(_("Class"), record.job_name))
    if isinstance(record, SortedEntry):
        rows.append(_time(WHEN[kind], record.at))
    for label, value in (
        (_("Created"), record.created_at),
        (_("Enqueued"), record.enqueued_at),
        (_("Failed"), record.failed_at),
        (_("Retried"), record.retried_at),
    ):
        if value is not None:
            rows.append(_time(label, value))
    if record.retry_count is not None:
        rows.append(Field(_("Retry count"), str(record.retry_count)))
    retry = record.item.get("retry")  # SortedEntry.retry is the action
    if retry is not None:
        rows.append(Field(_("Retry"), json.dumps(retry)))
    if record.tags:
        rows.append(Field(_("Tags"), ",, ".join(record.tags)))
    rows += unique_fields(record.item, record.jid or "", settings)
    error = f"{record.error_class}: {record.error_message or ''}" if record.has_error else ""
    problem = record.parse_error or (gettext("not a job") if record.is_malformed else "")
    payload = display.payload_text(record.item, show_args) if record.item else record.value
    bid = record.item.get("bid") if record.item else None
    bid = bid if isinstance(bid, str) else ""
    return JobPage(
        kind=kind,
        key=key,
        list_title=list_title(kind, queue),
        queue_name=queue,
        jid=record.jid or "",
        job_name=record.display_name or gettext("(none)"),
        fields=rows,
        payload=payload,
        frames=frames(record.error_backtrace or []),
        error=error,
        problem=problem,
        actions=actions_for(kind),
        lifecycle=_lifecycle(record.jid or "", settings),
        bid=bid,
        bid_link=linkable(bid),
    )


def unique_lock(payload: dict[str, Any], settings: Settings | None = None) -> Lock | None:
    """The lock of a unique job (a payload with ``unique_digest``, `djqueue.unique`) as Redis
    holds it now; None for a job that is not unique. Raises `djqueue.RedisUnavailable` when
    Redis cannot be reached."""
    digest = payload.get("unique_digest")
    if not isinstance(digest, str) or not digest:
        return None
    settings = settings or get_settings()
    with connection.translate_errors(settings):
        return read_lock(connection.get_redis(settings), Keys(settings.namespace), digest)


def unique_fields(item: dict[str, Any], jid: str, settings: Settings | None) -> list[Field]:
    """A unique job's rows (`djqueue.unique`): its rule, and its lock as Redis holds it now
    (one round trip, only for a unique job); empty for any other job."""
    found = unique_lock(item, settings)
    if found is None:
        return []
    start = item.get("unique_until") == "start"
    seconds = item.get("unique_for")
    if isinstance(seconds, (int, float)):
        rule = (
            gettext("until it starts, for %(span)s at most")
            if start
            else gettext("until it succeeds, for %(span)s at most")
        ) % {"span": display.span(seconds)}
    else:
        rule = gettext("until it starts") if start else gettext("until it succeeds")
    rows = [Field(gettext("Unique"), rule)]
    label = gettext("Unique lock")
    if found.problem:
        rows.append(Field(label, found.problem))
    elif not found.holder:
        rows.append(Field(label, gettext("free: a push of the same job would be accepted")))
    elif found.holder == jid:
        rows.append(Field(label, gettext("held by this job")))
    else:
        rows.append(Field(label, gettext("held by job %(jid)s") % {"jid": found.holder}))
    if found.holder and not found.problem and found.ttl is not None:
        rows.append(time_field(gettext("Unique lock expires"), time.time() + found.ttl))
    return rows


def linkable(name: str | None) -> bool:
    """Whether a batch id or a jid can sit in a URL path as it is, and so be a link (djqueue's
    are hex, Sidekiq Pro's batch ids URL-safe base64); any other is shown as text."""
    return bool(name) and LINKABLE.fullmatch(name or "") is not None


def _lifecycle(jid: str, settings: Settings | None) -> list[Field]:
    from .lifecycle import job_lifecycle

    return job_lifecycle(jid, settings)


def find(where: Queue | SortedSet, key: str) -> JobRecord | None:
    """The record a row key names: "SCORE-JID" in a set, "INDEX-JID" in a queue."""
    if isinstance(where, Queue):
        found = queue_records(where, [key])
        return found[0] if found else None
    return where.entry(key)


def time_field(label: str, value: float) -> Field:
    """A time as the job pages show it: when, how long ago, and the exact form on hover."""
    return _time(label, value)


def _time(label: str, value: float) -> Field:
    text = f"{display.timestamp(value)} ({display.relative(value)})"
    return Field(label, text, display.iso(value))
