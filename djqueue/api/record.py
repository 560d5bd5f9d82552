"""One job as found in Redis: in a queue (`JobRecord`) or in a sorted set (`SortedEntry`).

A record keeps the exact bytes it was read as, because Redis removes list and sorted-set
members by value: re-encoding the parsed JSON could differ by one space and delete nothing.
Data that is not a job (bad JSON, a bare string) still makes a record, with an empty ``item``,
so a page listing a queue never fails on one bad entry and the entry can still be deleted.
"""

from __future__ import annotations

import binascii
import hashlib
import json
import time
import zlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .. import retry_policy
from ..payload import Payload, to_seconds
from ..store.replies import text
from . import active_job

if TYPE_CHECKING:
    from .queue import Queue
    from .sorted_set import SortedSet


def display_name(item: Mapping[str, Any]) -> str:
    """What a person calls the job of payload ``item`` (`JobRecord.display_name`; the worker's
    metrics count jobs under it too)."""
    display = item.get("display_class")
    if isinstance(display, str) and display:
        return display
    name = item.get("class")
    if name in active_job.WRAPPERS:
        wrapped = item.get("wrapped")
        if isinstance(wrapped, str):
            return wrapped
        args = item.get("args")
        first = args[0] if isinstance(args, list) and args else None
        if isinstance(first, dict) and isinstance(first.get("job_class"), str):
            return str(first["job_class"])
    return name if isinstance(name, str) else ""


class JobRecord:
    """A job read from a queue (or from a worker's busy list, with no ``source``)."""

    def __init__(self, raw: bytes | str, source: Queue | None = None) -> None:
        self.raw = raw
        self.value = text(raw)
        self.source = source
        #: Index from the queue's head when read by `Queue.page` (it moves as jobs arrive).
        self.index: int | None = None
        self.parse_error: str | None = None
        try:
            item = json.loads(self.value)
        except ValueError as exc:
            item, self.parse_error = {}, f"not JSON: {exc}"
        if not isinstance(item, dict):
            item, self.parse_error = {}, "not a JSON object"
        self.item: Payload = item

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.job_name or '?'} jid={self.jid}>"

    def __getitem__(self, name: str) -> Any:
        return self.item.get(name)

    def get(self, name: str, default: Any = None) -> Any:
        return self.item.get(name, default)

    @property
    def digest(self) -> str:
        """A short hash of the stored bytes: names an entry that has no jid."""
        raw = self.raw if isinstance(self.raw, bytes) else self.raw.encode("utf-8", "replace")
        return hashlib.sha1(raw).hexdigest()[:16]

    @property
    def name(self) -> str:
        """The jid, or for an entry without one ``"~"`` and its `digest`: what a page's row key
        carries, so that acting on a bad entry never reaches another one."""
        return self.jid or f"~{self.digest}"

    def is_named(self, name: str) -> bool:
        return name == self.name

    @property
    def is_malformed(self) -> bool:
        """True when the entry is not a job object (the worker moves such data to dead), or
        is the job object such data was wrapped in (class ``djqueue.Malformed``)."""
        return self.parse_error is not None or self.item.get("class") == retry_policy.MALFORMED

    @property
    def jid(self) -> str | None:
        jid = self.item.get("jid")
        return jid if isinstance(jid, str) else None

    @property
    def job_name(self) -> str:
        """The payload's ``class``: the registered name the worker looks up."""
        name = self.item.get("class")
        return name if isinstance(name, str) else ""

    @property
    def display_name(self) -> str:
        """What a person calls the job: ``display_class`` when the payload has one (as in
        Sidekiq), else the wrapped class for a Rails ActiveJob payload, else ``class``."""
        return display_name(self.item)

    @property
    def args(self) -> list[Any]:
        args = self.item.get("args")
        return args if isinstance(args, list) else []

    @property
    def display_args(self) -> list[Any]:
        """The job's own arguments: unwrapped and deserialized from a Rails ActiveJob payload
        (`djqueue.api.active_job`), as Sidekiq 7.1+ shows them."""
        if self.job_name in active_job.WRAPPERS:
            first = self._first_arg()
            arguments = first.get("arguments")
            if isinstance(arguments, list):
                wrapped = self.item.get("wrapped") or first.get("job_class")
                return active_job.display_args(str(wrapped or ""), arguments)
        if self.item.get("encrypt") and self.args:
            # Sidekiq Enterprise's encrypted last argument: ciphertext, of no use to a reader.
            return [*self.args[:-1], "[encrypted data]"]
        return self.args

    def _first_arg(self) -> dict[str, Any]:
        first = self.args[0] if self.args else None
        return first if isinstance(first, dict) else {}

    @property
    def queue(self) -> str | None:
        """The queue the record sits in, or for a sorted-set entry the one it will go to."""
        if self.source is not None:
            return self.source.name
        name = self.item.get("queue")
        return name if isinstance(name, str) else None

    @property
    def retry(self) -> Any:
        return self.item.get("retry")

    @property
    def tags(self) -> list[str]:
        tags = self.item.get("tags")
        return [t for t in tags if isinstance(t, str)] if isinstance(tags, list) else []

    @property
    def created_at(self) -> float | None:
        return to_seconds(self.item.get("created_at"))

    @property
    def enqueued_at(self) -> float | None:
        return to_seconds(self.item.get("enqueued_at"))

    @property
    def failed_at(self) -> float | None:
        return to_seconds(self.item.get("failed_at"))

    @property
    def retried_at(self) -> float | None:
        return to_seconds(self.item.get("retried_at"))

    @property
    def error_class(self) -> str | None:
        return self.item.get("error_class")

    @property
    def error_message(self) -> str | None:
        return self.item.get("error_message")

    @property
    def retry_count(self) -> int | None:
        count = self.item.get("retry_count")
        return count if isinstance(count, int) and not isinstance(count, bool) else None

    @property
    def has_error(self) -> bool:
        return bool(self.item.get("error_class"))

    @property
    def error_backtrace(self) -> list[str] | None:
        """The stored backtrace lines, decoded from Sidekiq's Base64-of-zlib-of-JSON form."""
        return decode_backtrace(self.item.get("error_backtrace"))

    @property
    def latency(self) -> float:
        """Seconds since the job was enqueued (or created); 0 when neither is known."""
        since = self.enqueued_at or self.created_at
        return max(0.0, time.time() - since) if since else 0.0

    def delete(self) -> bool:
        """Remove this job from its queue; False when it is no longer there (a worker took it)."""
        if self.source is None:
            raise TypeError("this record was not read from a queue")
        return self.source.delete_record(self)


class SortedEntry(JobRecord):
    """A job in ``schedule``, ``retry`` or ``dead``; ``score`` is when it runs (or died)."""

    def __init__(self, raw: bytes | str, score: float, parent: SortedSet) -> None:
        super().__init__(raw)
        self.score = float(score)
        self.parent = parent

    @property
    def at(self) -> float:
        """The score as epoch seconds: next run (schedule, retry) or time of death (dead)."""
        return self.score

    @property
    def queue(self) -> str | None:
        return self.parent.destination(self.item)

    @property
    def key(self) -> str:
        """``"SCORE-JID"``: how an admin page names this entry in a URL (as Sidekiq's UI does);
        ``"SCORE-~DIGEST"`` for an entry without a jid (see `JobRecord.name`)."""
        return f"{self.score!r}-{self.name}"

    def delete(self) -> bool:
        """Remove the entry; False when it had already gone (run, retried or deleted)."""
        return self.parent.delete_entries([self]) == 1

    def retry(self) -> bool:
        """Push the job to its queue now, ``retry_count`` lowered by one as Sidekiq does, so the
        next failure records the same count again. False if someone else moved it first."""
        self._check_job()
        return self.parent.requeue([self], decrement=True) == 1

    def add_to_queue(self) -> bool:
        """Push the job to its queue now, unchanged (for a scheduled job: run it now)."""
        self._check_job()
        return self.parent.requeue([self], decrement=False) == 1

    def _check_job(self) -> None:
        if self.is_malformed or not self.job_name:
            raise ValueError(f"this entry is not a job ({self.parse_error or 'no class'})")

    def kill(self) -> bool:
        """Move the job to the dead set (trimmed as a worker trims it)."""
        return self.parent.kill_entries([self]) == 1


def decode_backtrace(value: Any) -> list[str] | None:
    """Sidekiq stores backtraces as Base64 of zlib-compressed JSON; old jobs as a plain list.
    None when there is none or it cannot be read (a listing must not fail on one entry)."""
    if isinstance(value, list):
        return [str(line) for line in value]
    if not isinstance(value, str):
        return None
    try:
        return [str(line) for line in retry_policy.decode_backtrace(value)]
    except (binascii.Error, zlib.error, ValueError, TypeError):
        return None
