"""A queue (``queue:NAME``, a Redis list): size, latency, listing, find by jid, delete, clear,
pause and resume.

Clients LPUSH, so index 0 is the newest job and the right end is the next one a worker takes.
Latency is the age of that oldest job, as Sidekiq measures it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from functools import partial
from typing import NamedTuple

import redis

from ..config import Settings
from ..errors import BadKey
from ..payload import check_queue_name
from ..store import listing
from ..store import paused as paused_store
from ..store.listing import Filter, next_matches, read_page, scan_page
from .base import ApiObject
from .listing import Listing
from .record import JobRecord


class QueueSummary(NamedTuple):
    """One queue as `Queue.summary` reads it."""

    name: str
    size: int
    #: Seconds the oldest job has waited (0 when empty).
    latency: float
    #: What is wrong with the queue's key (not a list; the queue counts as empty), or "".
    problem: str
    #: No worker takes jobs from it (`Queue.pause`).
    paused: bool = False
    #: Jobs of this queue parked for a limiter's slots (`Queue.parked`), not in its size.
    parked: int = 0
    #: ``parked`` is a floor: the queue's jobs are in a parked list too long to read whole
    #: for a page (`djqueue.store.limits.PARKED_READ`).
    parked_floor: bool = False


class Queue(ApiObject):
    """``Queue("mailers")``; ``Queue.all()`` lists every queue that has had jobs."""

    def __init__(
        self,
        name: str = "default",
        settings: Settings | None = None,
        redis_client: redis.Redis | None = None,
    ) -> None:
        super().__init__(settings, redis_client)
        self.name = name
        self.key = self.keys.queue(name)
        self.key_type = "list"

    def __repr__(self) -> str:
        return f"<Queue {self.name}>"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Queue) and (other.name, other.key) == (self.name, self.key)

    def __hash__(self) -> int:
        return hash(self.key)

    @classmethod
    def all(
        cls, settings: Settings | None = None, redis_client: redis.Redis | None = None
    ) -> list[Queue]:
        """Every queue named in the ``queues`` set, sorted by name."""
        probe = ApiObject.of_key("queues", "set", settings, redis_client)
        names = probe._call(probe.store.queue_names)
        return [cls(name, **probe._context()) for name in names]

    @classmethod
    def summary(
        cls, settings: Settings | None = None, redis_client: redis.Redis | None = None
    ) -> list[QueueSummary]:
        """Every queue with its size, latency, problem, whether it is paused and its parked
        jobs, by name, read in three round trips (the names and the paused set, then every
        queue's length and oldest job pipelined, then the parked jobs counted by queue), for a
        page listing many queues. A queue that only has parked jobs is listed too, and so is
        a paused queue that has never had a job, so it can be resumed where it shows.
        ``problem`` is empty, or says what is wrong with a queue whose key is not a list
        (`djqueue.errors.BadKey`'s message; the queue counts as empty). A paused set of
        another type pauses nothing, for the workers as here (logged once by name)."""
        probe = ApiObject.of_key("queues", "set", settings, redis_client)
        queue_names, paused = probe._call(
            lambda: listing.queue_names_and_paused(probe.redis, probe.keys)
        )
        parked = probe._call(probe.limits.parked_by_queue)
        names = sorted(set(queue_names) | paused | set(parked.counts))
        if not names:
            return []
        figures, more = probe._call(lambda: listing.queue_figures(probe.redis, probe.keys, names))
        bad = {key: str(BadKey(key, what)) for key, what in more}
        now = time.time()
        found = []
        for name, (size, oldest) in zip(names, figures, strict=True):
            enqueued = JobRecord(oldest).enqueued_at if oldest is not None else None
            latency = max(0.0, now - enqueued) if enqueued else 0.0
            problem = bad.get(probe.keys.queue(name), "")
            found.append(
                QueueSummary(
                    name,
                    size,
                    latency,
                    problem,
                    name in paused,
                    parked.counts.get(name, 0),
                    name in parked.floors,
                )
            )
        return found

    @property
    def size(self) -> int:
        return self._call(lambda: listing.size(self.redis, self.key, "list"))

    def __len__(self) -> int:
        return self.size

    @property
    def parked(self) -> int:
        """Jobs of this queue parked for a concurrency limiter's slots (`djqueue.limits`): out
        of the queue, so not in its size, until a slot is free. A floor when they are in a
        list of over `djqueue.store.limits.PARKED_READ` parked jobs (not read whole)."""
        return self._call(lambda: self.limits.parked_by_queue(self.name).counts.get(self.name, 0))

    @property
    def latency(self) -> float:
        """Seconds the oldest job has been waiting; 0 for an empty queue."""
        raw = self._call(lambda: listing.oldest(self.redis, self.key))
        if raw is None:
            return 0.0
        enqueued = JobRecord(raw, self).enqueued_at
        return max(0.0, time.time() - enqueued) if enqueued else 0.0

    def jobs(self, offset: int = 0, limit: int = 25, newest_first: bool = True) -> list[JobRecord]:
        """One page of jobs; ``newest_first=False`` starts with the next job a worker takes."""
        if offset < 0 or limit < 1:
            raise ValueError("offset must be >= 0 and limit >= 1")
        if newest_first:
            raws = self._call(
                lambda: listing.list_slice(self.redis, self.key, offset, offset + limit - 1)
            )
            records = [JobRecord(raw, self) for raw in raws]
            for n, record in enumerate(records):
                record.index = offset + n
            return records
        raws = self._call(
            lambda: listing.list_slice(self.redis, self.key, -(offset + limit), -(offset + 1))
        )
        raws.reverse()
        return [JobRecord(raw, self) for raw in raws]

    def page(
        self,
        offset: int = 0,
        limit: int = 25,
        keep: Filter | None = None,
        facets: bool = False,
        first: int = 0,
        all_entries: bool = False,
    ) -> Listing[JobRecord]:
        """One page, newest first, with the queue's size read in the same MULTI; with ``keep``
        (a `Filter`) only the matching jobs among `djqueue.store.listing.SEARCH_PART` from
        index ``first`` (``Listing.part`` says which when that is not the whole queue; every
        job with ``all_entries``), found inside Redis (see `djqueue.store.listing`), and with
        ``facets`` the matches per job name."""
        if offset < 0 or limit < 1:
            raise ValueError("offset must be >= 0 and limit >= 1")
        if keep or facets:
            found = self._call(
                lambda: scan_page(
                    self.redis,
                    self.key,
                    "list",
                    offset,
                    limit,
                    False,
                    keep or Filter(),
                    facets,
                    first=first,
                    all_entries=all_entries,
                )
            )
        else:
            found = self._call(
                lambda: read_page(self.redis, self.key, "list", offset, limit, False)
            )
        records = []
        for raw, index in found.rows:
            record = JobRecord(raw, self)
            record.index = int(index)
            records.append(record)
        return Listing(records, found.size, found.matches, found.names, found.queues, found.part)

    def __iter__(self) -> Iterator[JobRecord]:
        """Every job, newest first, a page at a time.

        Deleting the yielded record while iterating is fine: the next page start moves back by
        what the queue lost, so nothing is skipped (a job may be seen twice instead).
        """
        start, page_size = 0, 100
        while True:
            size_before = self.size
            page = self.jobs(start, page_size)
            if not page:
                return
            yield from page
            start += len(page) - max(0, size_before - self.size)

    def find_job(self, jid: str) -> JobRecord | None:
        """The job with this jid, searched for inside Redis (`JobStore.candidates`)."""

        def find() -> JobRecord | None:
            for raw, _index in self.store.candidates(self.key, jid, "list"):
                record = JobRecord(raw, self)
                if record.jid == jid:
                    return record
            return None

        return self._call(find)

    def delete_records(self, records: list[JobRecord]) -> int:
        """Remove jobs by their stored value, checked first at the index they were read at
        (`JobRecord.index`); returns how many were still there."""
        found = [(r.index if r.index is not None else -1, r.raw) for r in records]
        return self._call(lambda: self.store.delete_many_from_queue(self.name, found))

    def delete_record(self, record: JobRecord) -> bool:
        """Remove one job by its exact stored value (what `JobRecord.delete` calls)."""
        return self._call(lambda: self.store.delete_from_queue(self.name, record.raw))

    def delete_matching(self, keep: Filter) -> int:
        """Delete every job that ``keep`` matches, a batch at a time; returns how many."""
        total = start = 0
        while start >= 0:
            rows, start = self._call(
                partial(next_matches, self.redis, self.key, "list", False, keep, start, 100)
            )
            if not rows:
                break
            deleted = self._call(
                partial(self.store.delete_many_from_queue, self.name, [(i, r) for r, i in rows])
            )
            total += deleted
            if start >= 0:
                start -= deleted
        return total

    def clear(self) -> int:
        """Delete the queue and forget its name; returns how many jobs it held. A paused
        queue stays paused."""
        return self._call(lambda: self.store.clear_queue(self.name))

    def pause(self) -> bool:
        """Stop every djqueue worker taking jobs from this queue, within one heartbeat
        interval; its jobs stay, pushes still land, jobs already running finish. True when it
        was not paused yet. Sidekiq Pro's ``Queue#pause!``."""
        check_queue_name(self.name)
        return self._call(lambda: paused_store.pause(self.redis, self.keys, self.name))

    def resume(self) -> bool:
        """Let workers take jobs from this queue again (within one heartbeat interval). True
        when it was paused. Sidekiq Pro's ``Queue#unpause!``."""
        return self._call(lambda: paused_store.resume(self.redis, self.keys, self.name))

    @property
    def paused(self) -> bool:
        """Whether workers leave this queue alone (`pause`)."""
        return self._call(lambda: paused_store.is_paused(self.redis, self.keys, self.name))
