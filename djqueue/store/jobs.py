"""Where jobs wait, and the moves between those places: queues, ``schedule``, ``retry``, ``dead``.

Each move is one named, atomic transition, used by every caller that makes it: the client's
push, the poller's move of due jobs, the runtime's retry and bury, and the inspection API's
retry now / add to queue / kill / delete / clear. A move that takes a job out of one key checks
that it was still there before writing it elsewhere, so two callers racing never duplicate a
job and a crash never loses one in between.

Members are passed and compared as stored (bytes as read): Redis removes list and sorted-set
members by value, and re-encoded JSON could differ by one space and match nothing.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple

import redis
import redis.exceptions

from . import bad_keys
from .calls import Steps, execute
from .keys import Keys
from .replies import text, texts
from .scripts import (
    BURY,
    DELETE_FROM_QUEUE,
    DELETE_FROM_SET,
    FIND_JID,
    MOVE_TO_QUEUE,
    PUSH,
    PUSH_BATCH,
    PUSH_ONE,
    RETRY_LATER,
)

Member = str | bytes

#: Entries one find-by-jid script call scans before handing back to the caller: about 10 ms
#: of Redis time per 10,000 jobs of 300 bytes on a small machine.
SCAN_PER_CALL = 10_000
#: Most candidates one call returns; a jid quoted in more arguments than this is unheard of.
CANDIDATES = 50

#: Sidekiq's limits of the dead set: 10,000 jobs, 180 days.
DEAD_MAX_JOBS = 10_000
DEAD_TIMEOUT = 180 * 24 * 3600.0
#: `JobStore.retry_later`'s answer for a tracked job with a cancel request: nothing done.
STOP_ASKED = "stop asked"


class Moved(NamedTuple):
    """What a move to queues did: entries moved, and entries left because their queue's key
    is not a list."""

    moved: int
    stuck: int


class JobStore:
    """The job transitions for one Redis and namespace.

    ``dead_max_jobs`` and ``dead_timeout`` are the dead set's limits, applied by every bury.
    Redis errors are raised as redis-py raises them; callers turn them into their own.
    """

    def __init__(
        self,
        redis_client: redis.Redis,
        keys: Keys,
        dead_max_jobs: int = DEAD_MAX_JOBS,
        dead_timeout: float = DEAD_TIMEOUT,
    ) -> None:
        self.redis = redis_client
        self.keys = keys
        self.dead_max_jobs = dead_max_jobs
        self.dead_timeout = dead_timeout

    # -- push --------------------------------------------------------------------------------

    def push(
        self,
        queued: dict[str, list[str]],
        scheduled: Sequence[tuple[float, str]],
        batches: Sequence[str] = (),
        in_batch: bool = False,
    ) -> list[tuple[str, str]]:
        """Write jobs whole or not at all: ``queued`` maps a queue name to job JSON (LPUSHed in
        order, the queue named in ``queues``), ``scheduled`` holds (run-at, JSON) pairs for
        the schedule. One job to one queue (``perform_later``) takes the shorter script.

        A unique job (one with a ``unique_digest``, `djqueue.unique`) takes its lock in the
        same step; one whose lock another job holds is not written. Returns those left out,
        as (jid, the holder's jid) pairs: usually none.

        ``batches`` holds the definitions of the batches the jobs belong to (JSON texts made by
        `djqueue.batch`), created in the same step if they do not exist; ``in_batch`` says a
        job carries a ``bid``, so each is counted in its batch (lua/batch.lua). A job naming a
        batch that no longer takes jobs makes the call write nothing: a
        ``redis.exceptions.ResponseError`` starting with ``BATCH``."""
        return execute(self.redis, self.push_steps(queued, scheduled, batches, in_batch))

    def push_steps(
        self,
        queued: dict[str, list[str]],
        scheduled: Sequence[tuple[float, str]],
        batches: Sequence[str] = (),
        in_batch: bool = False,
    ) -> Steps[list[tuple[str, str]]]:
        """`push` as `djqueue.store.calls` steps: the one script call, its arguments and its
        reply's decoding, for the sync client (`push`) and the asyncio one (the client's
        ``awrite``) alike."""
        if not scheduled and len(queued) == 1 and not in_batch and not batches:
            ((queue, jsons),) = queued.items()
            if len(jsons) == 1:
                reply = yield from PUSH_ONE.steps(
                    [self.keys.queues, self.keys.queue(queue)],
                    [queue, jsons[0], self.keys.status_prefix],
                )
                if type(reply) is int:
                    return []
                *skipped, found = reply
                bad_keys.report(bad_keys.pairs(found))
                return [(text(skipped[0]), text(skipped[1]))] if len(skipped) == 2 else []
        keys = [self.keys.queues, self.keys.schedule]
        args: list[Any] = [len(queued)]
        for queue, jsons in queued.items():
            keys.append(self.keys.queue(queue))
            args += (queue, len(jsons))
        for jsons in queued.values():
            args += jsons
        for at, json in scheduled:
            args += (at, json)
        args += (*batches, len(batches), "1" if in_batch else "", self.keys.status_prefix)
        script = PUSH_BATCH if in_batch or batches else PUSH
        _written, skipped, found = yield from script.steps(keys, args)
        if found:
            bad_keys.report(bad_keys.pairs(found))
        names = [text(name) for name in skipped]
        return list(zip(names[::2], names[1::2], strict=True))

    # -- sorted sets to queues ---------------------------------------------------------------

    def move_to_queue(self, source: str, moves: Sequence[tuple[Member, str, str]]) -> Moved:
        """Move entries of the sorted set ``source`` to queues: (member as stored, queue name,
        JSON to push) each. Only entries still in the set move; an entry whose queue key is
        not a list stays where it is (``stuck``)."""
        if not moves:
            return Moved(0, 0)
        keys = [source, self.keys.queues]
        args: list[Any] = []
        for member, queue, json in moves:
            keys.append(self.keys.queue(queue))
            args += (member, queue, json)
        args += (self.keys.tally(source), self.keys.status_prefix)
        moved, stuck, found = MOVE_TO_QUEUE(self.redis, keys, args)
        bad_keys.report(bad_keys.pairs(found), [self.keys.queues])
        return Moved(int(moved), int(stuck))

    def earliest(self, sources: Sequence[str]) -> list[float | None]:
        """The lowest score of each sorted set (None when empty), in one round trip. A key
        that is not a sorted set reads as empty (logged once by name), so the others move."""
        pipe = self.redis.pipeline(transaction=False)
        for key in sources:
            pipe.zrange(key, 0, 0, withscores=True)
        found: list[float | None] = []
        bad: list[tuple[str, str]] = []
        for key, head in zip(sources, pipe.execute(raise_on_error=False), strict=True):
            if isinstance(head, redis.exceptions.ResponseError):
                if not bad_keys.is_wrong_type(head):
                    raise head
                bad.append(bad_keys.met(self.redis, key, "zset", "skipped: none of its jobs move"))
                head = None
            found.append(head[0][1] if head else None)
        bad_keys.report(bad, sources)
        return found

    def due(self, source: str, now: float, limit: int, skip: int = 0) -> list[bytes]:
        """Up to ``limit`` members of ``source`` whose score is ``now`` or earlier, after the
        first ``skip`` of them."""
        members: Any = self.redis.zrangebyscore(source, "-inf", now, start=skip, num=limit)
        return [bytes(m) if not isinstance(m, bytes) else m for m in members]

    # -- failure -----------------------------------------------------------------------------

    def retry_later(self, working: str, stored: Member, json: str, at: float) -> bool | None | str:
        """A failed job from its working list to ``retry`` at ``at``; False when it had left
        the working list already (pushed back meanwhile, or this call is a second try); None
        when ``retry`` is not a sorted set (nothing done; logged once by name); `STOP_ASKED`
        when the job is tracked and a cancel was asked for (nothing done: checked here, in
        the same step, as the request can come at any moment; what follows is the caller's)."""
        args = [stored, json, at, self.keys.tally(self.keys.retry), self.keys.status_prefix]
        done, found = RETRY_LATER(self.redis, [self.keys.retry, working], args)
        bad_keys.report(bad_keys.pairs(found), [self.keys.retry])
        done = int(done)
        if done == 2:
            return STOP_ASKED
        return None if done < 0 else bool(done)

    def bury(
        self,
        jobs: Sequence[tuple[Member, Member]],
        now: float,
        source: str = "",
        kind: str = "none",
    ) -> int:
        """Put jobs in ``dead`` at ``now`` and trim the set to its limits; the only way into it.

        ``jobs`` holds (member as stored in ``source``, JSON to bury) pairs. ``kind`` says what
        ``source`` is: ``"list"`` (a working list or a queue), ``"zset"`` (schedule, retry) or
        ``"none"`` (the jobs are in no key). A job in a source is buried only if it was still
        there. Returns how many were buried.
        """
        if kind not in ("list", "zset", "none"):
            raise ValueError(f"kind must be 'list', 'zset' or 'none', not {kind!r}")
        if not jobs:
            return 0
        return self._bury(jobs, now, source, kind)

    def trim_dead(self, now: float) -> None:
        """Trim ``dead`` to its limits as of ``now``, as every bury does."""
        self._bury((), now, "", "none")

    def _bury(
        self, jobs: Sequence[tuple[Member, Member]], now: float, source: str, kind: str
    ) -> int:
        args: list[Any] = [kind, repr(now), repr(now - self.dead_timeout), self.dead_max_jobs]
        for stored, json in jobs:
            args += (stored, json)
        counted = self.keys.tally(source) if kind == "zset" else ""
        args += (self.keys.tally(self.keys.dead), counted, self.keys.status_prefix)
        keys = [self.keys.dead, source or self.keys.dead]
        buried, found = BURY(self.redis, keys, args)
        bad_keys.report(bad_keys.pairs(found), [self.keys.dead])
        return int(buried)

    # -- deleting ----------------------------------------------------------------------------

    def delete_from_queue(self, queue: str, stored: Member) -> bool:
        """Remove one job from a queue; False when it is no longer there (a worker took it).
        A unique job frees its lock (`djqueue.unique`)."""
        return self.delete_many_from_queue(queue, [(-1, stored)]) == 1

    def delete_many_from_queue(self, queue: str, found: Sequence[tuple[int, Member]]) -> int:
        """Remove ``(index, stored)`` jobs from a queue in one pass (`delete_from_queue.lua`);
        returns how many were still there. Unique jobs free their locks."""
        if not found:
            return 0
        args: list[Any] = [f"djqueue-deleted-{uuid.uuid4().hex}"]
        for index, stored in found:
            args += (index, stored)
        args.append(self.keys.status_prefix)
        return int(DELETE_FROM_QUEUE(self.redis, [self.keys.queue(queue)], args))

    def delete_from_set(self, source: str, members: Sequence[Member]) -> int:
        """Remove entries from a sorted set; returns how many were still there. Unique jobs
        free their locks (`delete_from_set.lua`)."""
        if not members:
            return 0
        args = [*members, self.keys.tally(source), self.keys.status_prefix]
        return int(DELETE_FROM_SET(self.redis, [source], args))

    def clear_queue(self, queue: str) -> int:
        """Delete a queue and forget its name; returns how many jobs it held."""
        pipe = self.redis.pipeline(transaction=True)
        pipe.llen(self.keys.queue(queue))
        pipe.unlink(self.keys.queue(queue))
        pipe.srem(self.keys.queues, queue)
        return int(pipe.execute()[0])

    def clear_set(self, source: str) -> int:
        """Delete a sorted set; returns how many entries it held."""
        pipe = self.redis.pipeline(transaction=True)
        pipe.zcard(source)
        pipe.unlink(source)
        if counted := self.keys.tally(source):
            pipe.unlink(counted)  # an empty set is counted again at the next read
        return int(pipe.execute()[0])

    # -- finding -----------------------------------------------------------------------------

    def queue_names(self) -> list[str]:
        """Every queue named in ``queues``, sorted."""
        return texts(self.redis.smembers(self.keys.queues))

    def places(self, state: str, queue: str | None = None) -> list[tuple[str, str]]:
        """Where a job in ``state`` (a tracked job's status; ``queue`` its queue) waits, as
        (key, ``"list"`` or ``"zset"``): its one place when the status says (a pending job:
        its queue, then the limiters' parked lists), else the schedule, the retry set, every
        queue and every parked list (one more read each, the ``queues`` and ``parked``
        sets)."""
        if state == "scheduled":
            return [(self.keys.schedule, "zset")]
        if state == "retry":
            return [(self.keys.retry, "zset")]
        if state == "pending" and queue:
            return [(self.keys.queue(queue), "list"), *self.parked_lists()]
        found = [(self.keys.schedule, "zset"), (self.keys.retry, "zset")]
        queues = [(self.keys.queue(name), "list") for name in self.queue_names()]
        return found + queues + self.parked_lists()

    def parked_lists(self) -> list[tuple[str, str]]:
        """The parked lists of the limiters that have parked jobs (`djqueue.store.limits`)."""
        names = bad_keys.tolerate(
            self.redis,
            self.keys.parked,
            "set",
            "skipped: parked jobs not looked at",
            lambda: self.redis.smembers(self.keys.parked),
            set(),
        )
        return [(self.keys.parked_jobs(name), "list") for name in sorted(texts(names))]

    def candidates(self, key: str, jid: str, kind: str) -> Iterator[tuple[Any, Any]]:
        """``(member, position)`` pairs of a list (``kind="list"``) or sorted set
        (``"zset"``) whose text contains ``jid``, in order; the position is the list index or
        the score. The scan runs inside Redis, `SCAN_PER_CALL` entries per call, so Redis is
        never busy for long and only candidates travel; the caller checks each one's jid."""
        start = 0
        while start >= 0:
            reply = FIND_JID(self.redis, [key], [jid, kind, CANDIDATES, start, SCAN_PER_CALL])
            start = int(reply[0])
            for index in range(1, len(reply), 2):
                yield reply[index], reply[index + 1]
