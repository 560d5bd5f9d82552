"""Test modes for applications that use djqueue, in the spirit of ``Sidekiq::Testing``.

``fake()`` records every push in memory instead of writing it to Redis; ``inline()`` runs each
job at push time; ``disable()`` goes back to real Redis. Each works as a plain call (switches
the mode for the process) and as a context manager (restores the previous mode on exit)::

    with djqueue.testing.fake():
        send_welcome.perform_later(42)
        assert send_welcome.jobs[0]["args"] == [42]
        send_welcome.jobs.drain()          # runs it, through the server middleware

The capture happens in `djqueue.client.Client.raw_push`, after the client middleware, so a
middleware that stamps or stops a push is exercised by the tests too. Importing this module
switches no mode (only calling one of the functions does, so the pytest plugin can import it in
every test session); it only gives job handles and `djqueue.Job` classes their ``jobs``
property, the recorded jobs.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Collection
from typing import Any

from .client import Client
from .errors import DjQueueError
from .executor import run
from .job import ClassHandle, Job, JobHandle
from .payload import BATCH_DEFINITION, Payload, dumps, loads, now
from .signals import job_enqueued

DISABLED, FAKE, INLINE = "disabled", "fake", "inline"

_lock = threading.RLock()
_mode = DISABLED
_real_raw_push = Client.raw_push
_real_create_batches = Client.create_batches
_recorded: dict[str, JobList] = {}
_order: dict[int, int] = {}  # id(payload) -> push sequence, for drain_all in push order
_sequence = itertools.count()


class EmptyQueueError(DjQueueError):
    """`perform_one` found no recorded job to run."""


class JobList(list[Payload]):
    """The payloads recorded for one job, oldest first; the same list object on every access.

    Being the live list, ``send_welcome.jobs.clear()`` forgets them, and ``drain()`` /
    ``perform_one()`` run them.
    """

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name

    def drain(self) -> int:
        return drain(self.name)

    def perform_one(self) -> Any:
        return perform_one(self.name)


# -- modes ----------------------------------------------------------------------------------


class Mode:
    """Returned by `fake`, `inline` and `disable`: the mode is already on; ``with`` scopes it."""

    def __init__(self, mode: str, previous: str) -> None:
        self.mode = mode
        self.previous = previous

    def __enter__(self) -> Mode:
        return self

    def __exit__(self, *exc: object) -> None:
        _set_mode(self.previous)

    def __repr__(self) -> str:
        return f"<djqueue.testing {self.mode} mode>"

    # The fixtures yield this object, so the module's helpers are at hand on it.
    @property
    def jobs(self) -> list[Payload]:
        """Every recorded payload, in push order."""
        return jobs()

    def jobs_for(self, job: Any) -> JobList:
        return jobs_for(job)

    def queue(self, name: str) -> list[Payload]:
        return jobs(queue=name)

    def drain(self, job: Any) -> int:
        return drain(job)

    def drain_all(self) -> int:
        return drain_all()

    def perform_one(self, job: Any) -> Any:
        return perform_one(job)

    def clear(self, job: Any) -> None:
        clear(job)

    def clear_all(self) -> None:
        clear_all()


def fake() -> Mode:
    """Record pushes in memory (``job.jobs``) instead of writing them to Redis."""
    return Mode(FAKE, _set_mode(FAKE))


def inline() -> Mode:
    """Run each job at push time, in the pushing thread; its exception reaches the caller."""
    return Mode(INLINE, _set_mode(INLINE))


def disable() -> Mode:
    """Write to Redis again (the normal behaviour)."""
    return Mode(DISABLED, _set_mode(DISABLED))


def mode() -> str:
    """``"disabled"``, ``"fake"`` or ``"inline"``."""
    return _mode


def is_fake() -> bool:
    return _mode == FAKE


def is_inline() -> bool:
    return _mode == INLINE


def _set_mode(new: str) -> str:
    """Switch, returning the previous mode. The client's write is replaced only while needed."""
    global _mode
    with _lock:
        previous = _mode
        _mode = new
        # mypy: assigning to a method is what this module is for.
        Client.raw_push = _real_raw_push if new == DISABLED else _testing_raw_push  # type: ignore[method-assign]
        Client.create_batches = _real_create_batches if new == DISABLED else _no_batches  # type: ignore[method-assign]
        return previous


def _testing_raw_push(self: Client, payloads: list[Payload]) -> Collection[str] | None:
    """Stands in for `Client.raw_push` in fake and inline modes (where unique jobs are not
    locked: no Redis holds the locks)."""
    if _mode == DISABLED:  # a client that captured the method before the switch
        return _real_raw_push(self, payloads)
    capture(payloads, _mode)
    return None


def _no_batches(self: Client, definitions: Any) -> None:
    """Stands in for `Client.create_batches`: an empty batch is not written in the test modes
    (the jobs of a batch are captured without their batch)."""


def capture(payloads: list[Payload], mode: str) -> None:
    """Do with ``payloads`` what ``mode`` does with a push: record them (fake) or run them
    (inline). The modes call it in place of the write; an integration with a test mode of its
    own (flask_djqueue's ``DJQUEUE_TESTING``, per app) calls it for that app's pushes."""
    if mode not in (FAKE, INLINE):
        raise ValueError(f"mode must be {FAKE!r} or {INLINE!r}, got {mode!r}")
    for payload in payloads:
        payload.pop(BATCH_DEFINITION, None)  # the batch is created by a real write only
        # Round-trip through JSON so the test sees exactly what a worker would have read.
        record = loads(dumps(payload))
        at = record.get("at")
        if mode == INLINE or at is None or at <= now():
            record.pop("at", None)
            record["enqueued_at"] = now()
        else:
            record.pop("enqueued_at", None)
        if mode == FAKE:
            with _lock:
                jobs_for(record["class"]).append(record)
                _order[id(record)] = next(_sequence)
        if job_enqueued.receivers:
            job_enqueued.send(record["class"], payload=record)
        if mode == INLINE:
            run(record)


# -- recorded jobs --------------------------------------------------------------------------


def _name(job: Any) -> str:
    """A job's registered name from the job itself (function, class, handle) or the name."""
    if isinstance(job, str):
        return job
    name = getattr(job, "job_name", None)
    if not isinstance(name, str) or not name:
        raise TypeError(f"expected a job or a job name, got {job!r}")
    return name


def jobs_for(job: Any) -> JobList:
    """The live list of payloads recorded for ``job`` (what ``job.jobs`` returns)."""
    name = _name(job)
    with _lock:
        recorded = _recorded.get(name)
        if recorded is None:
            recorded = _recorded[name] = JobList(name)
        return recorded


def jobs(queue: str | None = None) -> list[Payload]:
    """Every recorded payload in push order (a copy), or those for one ``queue``."""
    with _lock:
        every = [p for recorded in _recorded.values() for p in recorded]
    every.sort(key=lambda p: _order.get(id(p), -1))
    return [p for p in every if queue is None or p.get("queue") == queue]


def _take_first(job: Any) -> Payload | None:
    with _lock:
        recorded = jobs_for(job)
        if not recorded:
            return None
        payload = recorded.pop(0)
        _order.pop(id(payload), None)
        return payload


def perform_one(job: Any) -> Any:
    """Run the oldest recorded job of this kind; `EmptyQueueError` when there is none."""
    payload = _take_first(job)
    if payload is None:
        raise EmptyQueueError(f"no recorded jobs for {_name(job)}")
    return run(payload)


def drain(job: Any) -> int:
    """Run this job's recorded jobs, oldest first, including ones pushed while draining.

    A job that raises is removed first, and the exception stops the drain, as in Sidekiq.
    Returns how many ran.
    """
    count = 0
    while (payload := _take_first(job)) is not None:
        run(payload)
        count += 1
    return count


def drain_all() -> int:
    """Run every recorded job in push order until none is left; returns how many ran."""
    count = 0
    while True:
        with _lock:
            pending = [p for recorded in _recorded.values() for p in recorded[:1]]
            if not pending:
                return count
            first = min(pending, key=lambda p: _order.get(id(p), -1))
            _recorded[first["class"]].pop(0)
            _order.pop(id(first), None)
        run(first)
        count += 1


def clear(job: Any) -> None:
    """Forget the recorded jobs of one kind."""
    jobs_for(job).clear()


def clear_all() -> None:
    """Forget every recorded job."""
    with _lock:
        for recorded in _recorded.values():
            recorded.clear()
        _order.clear()


def _jobs_property(handle: JobHandle) -> JobList:
    """``job.jobs``: the live list of what fake mode recorded for this job."""
    return jobs_for(handle.job_name)


JobHandle.jobs = property(_jobs_property)
Job.jobs = ClassHandle("jobs")


__all__ = [
    "EmptyQueueError",
    "JobList",
    "Mode",
    "capture",
    "clear",
    "clear_all",
    "disable",
    "drain",
    "drain_all",
    "fake",
    "inline",
    "is_fake",
    "is_inline",
    "jobs",
    "jobs_for",
    "mode",
    "perform_one",
]
