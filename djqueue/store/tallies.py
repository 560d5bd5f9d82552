"""The retry and dead sets' counts per job and queue, kept as entries come and go.

The counts page ("Show counts") and a job or queue filter's total need the number of entries
per job name and per queue over the whole set. Reading every entry of a 100,000-job retry
set takes Redis longer than the page may (about 0.2 s for the reads alone, whatever is done
with them), so every script that adds an entry to those sets or removes one counts it in a
hash beside the set (``lua/tally.lua``), and a page reads the hash (``lua/tally_read.lua``).

Writers that do not count (a Ruby Sidekiq process, redis-cli) are why the reader checks:
the hash's total must equal ZCARD, and it is counted again whole when it does not, when a
count is not a sound integer, or when the last whole count is older than `MAX_AGE` (a foreign
writer that both added and removed entries since leaves the total right). So the counts are
exact when only djqueue writes the set, and at most `MAX_AGE` old otherwise. A count is built
a few thousand entries per call, in score order, and the moves in between count only the
entries the build has passed, so Redis is never busy for long and the build stays exact.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

import redis

from . import bad_keys
from .replies import text
from .scripts import TALLY_READ

logger = logging.getLogger(__name__)

#: Seconds after which the counts are taken again from every entry, whatever the checks say.
MAX_AGE = 300
#: Entries a call reads while the counts are built: about 17 ms of Redis time for retry
#: entries with their tracebacks (bench/README.md, "Admin pages": 348 ms for 100,000).
BUILD_PER_CALL = 5_000
#: Builds one read may start again after a writer that does not count changed the set
#: meanwhile, before it leaves the counts to the walk (`Counted.tallies` None).
BUILD_TRIES = 2


@dataclass(frozen=True)
class Tally:
    """How many entries of a set share a job name and queues, each read from the entry's JSON
    as ``scan.lua`` reads it (text as the JSON spells it; None when the entry lacks it)."""

    shown: str | None
    job_class: str | None
    retry_queue: str | None
    queue: str | None
    count: int

    def queue_of(self, prefer_retry_queue: bool, default_queue: str) -> str:
        """The queue the lists show, by ``scan.lua``'s rule (an empty name is a name)."""
        if prefer_retry_queue and self.retry_queue is not None:
            return self.retry_queue
        return self.queue if self.queue is not None else default_queue


@dataclass(frozen=True)
class Counted:
    """A set's size and counts: what a counts page and a job or queue filter's total need."""

    size: int
    #: None when no count could be completed: writers that do not count kept changing the
    #: set during `BUILD_TRIES` builds (the page walks the set instead).
    tallies: list[Tally] | None
    #: Whether the read counted every entry again (the hash was missing or not trusted).
    recounted: bool


def read(client: redis.Redis, key: str, tally: str) -> Counted:
    """The counts of the sorted set ``key`` kept in ``tally`` (`Keys.tally`), counted again
    inside Redis first when they cannot be trusted (see the module's docstring), in calls of
    `BUILD_PER_CALL` entries."""
    calls = tries = 0
    while True:
        state, size, flat, found = TALLY_READ(client, [key, tally], [MAX_AGE, BUILD_PER_CALL])
        bad_keys.report(bad_keys.pairs(found), [tally])
        calls += 1
        state = int(state)
        if state == 3:  # built again from the start: the set changed under the build
            tries += 1
            if tries >= BUILD_TRIES:
                logger.info("counts of %s: the set kept changing while counted; walked", key)
                return Counted(int(size), None, True)
        elif state != 2:  # 2: a build goes on
            break
    tallies = []
    for n in range(0, len(flat), 2):
        shown, job_class, retry_queue, queue = (
            value if isinstance(value, str) else None for value in json.loads(text(flat[n]))
        )
        tallies.append(Tally(shown, job_class, retry_queue, queue, int(flat[n + 1])))
    return Counted(int(size), tallies, calls > 1 or state == 1)


def matching(
    tallies: Iterable[Tally],
    job: str,
    queue: str,
    prefer_retry_queue: bool,
    default_queue: str,
) -> tuple[int, Counter[str], Counter[str]]:
    """The entries a job and queue filter keep (``""``: any), and the counts beside each
    filter's choices with the other filter applied and not itself, as ``scan.lua`` counts."""
    matches = 0
    names: Counter[str] = Counter()
    queues: Counter[str] = Counter()
    for tally in tallies:
        job_ok = not job or job in (tally.shown, tally.job_class)
        shown_queue = tally.queue_of(prefer_retry_queue, default_queue)
        queue_ok = not queue or shown_queue == queue
        if job_ok and queue_ok:
            matches += tally.count
        if queue_ok:
            names[tally.shown or ""] += tally.count
        if job_ok:
            queues[shown_queue] += tally.count
    return matches, +names, +queues
