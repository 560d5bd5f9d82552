"""The allow-list: which job names this process will run.

A payload names its job by a string. Nothing is ever imported from that string: a job runs
only if code in this process registered it (by decorating it), which keeps a writable Redis
from becoming a way to run arbitrary code.
"""

from __future__ import annotations

import threading
from typing import Any, Protocol

from .errors import DuplicateJobName, UnknownJob


class JobDefinition(Protocol):
    """What the registry holds under a job's name, and all the worker asks of it: a function
    decorated with ``@job`` (`djqueue.job.FunctionJob`, whose methods serve its one function)
    or a `djqueue.Job` subclass (whose class methods make an instance per run). The executor
    and the runtime call only these, so both kinds run the same way, threaded or ``async``."""

    @property
    def job_name(self) -> str:
        """The registered name, written as the payload's ``class``."""
        ...

    @property
    def job_options(self) -> dict[str, Any]:
        """Payload options every push starts from (queue, retry, retention, ...)."""
        ...

    @property
    def job_is_async(self) -> bool:
        """An ``async def`` job: the worker runs it on its event loop."""
        ...

    def instantiate(self, payload: dict[str, Any]) -> Any:
        """What runs this payload (the function's handle, or a new `Job` with its jid)."""
        ...

    def execute(self, instance: Any, args: list[Any]) -> Any:
        """Run it in this thread (a coroutine it returns is run to completion)."""
        ...

    async def aexecute(self, instance: Any, args: list[Any]) -> Any:
        """Await it on the worker's event loop."""
        ...

    def retry_in(self, count: int, exc: BaseException) -> Any:
        """Seconds before the next retry, ``"kill"``, ``"discard"``, or None for the default."""
        ...

    def retries_exhausted(self, payload: dict[str, Any], exc: BaseException) -> None:
        """Called once when the job goes to ``dead`` after its last retry."""
        ...


_lock = threading.Lock()
_jobs: dict[str, JobDefinition] = {}

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


def register(name: str, definition: JobDefinition) -> None:
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


def lookup(name: str) -> JobDefinition:
    """The job registered as ``name``, or `UnknownJob`."""
    try:
        return _jobs[name]
    except KeyError:
        raise UnknownJob(
            f"no job is registered as {name!r} in this process; {missing_hint()}"
        ) from None


def get(name: str) -> JobDefinition | None:
    return _jobs.get(name)


def names() -> list[str]:
    return sorted(_jobs)


def unregister(name: str) -> None:
    with _lock:
        _jobs.pop(name, None)
