"""The allow-list: which job names this process will run.

A payload names its job by a string. Nothing is ever imported from that string: a job runs
only if code in this process registered it (by decorating it), which keeps a writable Redis
from becoming a way to run arbitrary code.
"""

from __future__ import annotations

import threading
from typing import Any

from .errors import DuplicateJobName, UnknownJob

_lock = threading.Lock()
_jobs: dict[str, Any] = {}

#: Where this process's jobs are imported, as the messages about a missing job say it: the
#: plain worker's ``-r``, unless a framework's worker named its own way (`set_imported_where`).
DEFAULT_WHERE = "with -r MODULE (Django: in an app's jobs.py)"
_where = DEFAULT_WHERE


def set_imported_where(where: str | None) -> None:
    """How a user of this process's framework gets a job imported, completing "import the
    module that defines it ..." (Flask: where the app is made); None: the default."""
    global _where
    _where = where or DEFAULT_WHERE


def missing_hint(what: str = "the module that defines it") -> str:
    """``import WHAT <where>``: the advice of every message about a job that is not
    registered (an unknown name in a payload, a worker with no jobs)."""
    return f"import {what} {_where}"


def register(name: str, definition: Any) -> None:
    """Record ``definition`` under ``name``; a second, different job with that name is refused.

    Registering the same object again (a module imported twice under one name) is allowed, and
    so is a redefinition from the same module and qualified name (a reloaded module). Two
    functions made by one factory share a qualified name (``make.<locals>.run``) but are two
    jobs, so that case is refused like any other collision.
    """
    with _lock:
        existing = _jobs.get(name)
        origin = _origin(definition)
        if (
            existing is not None
            and existing is not definition
            and (_origin(existing) != origin or "<locals>" in origin)
        ):
            raise DuplicateJobName(
                f"job name {name!r} is already registered by {_origin(existing)}; "
                f"{_origin(definition)} needs another name (pass name=...)"
            )
        _jobs[name] = definition


def _origin(definition: Any) -> str:
    target = getattr(definition, "target", definition)
    return f"{getattr(target, '__module__', '?')}.{getattr(target, '__qualname__', '?')}"


def lookup(name: str) -> Any:
    """The job registered as ``name``, or `UnknownJob`."""
    try:
        return _jobs[name]
    except KeyError:
        raise UnknownJob(
            f"no job is registered as {name!r} in this process; {missing_hint()}"
        ) from None


def get(name: str) -> Any | None:
    return _jobs.get(name)


def names() -> list[str]:
    return sorted(_jobs)


def unregister(name: str) -> None:
    with _lock:
        _jobs.pop(name, None)
