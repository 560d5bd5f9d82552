"""Pages of a queue or a job set: what an admin list reads, without copying the set.

A plain page is the size and one slice read in one MULTI, as Sidekiq's paginator does, so the
count and the rows agree even while workers take jobs. A filtered page (search text, job name,
queue) is found inside Redis by ``scan.lua``, a bounded stretch per call, so only the matching
rows of the page travel and Redis is never busy for long; the count of matches is exact for a
set that holds still and close for one that moves while it is read.

A filtered page that has to read entries to count its matches reads one part of the key:
`SEARCH_PART` entries at most, so the page costs the same on a set of any size. The matches,
the pages and the sidebar's counts are those of that part; the page links the next part.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import redis

from . import bad_keys, tallies
from .keys import Keys
from .paused import SKIPPED
from .replies import integer, text, texts
from .scripts import SCAN

#: Entries one filtering call reads before handing back: about 10 ms of Redis time for retry
#: entries with their tracebacks, 4-5 ms for queued jobs (bench/README.md, "Admin pages").
SCAN_PER_CALL = 5_000
#: Most entries one filtered page reads to count its matches: about 0.1 s of Redis time for
#: retry entries with their tracebacks. A longer key is searched a part at a time.
SEARCH_PART = 50_000


@dataclass(frozen=True)
class Filter:
    """What a filtered listing keeps. Empty strings keep everything.

    ``text`` is found in the entry's JSON whatever the case of its ASCII letters (a jid only
    as written), or with ``fields_only`` in the jid, job name and error only (for sites that
    hide arguments).
    ``job`` matches ``class``, ``display_class`` or ``wrapped``; ``queue`` the job's queue.
    """

    text: str = ""
    job: str = ""
    queue: str = ""
    fields_only: bool = False
    #: How a job's queue is read: its ``retry_queue`` first (retry and dead sets), and the
    #: queue of a job that names none.
    prefer_retry_queue: bool = False
    default_queue: str = "default"

    def __bool__(self) -> bool:
        return bool(self.text or self.job or self.queue)


@dataclass
class Rows:
    """One page of stored entries: ``(member, position)`` pairs (position: list index from
    the head, or score), the key's size, and for a filtered read the number of matches and,
    when asked, the matches per job name and per queue."""

    size: int
    rows: list[tuple[Any, Any]]
    matches: int | None = None
    names: Counter[str] = field(default_factory=Counter)
    queues: Counter[str] = field(default_factory=Counter)
    #: The entries read, as indexes ``(first, end)`` in the listing's order, when they were
    #: not the whole key: the matches and counts are those of this part.
    part: tuple[int, int] | None = None


def read_page(
    client: redis.Redis, key: str, kind: str, offset: int, limit: int, desc: bool
) -> Rows:
    """``limit`` entries from ``offset`` and the key's size, in one MULTI.

    A list is read from its head (the newest job); a sorted set by score, highest first when
    ``desc``.
    """
    pipe = client.pipeline(transaction=True)
    last = offset + limit - 1
    if kind == "list":
        pipe.llen(key)
        pipe.lrange(key, offset, last)
    else:
        pipe.zcard(key)
        pipe.zrange(key, offset, last, desc=desc, withscores=True)
    total, found = pipe.execute()
    if kind == "list":
        rows = [(member, offset + n) for n, member in enumerate(found)]
    else:
        rows = [(member, score) for member, score in found]
    return Rows(int(total), rows)


def scan_page(
    client: redis.Redis,
    key: str,
    kind: str,
    offset: int,
    limit: int,
    desc: bool,
    keep: Filter,
    facets: bool = False,
    whole: bool = True,
    first: int = 0,
    all_entries: bool = False,
) -> Rows:
    """The ``offset``-th to ``offset + limit``-th entries that ``keep`` matches among the
    `SEARCH_PART` entries from index ``first``, the number of matches there, and with
    ``facets`` the matches per job name and queue (one pass over the part). ``Rows.part``
    names the part when it is not the whole key; ``all_entries`` reads every entry instead
    (a count an action confirms, not a page). With counts and no filter, the rows are a plain
    slice of the whole key (``matches`` None) and only the counts are the part's (the walk
    asked for no row).
    Without ``whole`` the walk stops at the page's last row, wherever it is: the rows alone
    are wanted, and ``matches`` counts only the matches walked."""
    if not keep and whole and limit:
        plain = read_page(client, key, kind, offset, limit, desc)
        counted = scan_page(client, key, kind, 0, 0, desc, keep, facets, True, first, all_entries)
        return Rows(plain.size, plain.rows, None, counted.names, counted.queues, counted.part)
    rows: list[tuple[Any, Any]] = []
    names: Counter[str] = Counter()
    queues: Counter[str] = Counter()
    matches = 0
    start = first = max(0, first)
    end = first + SEARCH_PART if whole and not all_entries else None
    while start >= 0 and (end is None or start < end):
        budget = SCAN_PER_CALL if end is None else min(SCAN_PER_CALL, end - start)
        skip, wanted = max(0, offset - matches), limit - len(rows)
        reply = _scan(client, key, kind, desc, keep, start, budget, skip, wanted, facets, not whole)
        start, found = int(reply[0]), int(reply[1])
        matches += found
        rows += _rows(kind, reply[2])
        for counter, pairs in ((names, reply[3]), (queues, reply[4])):
            for n in range(0, len(pairs), 2):
                counter[text(pairs[n])] += int(pairs[n + 1])
        if not whole and len(rows) >= limit:
            break
    total = size(client, key, kind)  # after the walk: a list that grew meanwhile has more parts
    part = None
    if end is not None and (first > 0 or start >= 0):
        part = (first, start if start >= 0 else max(first, total))
    return Rows(total, rows[:limit], matches, names, queues, part)


def _scan(
    client: redis.Redis,
    key: str,
    kind: str,
    desc: bool,
    keep: Filter,
    start: int,
    budget: int,
    skip: int,
    limit: int,
    facets: bool,
    stop_when_full: bool,
) -> Any:
    """One call of ``scan.lua`` (its arguments are described there)."""
    return SCAN(
        client,
        [key],
        [
            kind,
            "1" if desc else "0",
            start,
            budget,
            skip,
            limit,
            keep.text,
            "1" if keep.fields_only else "0",
            keep.job,
            keep.queue,
            "1" if facets else "0",
            "1" if stop_when_full else "0",
            "1" if keep.prefer_retry_queue else "0",
            keep.default_queue,
        ],
    )


def _rows(kind: str, flat: list[Any]) -> list[tuple[Any, Any]]:
    """``scan.lua``'s (member, position, ...) as pairs: a list index, or a score."""
    return [
        (flat[n], int(flat[n + 1]) if kind == "list" else float(flat[n + 1]))
        for n in range(0, len(flat), 2)
    ]


def counted_page(
    client: redis.Redis,
    key: str,
    tally: str,
    offset: int,
    limit: int,
    desc: bool,
    keep: Filter,
    facets: bool = False,
) -> Rows:
    """What `scan_page` finds for a job set whose entries are counted (``tally``,
    `Keys.tally`) and a ``keep`` without search text, without reading every entry: the size,
    the matches and the counts come from the set's tallies (`djqueue.store.tallies`); the rows
    are one slice with no filter, else found by a walk that stops at the page's last row, from
    the end of the set nearer the page (the total is known, so the last page is as near as
    the first).
    When no count can be completed (writers that do not count kept changing the set while it
    was counted), the page is `scan_page`'s over every entry, as it would have been counted:
    a counted page is never a part."""
    if keep.text:
        raise ValueError("search text is found by scan_page: entries are not counted by text")
    counted = tallies.read(client, key, tally)
    if counted.tallies is None:
        return scan_page(client, key, "zset", offset, limit, desc, keep, facets, all_entries=True)
    matches, names, queues = tallies.matching(
        counted.tallies, keep.job, keep.queue, keep.prefer_retry_queue, keep.default_queue
    )
    if keep and offset * 2 > matches:  # nearer the far end: walk from there
        count = min(limit, matches - offset)
        skip = matches - offset - count
        found = scan_page(client, key, "zset", skip, count, not desc, keep, whole=False)
        rows = found.rows[::-1] if count > 0 else []
    elif keep:
        rows = scan_page(client, key, "zset", offset, limit, desc, keep, whole=False).rows
    else:
        rows = read_page(client, key, "zset", offset, limit, desc).rows
    if not facets:
        names, queues = Counter(), Counter()
    return Rows(counted.size, rows, matches if keep else None, names, queues)


def next_matches(
    client: redis.Redis, key: str, kind: str, desc: bool, keep: Filter, start: int, limit: int
) -> tuple[list[tuple[Any, Any]], int]:
    """Up to ``limit`` matches from index ``start`` on, and the index to go on from (-1 at
    the end): how a bulk action on a filtered list walks it in batches. A caller that removed
    entries it was given steps the index back by as many."""
    rows: list[tuple[Any, Any]] = []
    while start >= 0 and len(rows) < limit:
        wanted = limit - len(rows)
        reply = _scan(client, key, kind, desc, keep, start, SCAN_PER_CALL, 0, wanted, False, True)
        start = int(reply[0])
        rows += _rows(kind, reply[2])
    return rows, start


# -- plain reads of one queue or job set ------------------------------------------------------


def size(client: redis.Redis, key: str, kind: str) -> int:
    """Entries in a queue (``kind="list"``) or a job set (``"zset"``)."""
    return int(client.llen(key) if kind == "list" else client.zcard(key))


def oldest(client: redis.Redis, key: str) -> bytes | None:
    """A queue's next job to run (its right end), as stored; None when it is empty."""
    found: Any = client.lindex(key, -1)
    return found


def list_slice(client: redis.Redis, key: str, start: int, end: int) -> list[bytes]:
    """A queue's entries from index ``start`` to ``end`` (inclusive; negative from the end)."""
    found: Any = client.lrange(key, start, end)
    return list(found)


def set_slice(
    client: redis.Redis, key: str, start: int, end: int, desc: bool = False
) -> list[tuple[bytes, float]]:
    """A job set's ``(member, score)`` pairs by rank, lowest score first unless ``desc``."""
    found: Any = client.zrange(key, start, end, desc=desc, withscores=True)
    return list(found)


def at_score(client: redis.Redis, key: str, score: float) -> list[tuple[bytes, float]]:
    """A job set's ``(member, score)`` pairs with exactly this score."""
    bound = repr(float(score))
    found: Any = client.zrange(key, bound, bound, byscore=True, withscores=True)
    return list(found)


def scan_set(client: redis.Redis, key: str, pattern: str, count: int) -> Iterator[Any]:
    """A job set's ``(member, score)`` pairs whose member matches the glob ``pattern``, by
    ZSCAN (``count`` a call), so Redis is never busy for long."""
    found: Any = client.zscan_iter(key, match=pattern, count=count)
    return iter(found)


def queue_names_and_paused(client: redis.Redis, keys: Keys) -> tuple[list[str], frozenset[str]]:
    """The names in ``queues`` (sorted) and the paused queues' names, one round trip. A
    ``queues`` of another type raises WRONGTYPE (the caller names it); a paused set of another
    type pauses nothing and is logged once by name (`paused.SKIPPED`)."""
    pipe = client.pipeline(transaction=False)
    pipe.smembers(keys.queues)
    pipe.smembers(keys.paused)
    names, paused = pipe.execute(raise_on_error=False)
    if isinstance(names, Exception):
        raise names
    if isinstance(paused, Exception):
        if not bad_keys.is_wrong_type(paused):
            raise paused
        bad_keys.report([bad_keys.met(client, keys.paused, "set", SKIPPED)])
        paused = ()
    else:
        bad_keys.report([], [keys.paused])
    return texts(names), frozenset(texts(paused))


def queue_figures(
    client: redis.Redis, keys: Keys, names: Sequence[str]
) -> tuple[list[tuple[int, bytes | None]], list[tuple[str, str]]]:
    """Each queue's (size, oldest job as stored), one round trip for all, and the queues
    whose key is not a list as (key, problem) (`bad_keys.checked`; such a queue reads empty)."""
    pipe = client.pipeline(transaction=False)
    wanted: list[tuple[str, str]] = []
    for name in names:
        pipe.llen(keys.queue(name))
        pipe.lindex(keys.queue(name), -1)
        wanted += [(keys.queue(name), "list")] * 2
    replies, problems = bad_keys.checked(client, pipe, wanted)
    found = [(integer(replies[2 * n]), replies[2 * n + 1]) for n in range(len(names))]
    return found, problems
