"""The three sorted sets of jobs: ``schedule``, ``retry`` and ``dead``.

Each member is job JSON and the score is epoch float seconds: when the job runs (schedule,
retry) or when it died (dead). Moving an entry to a queue or to the dead set is one Lua call
that removes the member and writes it elsewhere together, so two admins clicking at once, or
an admin racing the poller, cannot push a job twice, and no crash can lose it in between.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any, ClassVar

import redis

from ..client import Client, Landing
from ..config import Settings
from ..payload import Payload, dumps, now
from ..store import listing
from ..store.listing import Filter, counted_page, next_matches, read_page, scan_page
from .base import ApiObject
from .listing import Listing
from .record import SortedEntry

#: Entries handled per Redis call by the "all" actions.
BATCH = 100

#: A row key: the score as `repr` writes a float, a dash, then the jid or "~DIGEST".
_KEY = re.compile(r"(-?\d+(?:\.\d+)?(?:e[+-]?\d+)?)-(.+)", re.IGNORECASE)

_GLOB_SPECIAL = str.maketrans({c: "\\" + c for c in "*?[]\\"})


class SortedSet(ApiObject):
    """What the three sets share. Use `ScheduledSet`, `RetrySet` or `DeadSet`."""

    #: The attribute of `djqueue.store.Keys` naming the set.
    kind: ClassVar[str] = ""
    #: The order of `jobs` when not given: dead jobs newest first, the others soonest first.
    newest_first: ClassVar[bool] = False
    #: Whether a job goes back to its ``retry_queue`` (see `destination`).
    prefers_retry_queue: ClassVar[bool] = False

    def __init__(
        self, settings: Settings | None = None, redis_client: redis.Redis | None = None
    ) -> None:
        super().__init__(settings, redis_client)
        self.name = self.kind
        self.key: str = getattr(self.keys, self.kind)
        self.key_type = "zset"

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.key}>"

    @property
    def size(self) -> int:
        return self._call(lambda: listing.size(self.redis, self.key, "zset"))

    def __len__(self) -> int:
        return self.size

    def destination(self, item: Payload) -> str:
        """The queue an entry goes to when retried or added to its queue."""
        queue = item.get("queue")
        return queue if isinstance(queue, str) and queue else self.settings.default_queue

    # -- reading ------------------------------------------------------------------------------

    def jobs(
        self, offset: int = 0, limit: int = 25, newest_first: bool | None = None
    ) -> list[SortedEntry]:
        """One page, ordered by score (highest first when ``newest_first``)."""
        if offset < 0 or limit < 1:
            raise ValueError("offset must be >= 0 and limit >= 1")
        desc = self.newest_first if newest_first is None else newest_first
        end = offset + limit - 1
        rows = self._call(lambda: listing.set_slice(self.redis, self.key, offset, end, desc))
        return self._entries(rows)

    def page(
        self,
        offset: int = 0,
        limit: int = 25,
        keep: Filter | None = None,
        facets: bool = False,
        newest_first: bool | None = None,
        first: int = 0,
        all_entries: bool = False,
    ) -> Listing[SortedEntry]:
        """One page in the order of `jobs`, with the set's size read in the same MULTI; with
        ``keep`` (a `Filter`) only the matching entries, found inside Redis (see
        `djqueue.store.listing`), and with ``facets`` the matches per job name and queue. The
        retry and dead sets' totals and counts by job and queue are kept as entries come and
        go (`djqueue.store.tallies`): only search text reads entries,
        `djqueue.store.listing.SEARCH_PART` of them from index ``first`` (``Listing.part``
        says which when that is not the whole set), or every one with ``all_entries``."""
        if offset < 0 or limit < 1:
            raise ValueError("offset must be >= 0 and limit >= 1")
        desc = self.newest_first if newest_first is None else newest_first
        if keep or facets:
            keep = self._destined(keep or Filter())
            tally = self.keys.tally(self.key)
            if tally and not keep.text:
                found = self._call(
                    lambda: counted_page(
                        self.redis, self.key, tally, offset, limit, desc, keep, facets
                    )
                )
            else:
                found = self._call(
                    lambda: scan_page(
                        self.redis,
                        self.key,
                        "zset",
                        offset,
                        limit,
                        desc,
                        keep,
                        facets,
                        first=first,
                        all_entries=all_entries,
                    )
                )
        else:
            found = self._call(lambda: read_page(self.redis, self.key, "zset", offset, limit, desc))
        entries = self._entries(found.rows)
        return Listing(entries, found.size, found.matches, found.names, found.queues, found.part)

    def _destined(self, keep: Filter) -> Filter:
        """``keep`` reading each job's queue as `destination` does, so the queue filter and
        counts agree with the Queue column."""
        return dataclasses.replace(
            keep,
            prefer_retry_queue=self.prefers_retry_queue,
            default_queue=self.settings.default_queue,
        )

    def _entries(self, rows: Any) -> list[SortedEntry]:
        """Entries from redis-py's ``(member, score)`` pairs."""
        return [SortedEntry(member, score, self) for member, score in rows]

    def _slice(self, start: int, end: int) -> list[SortedEntry]:
        return self._entries(
            self._call(lambda: listing.set_slice(self.redis, self.key, start, end))
        )

    def __iter__(self) -> Iterator[SortedEntry]:
        """Every entry, highest score first, a page at a time.

        Pages are taken from the high end, counted from the end, so entries leaving the low end
        (the poller moving due jobs) or the yielded entry being deleted skip nothing.
        """
        kept = 0
        while True:
            size_before = self.size
            page = self._slice(-(kept + BATCH), -(kept + 1))
            if not page:
                return
            yield from reversed(page)
            kept += len(page) - max(0, size_before - self.size)

    def scan(self, text: str, count: int = 100) -> Iterator[SortedEntry]:
        """Entries whose JSON contains ``text`` (a plain substring), without blocking Redis."""
        pattern = f"*{text.translate(_GLOB_SPECIAL)}*"
        for member, score in listing.scan_set(self.redis, self.key, pattern, count):
            yield SortedEntry(member, score, self)

    def find_job(self, jid: str) -> SortedEntry | None:
        """The entry with this jid, searched for inside Redis (`JobStore.candidates`)."""

        def find() -> SortedEntry | None:
            for member, score in self.store.candidates(self.key, jid, "zset"):
                entry = SortedEntry(member, float(score), self)
                if entry.jid == jid:
                    return entry
            return None

        return self._call(find)

    def fetch(self, score: float, jid: str | None = None) -> list[SortedEntry]:
        """The entries with exactly this score (and this jid, if given)."""
        rows = self._call(lambda: listing.at_score(self.redis, self.key, score))
        entries = self._entries(rows)
        return [e for e in entries if jid is None or e.jid == jid]

    def entry(self, key: str) -> SortedEntry | None:
        """The entry named by `SortedEntry.key` (``"SCORE-JID"`` or ``"SCORE-~DIGEST"``), or
        None if it has gone. Never another entry of the same score: the dead set holds many
        (a kill of a batch buries it at one time)."""
        found = _KEY.match(key)
        if found is None:
            return None
        score, name = float(found[1]), found[2]
        if not math.isfinite(score) or not name:
            return None
        return next((e for e in self.fetch(score) if e.is_named(name)), None)

    # -- changing -----------------------------------------------------------------------------

    def delete_entries(self, entries: list[SortedEntry]) -> int:
        """Remove entries by their stored value; returns how many were still there."""
        members = [e.raw for e in entries]
        return self._call(lambda: self.store.delete_from_set(self.key, members))

    def delete_by_jid(self, score: float, jid: str) -> bool:
        return self.delete_entries(self.fetch(score, jid)) > 0

    def requeue(self, entries: list[SortedEntry], decrement: bool = False) -> int:
        """Push entries to their queues now, through the client middleware (`_Requeue`).

        ``decrement`` lowers ``retry_count`` by one (Sidekiq's "retry now"), so the failure
        after a manual retry records the count the job already had. Entries that are not job
        JSON, and those a middleware stops, stay where they are. Returns how many moved.
        """
        landing = _Requeue(self)
        payloads: list[Payload] = []
        for entry in entries:
            if entry.is_malformed or not entry.job_name:
                continue
            payload = dict(entry.item)
            queue = self.destination(payload)
            count = payload.get("retry_count")
            if decrement and isinstance(count, int) and not isinstance(count, bool):
                payload["retry_count"] = count - 1
            payload["queue"] = queue
            payload.pop("at", None)
            landing.raws[id(payload)] = entry.raw
            payloads.append(payload)
        if payloads:
            Client(self.settings, self.redis).send(payloads, landing)
        return landing.moved

    def kill_entries(self, entries: list[SortedEntry]) -> int:
        """Move entries to the dead set, which is then trimmed; returns how many moved."""
        pairs = [(e.raw, e.raw) for e in entries]
        return self._call(lambda: self.store.bury(pairs, now(), self.key, "zset"))

    def clear(self) -> int:
        """Delete every entry; returns how many there were."""
        return self._call(lambda: self.store.clear_set(self.key))

    def _each_batch(self, action: Callable[[list[SortedEntry]], int]) -> int:
        """Apply ``action`` (which returns how many entries it removed) to every entry.

        Works from the high end like `__iter__`; an entry the action leaves (bad JSON, stopped
        by middleware) is stepped over, so the loop ends even when some cannot move.
        """
        total = kept = 0
        while True:
            page = self._slice(-(kept + BATCH), -(kept + 1))
            if not page:
                return total
            moved = action(page)
            total += moved
            kept += len(page) - moved

    def each_match(self, keep: Filter, action: Callable[[list[SortedEntry]], int]) -> int:
        """Apply ``action`` (which returns how many entries it removed) to every entry that
        ``keep`` matches, a batch at a time, in the order of `jobs`; returns the total removed.
        The walk goes from the highest score down: the poller takes due entries from the low
        end, which moves no rank counted from the top; an entry added meanwhile at the top may
        be offered twice, and the second move finds it gone."""
        keep = self._destined(keep)
        total = start = 0
        while start >= 0:
            rows, start = self._call(
                partial(next_matches, self.redis, self.key, "zset", True, keep, start, BATCH)
            )
            if not rows:
                break
            moved = action(self._entries(rows))
            total += moved
            if start >= 0:
                start -= moved
        return total


class _Requeue(Landing):
    """A set's entries moved to their queues (retry now, add to queue): the chain runs as for
    a push, but the move is one atomic script for the whole batch, written after every chain
    ran, so a middleware that holds writes back until later (Django's enqueue-on-commit) gets
    no say over the timing here: an admin action is not part of the page's transaction. No
    size limit (the entry is in Redis already) and no ``job_enqueued`` (the job was announced
    when first pushed)."""

    inline = False

    def __init__(self, source: SortedSet) -> None:
        self.source = source
        #: id(payload) -> the member it was read from, which the move removes.
        self.raws: dict[int, str | bytes] = {}
        self.moved = 0

    def write(self, client: Client, payloads: list[Payload]) -> None:
        t = now()
        moves = []
        for payload in payloads:
            payload["enqueued_at"] = t
            moves.append((self.raws[id(payload)], payload["queue"], dumps(payload)))
        source = self.source
        self.moved += source._call(lambda: source.store.move_to_queue(source.key, moves).moved)


class ScheduledSet(SortedSet):
    """Jobs pushed with ``perform_in`` / ``perform_at``, waiting for their time."""

    kind = "schedule"

    def add_all_to_queue(self) -> int:
        """Push every scheduled job to its queue now; returns how many moved."""
        return self._each_batch(lambda page: self.requeue(page))


class _Failed(SortedSet):
    """Failed jobs go back to ``retry_queue`` when the job set one."""

    prefers_retry_queue = True

    def destination(self, item: Payload) -> str:
        retry_queue = item.get("retry_queue")
        if isinstance(retry_queue, str) and retry_queue:
            return retry_queue
        return super().destination(item)

    def retry_all(self) -> int:
        """Retry every entry now (each as `SortedEntry.retry`); returns how many moved."""
        return self._each_batch(lambda page: self.requeue(page, decrement=True))


class RetrySet(_Failed):
    """Jobs that failed and will be tried again at their score."""

    kind = "retry"

    def kill_all(self) -> int:
        """Move every entry to the dead set; returns how many moved."""
        return self._each_batch(self.kill_entries)


class DeadSet(_Failed):
    """Jobs that ran out of retries (or were killed), newest first."""

    kind = "dead"
    newest_first = True

    def kill_entries(self, entries: list[SortedEntry]) -> int:
        raise ValueError("these jobs are already dead")

    def kill(self, job: Payload | str | bytes) -> None:
        """Add a job (a payload or its JSON) to the dead set now, then trim the set."""
        member = dumps(job) if isinstance(job, dict) else job
        self._call(lambda: self.store.bury([(member, member)], now()))

    def trim(self) -> None:
        """Drop jobs older than ``dead_timeout`` and all but the newest ``dead_max_jobs``."""
        t = now()
        self._call(lambda: self.store.trim_dead(t))
