"""Where a job is, what became of it, and how to call it off: `status`, `astatus`, `result`,
`aresult`, `cancel`, and `JobRef`, the jid string ``perform_later`` returns.

Sidekiq forgets a job once it succeeds. A job pushed with a ``retention`` (``@job(retention=
3600)`` or ``.set(retention=...)``) is tracked instead: each move of the job writes its state
into one hash in the same atomic step (`djqueue.store.StatusStore`), so a status is read with
one HGETALL and can never disagree with where the job is. Untracked jobs pay nothing for this
and read as ``unknown``. Once finished, the hash (and the return value, as JSON) is kept for the
retention, then Redis expires it.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, replace
from typing import Any

from .config import Settings
from .connection import get_aredis, get_waits, translate_errors
from .errors import BadKey, JobCancelled, JobFailed, JobNotTracked, ResultTimeout
from .store import JobStore, StatusStore
from .store.calls import aexecute
from .store.status import ENDS

#: Every state, in the order a job usually goes through them.
STATES = (
    "scheduled",
    "pending",
    "active",
    "retry",
    "dead",
    "completed",
    "cancelled",
    "expired",
    "unknown",
)
#: States a job does not leave on its own.
FINISHED = frozenset(ENDS)

#: What `cancel` says.
CANCELLED = "cancelled"  # taken out of its queue, the schedule or the retry set
CANCELLING = "cancelling"  # running: asked to stop; ends as cancelled
ALREADY_FINISHED = "finished"  # completed, dead or cancelled before
UNKNOWN = "unknown"  # not found anywhere (untracked and running, expired, never pushed)


def _int(value: str | None) -> int:
    try:
        return int(value or 0)
    except ValueError:
        return 0


def _float(value: str | None) -> float | None:
    try:
        return float(value) if value else None
    except ValueError:
        return None


def _history(value: str | None) -> tuple[dict[str, Any], ...]:
    """The ``errors`` field's entries; anything that is not a list of objects reads as none."""
    try:
        found = json.loads(value) if value else []
    except ValueError:
        return ()
    if not isinstance(found, list):
        return ()
    return tuple(entry for entry in found if isinstance(entry, dict))


@dataclass(frozen=True)
class JobStatus:
    """A tracked job's lifecycle as last written by the transition that moved it."""

    jid: str
    state: str
    job_class: str | None = None
    queue: str | None = None
    enqueued_at: float | None = None
    scheduled_at: float | None = None
    started_at: float | None = None
    finished_at: float | None = None
    retry_at: float | None = None
    #: Times a worker took the job (each start, including the one that is running).
    attempts: int = 0
    error_class: str | None = None
    error_message: str | None = None
    #: The identity (``hostname:pid:hex``) of the process that ran it last.
    process: str | None = None
    #: The process of each attempt, oldest first (the last 25).
    workers: tuple[str, ...] = ()
    #: Someone called `cancel` while the job ran; it ends as cancelled.
    cancel_requested: bool = False
    #: Seconds the job is kept once finished.
    retention: int | None = None
    #: The return value's JSON (completed jobs only); `value` decodes it.
    result_json: str | None = None
    #: The job's JSON as it was pushed (its arguments), kept with the status.
    payload_json: str | None = None
    #: The failed attempts, oldest first (the last `djqueue.retry_policy.ERROR_HISTORY`):
    #: dicts of class, message, traceback (as Python prints it) and at (epoch seconds).
    errors: tuple[dict[str, Any], ...] = ()
    #: What is wrong with the status hash (a field that is not a number), one line each.
    problems: tuple[str, ...] = ()

    @property
    def finished(self) -> bool:
        return self.state in FINISHED

    def _pushed(self, field: str) -> Any:
        """A field of the payload as pushed (None when unknown)."""
        try:
            found = json.loads(self.payload_json) if self.payload_json else None
        except ValueError:
            return None
        return found.get(field) if isinstance(found, dict) else None

    @property
    def args(self) -> list[Any] | None:
        """The job's arguments as pushed (None when unknown)."""
        args = self._pushed("args")
        return args if isinstance(args, list) else None

    @property
    def bid(self) -> str:
        """The id of the batch the job was pushed in (``""``: none, or unknown)."""
        bid = self._pushed("bid")
        return bid if isinstance(bid, str) else ""

    @property
    def value(self) -> Any:
        return json.loads(self.result_json) if self.result_json else None

    @classmethod
    def from_hash(cls, jid: str, fields: dict[str, str]) -> JobStatus:
        if not fields.get("state"):
            return cls(jid, "unknown")
        retention = _float(fields.get("retention"))
        return cls(
            jid=jid,
            state=fields["state"],
            job_class=fields.get("class") or None,
            queue=fields.get("queue") or None,
            enqueued_at=_float(fields.get("enqueued_at")),
            scheduled_at=_float(fields.get("scheduled_at")),
            started_at=_float(fields.get("started_at")),
            finished_at=_float(fields.get("finished_at")),
            retry_at=_float(fields.get("retry_at")),
            attempts=_int(fields.get("attempts")),
            error_class=fields.get("error_class") or None,
            error_message=fields.get("error_message") or None,
            process=fields.get("process") or None,
            workers=tuple(fields.get("workers", "").split()),
            cancel_requested=bool(fields.get("cancel")),
            retention=int(retention) if retention is not None else None,
            result_json=fields.get("result") if "result" in fields else None,
            payload_json=fields.get("payload") or None,
            errors=_history(fields.get("errors")),
        )


def _stores(settings: Settings | None = None) -> tuple[StatusStore, JobStore, Any]:
    from .client import Client, get_client

    client = get_client() if settings is None else Client(settings)
    return StatusStore(client.redis, client.keys), client.store, client


def status(jid: str, settings: Settings | None = None) -> JobStatus:
    """The job's state and times; ``state == "unknown"`` when it is not tracked (pushed without
    ``retention``), its retention has passed, or no such job was pushed. One Redis read.
    Raises `BadKey` when the status key holds another type than a hash; an ``attempts``
    that is not a number reads as 0 and is named in ``problems`` (the next start repairs it)."""
    store, _, client = _stores(settings)
    with translate_errors(client.settings):
        return _decoded(str(jid), store.checked(str(jid)))


async def astatus(jid: str, settings: Settings | None = None) -> JobStatus:
    """`status` for async code: the same read (`StatusStore.checked_steps`) awaited on the
    event loop's asyncio connection (`djqueue.connection.get_aredis`), holding no thread."""
    store, _, client = _stores(settings)
    aredis = get_aredis(client.settings)
    with translate_errors(client.settings):
        return _decoded(str(jid), await aexecute(aredis, store.checked_steps(str(jid))))


def _decoded(jid: str, checked: tuple[dict[str, str] | None, list[tuple[str, str]]]) -> JobStatus:
    """The `JobStatus` a checked read (`StatusStore.checked`) tells: the one decoder of
    `status` and `astatus`."""
    fields, bad = checked
    if fields is None:
        raise BadKey(*bad[0])
    found = JobStatus.from_hash(jid, fields)
    if bad:
        found = replace(found, problems=tuple(str(BadKey(key, what)) for key, what in bad))
    return found


def _outcome(st: JobStatus) -> Any:
    if st.state == "completed":
        return st.value
    error = JobCancelled if st.state == "cancelled" else JobFailed
    raise error(st.jid, st.state, st.error_class or "", st.error_message or "")


def result(jid: str, timeout: float | None = None) -> Any:
    """Wait for the job to finish and return its return value (decoded from JSON).

    Waits in Redis (a blocking BLMOVE on the job's done list), not in a polling loop;
    ``timeout`` None waits for as long as it takes. The wait holds a connection of its own
    (`djqueue.connection.Waits`); when ``max_connections`` waits hold them all, it waits for
    one within its timeout. Raises `djqueue.errors.JobFailed` (with
    the job's ``error_class`` and ``error_message``) when it died, `JobCancelled` when it was
    cancelled, `ResultTimeout` when ``timeout`` passed first, and `JobNotTracked` when the
    jid has no status (pushed without ``retention``, expired, or unknown).
    """
    store, _, client = _stores()
    with translate_errors(client.settings):
        return _wait_for(store, client, str(jid), timeout)


def _wait_for(store: StatusStore, client: Any, jid: str, timeout: float | None) -> Any:
    deadline = None if timeout is None else time.monotonic() + timeout
    # One blocking call may not outlast the socket timeout; longer waits take several.
    slice_ = max(0.1, client.settings.socket_timeout - 1.0)
    waits = get_waits(client.settings)
    blocking = StatusStore(waits.redis, client.keys)
    while True:
        st = JobStatus.from_hash(jid, store.read(jid))
        if st.state == "unknown":
            raise JobNotTracked(
                f"job {jid} has no status: not pushed with a retention, expired, or unknown"
            )
        if st.finished:
            return _outcome(st)
        if deadline is None:
            wait = slice_
        else:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise ResultTimeout(
                    f"job {jid} did not finish within {timeout} s (it is {st.state})"
                )
            wait = min(slice_, remaining)
        start = time.monotonic()
        with waits.slot(wait) as free:
            left = wait - (time.monotonic() - start)
            if free and left > 0.01:
                blocking.wait(jid, left)


async def aresult(jid: str, timeout: float | None = None) -> Any:
    """`result` for async code: the blocking wait runs in a worker thread, so the event loop
    goes on serving while the job runs."""
    return await asyncio.to_thread(result, jid, timeout)


def _jid_of(member: Any) -> str | None:
    try:
        found = json.loads(member)
    except (ValueError, TypeError, RecursionError):
        return None
    return found.get("jid") if isinstance(found, dict) else None


def cancel(jid: str) -> str:
    """Call a job off. Returns `CANCELLED` when it was taken out of its queue, the schedule or
    the retry set (a tracked job's status then says ``cancelled``), `CANCELLING` when it is
    running (``current_job().cancelled`` turns true at its worker's next beat; it ends as
    cancelled and is not retried), `ALREADY_FINISHED` when it had completed, died or been
    cancelled, and `UNKNOWN` when it was found nowhere.

    The answer and the end agree: the store flags only a job still running, and writes any
    end of a flagged one as cancelled (even if it returned before its worker saw the flag).

    A tracked job's status says where to look; an untracked one is looked for in the
    schedule, the retry set and every queue, scanned inside Redis (`JobStore.candidates`).
    """
    store, jobs, client = _stores()
    with translate_errors(client.settings):
        return _cancel(store, jobs, str(jid))


def _cancel(store: StatusStore, jobs: JobStore, jid: str) -> str:
    for _ in range(3):  # the job may move while we look (the poller, a worker): look again
        st = JobStatus.from_hash(jid, store.read(jid))
        if st.finished:
            return ALREADY_FINISHED
        if st.state == "active":
            if store.flag_cancel(jid):
                return CANCELLING
            continue
        places = jobs.places(st.state, st.queue)
        for key, kind in places:
            for member, _position in jobs.candidates(key, jid, kind):
                if _jid_of(member) == jid and store.remove(key, kind, member):
                    return CANCELLED
        if st.state == "unknown":
            return UNKNOWN
    # Still not where its status says: taken by an idle worker's BLMOVE and not yet marked
    # active, or held by a process that died. Flagged, it ends cancelled once it runs.
    if st.state in ("pending", "active") and store.flag_cancel(jid, held=True):
        return CANCELLING
    return ALREADY_FINISHED if status(jid).finished else UNKNOWN


class JobRef(str):
    """The jid ``perform_later`` returns: still the plain string it always was (it compares
    equal to the jid, is JSON and a dict key as before), with the lifecycle at hand."""

    __slots__ = ()

    @property
    def jid(self) -> str:
        return str(self)

    def status(self) -> JobStatus:
        return status(self)

    async def astatus(self) -> JobStatus:
        return await astatus(self)

    def result(self, timeout: float | None = None) -> Any:
        return result(self, timeout)

    async def aresult(self, timeout: float | None = None) -> Any:
        return await aresult(self, timeout)

    def cancel(self) -> str:
        return cancel(self)
