"""What a submitted form asks for, and what the page does about it.

Both UIs post the same forms (the field names of Django's changelist: ``action``,
``_selected_action``, ``select_across``, and ``confirm`` on the question page) and hand them
here with a permission check of their own. The answer is an `Outcome`: a question to ask
first, or a message to show after redirecting back. A refused permission raises `Refused`,
which the renderer answers with 403.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..api import Queue
from ..config import Settings, get_settings
from . import busy
from .actions import DELETE, Action, find_action, run
from .i18n import gettext, ngettext
from .lists import list_filter, match_count
from .query import ListQuery

#: ``allowed("change")`` / ``allowed("delete")``: may the user do that?
Allowed = Callable[[str], bool]


class Form(Protocol):
    """A submitted form: Django's ``QueryDict`` and Werkzeug's ``MultiDict`` both fit."""

    def get(self, key: str, default: Any = None) -> Any: ...

    def getlist(self, key: str) -> list[Any]: ...


class Refused(Exception):
    """The user may see the page but not do this."""


@dataclass
class Outcome:
    message: str = ""
    ok: bool = True
    #: Ask this first; the answer re-posts `fields` with ``confirm=yes`` (a list: the field
    #: repeated, as the ticked rows' ``_selected_action``).
    question: str = ""
    fields: Mapping[str, str | list[str]] = field(default_factory=dict)
    #: What the question page adds below the question (what the answer will and won't do).
    note: str = ""


def nothing_chosen() -> Outcome:
    """The answer to a form that names no action (in the request's language)."""
    return Outcome(gettext("No action was chosen. Nothing was changed."), ok=False)


def _need(allowed: Allowed, permission: str) -> None:
    if not allowed(permission):
        raise Refused(permission)


def _chosen(kind: str, form: Form, allowed: Allowed) -> Action | None:
    """The action the form names, if the user may run it (`Refused` if not)."""
    try:
        action = find_action(kind, form.get("action") or "")
    except ValueError:
        return None
    _need(allowed, action.permission)
    return action


def list_action(
    kind: str,
    form: Form,
    params: ListQuery,
    allowed: Allowed,
    queue: str = "",
    settings: Settings | None = None,
) -> Outcome:
    """An action on the selected rows of a list, or on every job it shows (asked first)."""
    action = _chosen(kind, form, allowed)
    if action is None:
        return nothing_chosen()
    keys = [str(k) for k in form.getlist("_selected_action")]
    every = form.get("select_across") == "1"
    if not keys and not every:
        text = gettext("Jobs must be selected in order to act on them. Nothing was changed.")
        return Outcome(text, False)
    if action is DELETE and not every and form.get("confirm") != "yes":
        # As Django's own "Delete selected": deleting is the one action that loses the job.
        count = len(keys)
        question = ngettext(
            "Delete the %(n)s selected job?", "Delete the %(n)s selected jobs?", count
        ) % {"n": f"{count:,}"}
        ticked: dict[str, str | list[str]] = {"action": action.name, "_selected_action": keys}
        return Outcome(question=question, fields=ticked)
    if every and form.get("confirm") != "yes":
        total = match_count(kind, params, queue=queue, settings=settings)
        fields = {"action": action.name, "select_across": "1"}
        return Outcome(question=action.confirm(total), fields=fields)
    keep = list_filter(kind, params, settings or get_settings())
    result = run(kind, action.name, keys, every, keep, queue=queue, settings=settings)
    return Outcome(result.message, result.ok)


def job_action(
    kind: str,
    key: str,
    form: Form,
    allowed: Allowed,
    queue: str = "",
    settings: Settings | None = None,
) -> Outcome:
    """An action from one job's page; Delete asks first, as the list's does."""
    action = _chosen(kind, form, allowed)
    if action is None:
        return nothing_chosen()
    if action is DELETE and form.get("confirm") != "yes":
        return Outcome(question=gettext("Delete this job?"), fields={"action": action.name})
    result = run(kind, action.name, [key], queue=queue, settings=settings)
    return Outcome(result.message, result.ok)


def clear_queue(form: Form, allowed: Allowed, settings: Settings | None = None) -> Outcome:
    """Clear the queue the form names, after asking."""
    _need(allowed, "delete")
    name = str(form.get("queue") or "")
    queue = Queue(name, settings=settings)
    if form.get("confirm") != "yes":
        size = queue.size
        question = ngettext(
            "Clear queue %(name)s: delete its %(n)s job?",
            "Clear queue %(name)s: delete all %(n)s of its jobs?",
            size,
        ) % {"name": name, "n": f"{size:,}"}
        return Outcome(question=question, fields={"queue": name})
    count = queue.clear()
    return Outcome(
        ngettext(
            "Cleared queue %(name)s: deleted %(n)s job.",
            "Cleared queue %(name)s: deleted %(n)s jobs.",
            count,
        )
        % {"name": name, "n": f"{count:,}"}
    )


#: What a pause form may ask for.
PAUSE_ACTIONS = ("pause", "resume")


def pause_queue(
    form: Form, allowed: Allowed, queue: str = "", settings: Settings | None = None
) -> Outcome:
    """Pause or resume (``action``) the queue the form names, or ``queue`` on its own page.
    Nothing is lost either way, so nothing is asked first."""
    _need(allowed, "change")
    action = form.get("action") or ""
    if action not in PAUSE_ACTIONS:
        return nothing_chosen()
    name = queue or str(form.get("queue") or "")
    where = Queue(name, settings=settings)
    beat = f"{where.settings.heartbeat_interval:g} s"
    if action == "pause":
        where.pause()
        return Outcome(
            gettext(
                "Paused queue %(name)s: workers take no job from it within %(beat)s. "
                "Its jobs stay, and new ones still land in it."
            )
            % {"name": name, "beat": beat}
        )
    where.resume()
    text = gettext("Resumed queue %(name)s: workers take its jobs again within %(beat)s.")
    return Outcome(text % {"name": name, "beat": beat})


def signal_processes(form: Form, allowed: Allowed, settings: Settings | None = None) -> Outcome:
    """Quiet or stop one process (``identity``) or all of them."""
    _need(allowed, "change")
    action = form.get("action") or ""
    if action not in busy.SIGNALS:
        return nothing_chosen()
    identity = form.get("identity") or None
    if identity is None and form.get("confirm") != "yes":
        if action == "quiet":
            question = gettext("Quiet every worker process?")
        else:
            question = gettext("Stop every worker process?")
        return Outcome(question=question, fields={"action": action})
    sent, message = busy.signal(action, identity, settings)
    return Outcome(message, ok=bool(sent))
