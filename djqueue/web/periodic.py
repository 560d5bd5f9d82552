"""The Periodic page: every periodic job in Redis, one job's page, and enable / disable / run
now / delete, as sidekiq-cron's "Cron" tab offers them.

Entries are read through `djqueue.api.PeriodicSet`, so djqueue's declarations and a Ruby app's
sidekiq-cron entries list side by side; one whose ``cron`` text djqueue cannot read is listed
with the reason, never dropped, since an operator must still be able to see and delete it.
The list is not paged: a schedule holds tens of entries, not millions, and one pipeline reads
them all.

Deleting asks first, and says what the operator may not expect: an entry declared in code or
settings is written again by the next worker that starts, so deleting it only lasts until then.
"""

from __future__ import annotations

import datetime as dt
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..api import PeriodicJob, PeriodicSet
from ..api.periodic import BAD
from ..config import Settings, get_settings
from ..periodic_cron import parse_enqueue_time
from ..store import bad_keys
from ..store.periodic import BadPeriodicSet
from . import cron_words, display, i18n
from .actions import Action
from .forms import Allowed, Form, Outcome, Refused
from .i18n import gettext, ngettext
from .i18n import gettext_lazy as _
from .job import Field, time_field
from .problems import ProblemPage, advice, bad_key_title, problem


def _unused(n: int) -> str:
    """Entries are named in the messages, not counted (see `_done`)."""
    return ""


ENABLE = Action("enable", _("Enable"), "change", _unused, _unused)
DISABLE = Action("disable", _("Disable"), "change", _unused, _unused)
RUN_NOW = Action("run_now", _("Run now"), "change", _unused, _unused)
DELETE = Action("delete", _("Delete"), "delete", _unused, _unused)
#: The message after an action: with the names of the entries, and when none was changed.
DONE = {
    ENABLE.name: (_("Enabled %(names)s."), _("Enabled no periodic job.")),
    DISABLE.name: (_("Disabled %(names)s."), _("Disabled no periodic job.")),
    RUN_NOW.name: (_("Pushed %(names)s now."), _("Pushed no periodic job.")),
    DELETE.name: (_("Deleted %(names)s."), _("Deleted no periodic job.")),
}
ACTIONS = (ENABLE, DISABLE, RUN_NOW, DELETE)
#: Ticks shown on an entry's page.
UPCOMING = 5
#: Characters of an unreadable schedule's error shown in a list row (the page has it all).
ERROR_IN_LIST = 80
#: What an entry's origin is called: declared by djqueue code or settings, or anything else
#: (a Ruby app's sidekiq-cron, or written by hand).
DJQUEUE, ELSEWHERE = "djqueue", "sidekiq-cron"
#: What a bad entry shows where a readable one has a value: nothing in it can be trusted.
NONE = "—"
#: An entry's status as its tag reads.
STATUS_TEXT = {"enabled": _("enabled"), "disabled": _("disabled"), BAD: _("bad")}


@dataclass
class PeriodicRow:
    """One entry, every value already text."""

    name: str
    enabled: bool
    status: str
    cron: str
    #: The schedule in words ("Every day at 04:00"; `_reading`); empty when unreadable, and
    #: on a page in another language for a form the catalog does not read.
    schedule: str
    zone: str
    #: Why djqueue cannot read the ``cron`` text (such an entry never fires here), or empty.
    error: str
    job_name: str
    queue: str
    args: str
    description: str
    declared: bool
    #: "djqueue" or "sidekiq-cron"; empty for a bad entry, whose origin is unknown.
    origin: str
    last_run: str
    last_run_exact: str
    next_run: str
    next_run_exact: str
    #: The buttons its row offers: only Delete for a bad entry (nothing else can act on it).
    actions: list[Action] = field(default_factory=list)
    #: The last and next run as epoch seconds (None: never, or none to come).
    last_run_at: float | None = None
    next_run_at: float | None = None
    #: Why djqueue never fires it (`PeriodicJob.not_fired`, the worker's and CLI's words),
    #: or empty.
    not_fired: str = ""

    @property
    def bad(self) -> bool:
        return self.status == BAD

    @property
    def status_text(self) -> str:
        """The status as the page shows it, in the request's language."""
        return str(STATUS_TEXT.get(self.status, self.status))

    @property
    def error_short(self) -> str:
        """The error as a list row shows it: without the cron text (shown above it), cut."""
        text = self.error.removeprefix(f"{self.cron!r}: ")
        return text if len(text) <= ERROR_IN_LIST else text[: ERROR_IN_LIST - 1] + "…"


@dataclass
class PeriodicList:
    rows: list[PeriodicRow]
    enabled: int
    disabled: int
    #: Entries djqueue cannot read (status ``bad``), counted apart from the other two.
    bad: int
    show_args: bool
    actions: list[Action]
    #: Why no entry can be read at all (``cron_jobs`` of the wrong type), or empty.
    problem: str = ""


@dataclass
class Push:
    """One line of an entry's jid history: a push by a tick or by "run now"."""

    jid: str
    enqueued: str
    enqueued_exact: str
    #: The job's tracked state (`djqueue.lifecycle`), or empty when it is not tracked: only a
    #: tracked job has a page to link to.
    state: str
    #: The push time in UTC (ISO 8601), for a hover; empty when unreadable.
    enqueued_utc: str = ""


@dataclass
class PeriodicPage:
    row: PeriodicRow
    fields: list[Field]
    #: The next ticks as (UTC, the wall time in the schedule's zone or "" when UTC, relative);
    #: empty when the schedule is unreadable.
    upcoming: list[tuple[str, str, str]]
    #: The ``message`` sidekiq-cron pushes, as JSON, redacted like a job's payload.
    payload: str
    history: list[Push]
    actions: list[Action] = field(default_factory=lambda: list(ACTIONS))
    #: For a bad entry: its key, what it holds and what to do, as a bad-key page says them.
    banner: ProblemPage | None = None


def origin(entry: PeriodicJob) -> str:
    return DJQUEUE if entry.declared else ELSEWHERE


def row_actions(entry: PeriodicJob) -> list[Action]:
    """What can be done to an entry: Enable or Disable (whichever changes it), Run now and
    Delete; only Delete for a bad one, which djqueue can neither fire nor trust."""
    if entry.bad:
        return [DELETE]
    return [DISABLE if entry.enabled else ENABLE, RUN_NOW, DELETE]


def periodic_row(entry: PeriodicJob, show_args: bool, now: float) -> PeriodicRow:
    schedule = entry.schedule
    last, upcoming = entry.last_run, entry.next_run(now)
    bad = entry.bad
    queue = entry.message.get("queue") if bad else entry.queue
    return PeriodicRow(
        name=entry.name,
        enabled=entry.enabled,
        status=entry.status,
        cron=entry.cron or NONE,
        schedule=_reading(entry),
        zone=schedule.zone_name if schedule else "",
        error=entry.error,
        job_name=entry.klass or NONE,
        queue=queue if isinstance(queue, str) and queue else NONE,
        args=display.args_text(entry.args, show_args) if not bad or entry.args else NONE,
        description=entry.description,
        declared=entry.declared,
        origin="" if bad and not entry.declared else origin(entry),
        last_run=display.relative(last, now),
        last_run_exact=display.exact(last),
        next_run=display.relative(upcoming, now),
        next_run_exact=display.exact(upcoming),
        actions=row_actions(entry),
        last_run_at=last,
        next_run_at=upcoming,
        not_fired=entry.not_fired,
    )


def _reading(entry: PeriodicJob) -> str:
    """The schedule read aloud, without the zone (the page shows it beside): the common forms
    through the catalog (`cron_words`), in the page's language; any other form in cronsim's
    English on an English page, and not at all on a page in another language (the cron text
    alone rather than mixed languages)."""
    if entry.schedule is None:
        return ""
    words = cron_words.reading(entry.schedule)
    if words or i18n.current() != i18n.SOURCE:
        return words
    text = entry.schedule.describe()
    suffix = f" ({entry.schedule.zone_name})"
    return text.removesuffix(suffix) if entry.schedule.zone_name != "UTC" else text


def periodic_list(settings: Settings | None = None) -> PeriodicList:
    """Every entry, by name (two round trips however many there are)."""
    show_args = (settings or get_settings()).web_show_args
    now = time.time()
    try:
        entries = PeriodicSet(settings=settings).all()
    except BadPeriodicSet as exc:
        return PeriodicList([], 0, 0, 0, show_args, list(ACTIONS), problem=str(exc))
    rows = [periodic_row(e, show_args, now) for e in entries]
    enabled, bad = sum(r.enabled for r in rows), sum(r.bad for r in rows)
    return PeriodicList(rows, enabled, len(rows) - enabled - bad, bad, show_args, list(ACTIONS))


def periodic_page(name: str, settings: Settings | None = None) -> PeriodicPage | None:
    """One entry's page, or None when there is no such entry (deleted, or a mistyped URL)."""
    entry = PeriodicSet(settings=settings).find(name)
    if entry is None:
        return None
    show_args = entry.settings.web_show_args
    now = time.time()
    row = periodic_row(entry, show_args, now)
    upcoming = []
    if entry.schedule is not None:
        zone = entry.schedule.zone if entry.schedule.zone_name != "UTC" else None
        upcoming = [
            (display.timestamp(t), _wall_time(t, zone), display.relative(t, now))
            for t in entry.schedule.upcoming(now, UPCOMING)
        ]
    payload = display.payload_text(entry.message, show_args) if entry.message else ""
    return PeriodicPage(
        row=row,
        fields=_fields(entry, row),
        upcoming=upcoming,
        payload=payload or entry.fields.get("message", ""),
        history=_history(entry, now),
        actions=row.actions,
        banner=_banner(entry) if row.bad else None,
    )


def _banner(entry: PeriodicJob) -> ProblemPage:
    """A bad entry's page names its key and what it holds, as a bad-key page does."""
    key = entry.key
    what = bad_keys.kind_problem(entry.held, "hash") or f"cannot be read: {entry.error}"
    return ProblemPage(bad_key_title(key), problem(key, what), advice(key, entry.held))


def _wall_time(at: float, zone: dt.tzinfo | None) -> str:
    """A tick as the schedule's own zone reads it (the zone the cron text is written in)."""
    if zone is None:
        return ""
    return dt.datetime.fromtimestamp(at, zone).strftime("%Y-%m-%d %H:%M:%S %Z")


def _fields(entry: PeriodicJob, row: PeriodicRow) -> list[Field]:
    found = [
        Field(_("Name"), row.name),
        Field(_("Status"), row.status_text),
        Field(_("Cron"), row.cron),
    ]
    if row.error:
        found.append(Field(_("Error"), row.error))
    else:
        if row.schedule:
            found.append(Field(_("Schedule"), row.schedule))
        found.append(Field(_("Time zone"), row.zone))
    found += [
        Field(_("Job"), row.job_name),
        Field(_("Queue"), row.queue),
        Field(_("Arguments"), row.args),
    ]
    if row.description:
        found.append(Field(_("Description"), row.description))
    if not row.bad:  # a bad entry's origin and catch-up are unknown, not defaults
        declared = (
            gettext("djqueue (code or settings)")
            if row.declared
            else gettext("elsewhere (sidekiq-cron, Ruby)")
        )
        found.append(Field(_("Declared in"), declared))
        catch_up = gettext("yes") if entry.catch_up else gettext("no: missed ticks are skipped")
        found.append(Field(_("Catch up"), catch_up))
    if row.last_run_at is not None and row.last_run_exact:
        found.append(time_field(_("Last run"), row.last_run_at))
    else:
        found.append(Field(_("Last run"), NONE if row.bad else gettext("never")))
    if row.next_run_at is not None and row.next_run_exact:
        found.append(time_field(_("Next run"), row.next_run_at))
    else:
        found.append(Field(_("Next run"), _no_next(row)))
    return found


def _no_next(row: PeriodicRow) -> str:
    if row.error:
        return gettext("never: not fired by djqueue")
    return gettext("none while disabled") if not row.enabled else ""


def _comes_back() -> str:
    return gettext("declared in code or settings, so the next worker to start writes it again")


def _history(entry: PeriodicJob, now: float) -> list[Push]:
    """The jid history, with each job's tracked state read in one pipeline."""
    pushes = [(str(h.get("jid") or ""), h.get("enqueued")) for h in entry.history()]
    found = entry.states([jid for jid, _ in pushes])
    history = []
    for (jid, enqueued), state in zip(pushes, found, strict=True):
        at = parse_enqueue_time(enqueued) if isinstance(enqueued, str) else None
        history.append(
            Push(
                jid=jid,
                enqueued=display.relative(at, now),
                enqueued_exact=display.timestamp(at) or str(enqueued or ""),
                enqueued_utc=display.iso(at),
                state=state if jid else "",
            )
        )
    return history


# -- actions ------------------------------------------------------------------------------------


def find_action(name: str) -> Action | None:
    return next((a for a in ACTIONS if a.name == name), None)


def periodic_action(
    form: Form, allowed: Allowed, name: str = "", settings: Settings | None = None
) -> Outcome:
    """A POST from the list or from an entry's page (``name``). The list sends either one
    row's button, ``row_action`` = ``"ACTION:NAME"``, or the action menu (``action``) with the
    ticked rows (``_selected_action``); an entry's page sends ``action``. Delete asks first,
    and the answer names the entries in ``names`` (a JSON list: a name may hold any
    character)."""
    row_action = str(form.get("row_action") or "")
    if row_action:
        chosen, _, picked = row_action.partition(":")
        names = [picked]
    else:
        chosen = str(form.get("action") or "")
        names = [name] if name else [str(n) for n in form.getlist("_selected_action")]
        if not name and form.get("names"):  # the delete question's answer
            names = _names(str(form.get("names")))
    action = find_action(chosen)
    if action is None:
        return Outcome(gettext("No action was chosen. Nothing was changed."), ok=False)
    if not allowed(action.permission):
        raise Refused(action.permission)
    names = [n for n in dict.fromkeys(names) if n]
    if not names:
        text = gettext("Periodic jobs must be selected to act on them. Nothing was changed.")
        return Outcome(text, False)
    periodic = PeriodicSet(settings=settings)
    entries = [e for e in (periodic.find(n) for n in names) if e is not None]
    gone = [n for n in names if n not in {e.name for e in entries}]
    if action is DELETE and form.get("confirm") != "yes" and entries:
        return _ask_delete(entries, name)
    bad = [e.name for e in entries if e.bad and action is not DELETE]
    done = _apply(action, [e for e in entries if e.name not in bad])
    text = _done(action, done) if done or not bad else ""
    if bad:
        text += " " + ngettext(
            "Skipped %(names)s: djqueue cannot read it, so it can only be deleted.",
            "Skipped %(names)s: djqueue cannot read them, so they can only be deleted.",
            len(bad),
        ) % {"names": ", ".join(bad)}
    if gone:
        text += " " + gettext("No longer there: %(names)s.") % {"names": ", ".join(gone)}
    return Outcome(text.strip(), ok=not gone and len(done) == len(entries))


def _ask_delete(entries: Sequence[PeriodicJob], name: str) -> Outcome:
    names = [e.name for e in entries]
    question = (
        gettext("Delete the periodic job %(name)s?") % {"name": names[0]}
        if len(names) == 1
        else gettext("Delete %(n)s periodic jobs: %(names)s?")
        % {"n": len(names), "names": ", ".join(names)}
    )
    declared = [e.name for e in entries if e.declared]
    note = ""
    if len(names) == 1 and declared:
        note = gettext(
            "It is declared in code or settings, so the next worker to start writes it again. "
            "Remove the declaration to retire it for good."
        )
    elif declared:
        note = gettext(
            "%(names)s: each is declared in code or settings, so the next worker to start "
            "writes it again."
        ) % {"names": ", ".join(declared)}
    fields = {"action": DELETE.name}
    if not name:
        fields["names"] = json.dumps(names)
    return Outcome(question=question, fields=fields, note=note)


def _names(text: str) -> list[str]:
    try:
        found = json.loads(text)
    except ValueError:
        return []
    return [str(n) for n in found] if isinstance(found, list) else []


def _apply(action: Action, entries: Sequence[PeriodicJob]) -> list[tuple[str, str]]:
    """Run the action on each entry; (name, jid or "") of those it was done to."""
    done = []
    for entry in entries:
        if action is RUN_NOW:
            jid = entry.run_now()
            if jid:
                done.append((entry.name, jid))
        elif (action is ENABLE and entry.enable()) or (action is DISABLE and entry.disable()):
            done.append((entry.name, ""))
        elif action is DELETE and entry.delete():
            done.append((entry.name, "*" if entry.declared else ""))
    return done


def _done(action: Action, done: list[tuple[str, str]]) -> str:
    some, none = DONE[action.name]
    if not done:
        return str(none)
    if action is RUN_NOW:
        pushed = ", ".join(f"{n} (jid {jid})" for n, jid in done)
        return str(some) % {"names": pushed}
    text = str(some) % {"names": ", ".join(n for n, _mark in done)}
    if action is DELETE:
        back = [n for n, mark in done if mark]
        if back:
            text += f" {', '.join(back)}: {_comes_back()}."
    return text
