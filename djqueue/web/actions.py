"""Actions on the jobs of a list: on the selected rows, or on every job the list shows.

Each action goes through the inspection API, whose moves are atomic in Redis, so two admins
clicking at once or an admin racing a worker never run a job twice. A selected job that has
moved since the page was drawn (a worker took it, the poller ran it, someone else retried it)
is counted as gone and named in the message rather than failing the whole action.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..api import JobRecord, Queue, RetrySet, SortedEntry, SortedSet
from ..store.listing import Filter
from .i18n import gettext_lazy as _
from .i18n import ngettext

if TYPE_CHECKING:
    from ..config import Settings

#: How far past its drawn index a selected queue job is looked for: jobs pushed since the
#: page was drawn move it that way (workers take from the other end).
QUEUE_DRIFT = 1000


@dataclass(frozen=True)
class Action:
    name: str
    label: str  # marked with gettext_lazy: read in the request's language
    #: ``"change"`` or ``"delete"``: the permission a renderer checks.
    permission: str
    #: The message after acting on ``n`` jobs ("Retried 3 jobs."), in the request's language:
    #: a function so that each language picks its own plural form.
    done: Callable[[int], str]
    #: The question before acting on all ``n`` jobs of a list.
    question: Callable[[int], str]

    def confirm(self, total: int) -> str:
        return self.question(total)


def _n(n: int) -> dict[str, str]:
    return {"n": f"{n:,}"}


RETRY = Action(
    "retry",
    _("Retry now"),
    "change",
    lambda n: ngettext("Retried %(n)s job.", "Retried %(n)s jobs.", n) % _n(n),
    lambda n: ngettext("Retry %(n)s job now?", "Retry all %(n)s jobs now?", n) % _n(n),
)
RUN_NOW = Action(
    "add_to_queue",
    _("Run now"),
    "change",
    lambda n: (
        ngettext("Added %(n)s job to its queue.", "Added %(n)s jobs to their queues.", n) % _n(n)
    ),
    lambda n: ngettext("Run %(n)s job now?", "Run all %(n)s jobs now?", n) % _n(n),
)
KILL = Action(
    "kill",
    _("Kill"),
    "change",
    lambda n: ngettext("Killed %(n)s job.", "Killed %(n)s jobs.", n) % _n(n),
    lambda n: ngettext("Kill %(n)s job?", "Kill all %(n)s jobs?", n) % _n(n),
)
DELETE = Action(
    "delete",
    _("Delete"),
    "delete",
    lambda n: ngettext("Deleted %(n)s job.", "Deleted %(n)s jobs.", n) % _n(n),
    lambda n: ngettext("Delete %(n)s job?", "Delete all %(n)s jobs?", n) % _n(n),
)

ACTIONS: dict[str, tuple[Action, ...]] = {
    "queue": (DELETE,),
    "scheduled": (RUN_NOW, DELETE),
    "retries": (RETRY, KILL, DELETE),
    "dead": (RETRY, DELETE),
}


def actions_for(kind: str) -> list[Action]:
    return list(ACTIONS[kind])


def permitted(actions: Sequence[Action], allowed: Callable[[str], bool]) -> list[Action]:
    """The actions a user may run (``allowed("change")`` / ``allowed("delete")``)."""
    return [a for a in actions if allowed(a.permission)]


def find_action(kind: str, name: str) -> Action:
    for action in ACTIONS.get(kind, ()):
        if action.name == name:
            return action
    raise ValueError(f"no action {name!r} on {kind}")


@dataclass
class ActionResult:
    action: Action
    #: Jobs selected, or None when the action was on every job of the list.
    asked: int | None
    done: int
    #: Selected jobs that had moved before the action ran.
    gone: int = 0
    #: Selected entries that are not jobs (bad JSON): they can be deleted, not retried.
    not_jobs: int = 0

    @property
    def ok(self) -> bool:
        return not self.gone and not self.not_jobs

    @property
    def message(self) -> str:
        text = self.action.done(self.done)
        if self.gone:
            text += " " + ngettext(
                "%(gone)s of the %(asked)s selected was no longer there: "
                "run, moved or deleted since the page was shown.",
                "%(gone)s of the %(asked)s selected were no longer there: "
                "run, moved or deleted since the page was shown.",
                self.gone,
            ) % {"gone": f"{self.gone:,}", "asked": f"{self.asked or 0:,}"}
        if self.not_jobs:
            text += " " + ngettext(
                "%(n)s selected entry is not a job and stayed (delete it instead).",
                "%(n)s selected entries are not a job and stayed (delete them instead).",
                self.not_jobs,
            ) % _n(self.not_jobs)
        return text


def run(
    kind: str,
    name: str,
    keys: Sequence[str] = (),
    every: bool = False,
    keep: Filter | None = None,
    queue: str = "",
    settings: Settings | None = None,
) -> ActionResult:
    """Apply action ``name`` to the rows named by ``keys`` (`Row.key`), or with ``every`` to
    every job the list shows (all of it, or what ``keep`` matches)."""
    action = find_action(kind, name)
    keep = keep or Filter()
    if kind == "queue":
        where = Queue(queue, settings=settings)
        if every:
            done = where.delete_matching(keep) if keep else where.clear()
            return ActionResult(action, None, done)
        records = queue_records(where, keys)
        done = where.delete_records(records)
        return ActionResult(action, len(keys), done, gone=len(keys) - done)
    from .lists import SETS

    jobs = SETS[kind](settings=settings)
    apply = _set_action(jobs, action)
    if every:
        if keep:
            return ActionResult(action, None, jobs.each_match(keep, apply))
        return ActionResult(action, None, _all(jobs, action))
    entries = [e for e in (jobs.entry(key) for key in keys) if e is not None]
    not_jobs = 0
    if action in (RETRY, RUN_NOW):  # a push needs a job; kill and delete move anything
        not_jobs = sum(1 for e in entries if e.is_malformed or not e.job_name)
    done = apply(entries)
    return ActionResult(action, len(keys), done, gone=len(keys) - len(entries), not_jobs=not_jobs)


def _set_action(jobs: SortedSet, action: Action) -> Callable[[list[SortedEntry]], int]:
    if action is RETRY:
        return lambda entries: jobs.requeue(entries, decrement=True)
    if action is RUN_NOW:
        return lambda entries: jobs.requeue(entries, decrement=False)
    if action is KILL:
        return jobs.kill_entries
    return jobs.delete_entries


def _all(jobs: SortedSet, action: Action) -> int:
    """Every entry, through the set's own "all" methods."""
    if action is DELETE:
        return jobs.clear()
    if action is KILL and isinstance(jobs, RetrySet):
        return jobs.kill_all()
    if action is RETRY:
        return int(jobs.retry_all())  # type: ignore[attr-defined]
    return int(jobs.add_all_to_queue())  # type: ignore[attr-defined]


def queue_records(queue: Queue, keys: Sequence[str]) -> list[JobRecord]:
    """The selected jobs still in the queue. A key is "INDEX-JID" (or "INDEX-~DIGEST" for an
    entry without a jid): the job is looked for from its drawn index on (one LRANGE: pushes
    since move it that way), then, by jid, anywhere in the queue."""
    wanted: dict[str, int] = {}
    for key in keys:
        index, _, name = key.partition("-")
        if name:
            wanted[name] = int(index) if index.isdigit() else 0
    if not wanted:
        return []
    low = min(wanted.values())
    window = queue.jobs(low, max(wanted.values()) - low + QUEUE_DRIFT)
    found = {r.name: r for r in window if r.name in wanted}
    for name in wanted.keys() - found.keys():
        record = None if name.startswith("~") else queue.find_job(name)
        if record is not None:
            found[name] = record
    return list(found.values())
