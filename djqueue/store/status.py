"""Job status: the reads and the few writes of a tracked job's lifecycle that are not part of a
move between queues and sets.

A job pushed with a ``retention`` is tracked: every transition that moves it (push, take, retry
later, bury, push back, requeue after a crash, move to queue) also writes its state into the
hash ``status:JID`` in the same script (``lua/status.lua``), so no crash can separate the two.
This class reads that hash (and, during an upgrade, the one an earlier version wrote under
layout 1's name: see `read`), waits for a job's end, records the end of a job that ran (with its
return value), and cancels a job where it waits or flags it while it runs.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import redis
import redis.exceptions

from . import bad_keys
from .calls import Steps, execute
from .jobs import Member
from .keys import Keys
from .replies import text
from .scripts import CANCEL, ERROR_HISTORY, FINISH

#: The states a job ends in (``status_finished`` in lua/status.lua): it leaves them only when
#: it is sent to run again.
ENDS = ("completed", "dead", "cancelled", "expired")


class StatusStore:
    """Status hashes of one Redis and namespace."""

    def __init__(self, redis_client: redis.Redis, keys: Keys) -> None:
        self.redis = redis_client
        self.keys = keys
        self.earlier = keys.earlier

    def read(self, jid: str) -> dict[str, str]:
        """The status hash of ``jid`` as text (empty when the job is not tracked or expired):
        one round trip, whatever the number of jobs.

        Layout 1's hash (``status:JID``) is read in the same trip: an earlier version's
        process still running during a rolling deploy writes there, after the upgrade step
        moved the rest. When both names hold a status, the one that says the job ended wins
        (the other version ran it last), else the new one; the other fills the fields the
        winner lacks (``payload``, ``enqueued_at`` written at the push)."""
        return execute(self.redis, self.read_steps(jid))

    def read_steps(self, jid: str) -> Steps[dict[str, str]]:
        """`read` as `djqueue.store.calls` steps, for a sync or an asyncio client."""
        found = yield [("HGETALL", self.keys.status(jid)), ("HGETALL", self.earlier.status(jid))]
        new, old = ({text(k): text(v) for k, v in each.items()} for each in found)
        if old and (not new or (old.get("state") in ENDS and new.get("state") not in ENDS)):
            new, old = old, new
        return {**old, **new}

    def checked(self, jid: str) -> tuple[dict[str, str] | None, list[tuple[str, str]]]:
        """`read`, and what is wrong with the status key as (key, problem) pairs: the fields
        are None when the key is not a hash; an ``attempts`` that is not a number is named
        (the fields keep it: the job's next start repairs it)."""
        return execute(self.redis, self.checked_steps(jid))

    def checked_steps(self, jid: str) -> Steps[tuple[dict[str, str] | None, list[tuple[str, str]]]]:
        """`checked` as `djqueue.store.calls` steps, for a sync or an asyncio client (the
        status read of ``get_result`` and ``aget_result``)."""
        key = self.keys.status(jid)
        try:
            fields = yield from self.read_steps(jid)
        except redis.exceptions.ResponseError as exc:
            if not bad_keys.is_wrong_type(exc):
                raise
            problem = yield from bad_keys.wrong_type_steps(key, "hash")
            return None, [(key, problem or str(exc))]
        attempts = fields.get("attempts", "")
        if bad_keys.not_a_count(fields.get("attempts")):
            return fields, [(key, f"has attempts {bad_keys.quoted(attempts)}, not an integer")]
        return fields, []

    def states(self, jids: Sequence[str]) -> list[str]:
        """Each job's tracked state (``""``: not tracked, expired, or a status key of the wrong
        type, logged once by name), one round trip for all."""
        if not jids:
            return []
        pipe = self.redis.pipeline(transaction=False)
        for jid in jids:
            pipe.hget(self.keys.status(jid), "state")
        found = []
        for jid, reply in zip(jids, pipe.execute(raise_on_error=False), strict=True):
            if isinstance(reply, Exception):
                if not bad_keys.is_wrong_type(reply):
                    raise reply
                key = self.keys.status(jid)
                bad_keys.report([bad_keys.met(self.redis, key, "hash", "its state not shown")])
                reply = None
            found.append(text(reply))
        return found

    def wait(self, jid: str, timeout: float) -> bool:
        """Block in Redis until ``jid`` has finished or ``timeout`` seconds pass (0: forever);
        True when it has finished. BLMOVE of the done list's one element onto itself hands it
        back without taking it, so any number of waiters wake on the same end."""
        key = self.keys.status_done(jid)
        found = self.redis.blmove(key, key, timeout, "RIGHT", "LEFT")  # type: ignore[arg-type]
        return found is not None

    def finish(self, working: str, stored: Member, state: str, fields: dict[str, str]) -> bool:
        """A tracked job leaves its working list at once as ``state`` (dead, when dropped after
        failing) with ``fields`` (error_class, error_message) in its status; False when it had
        left already (pushed back at shutdown: it runs again). Ends after a run ride on the
        acknowledgement instead (`WorkingLists.take`)."""
        args: list[Any] = [stored, state]
        for field, value in fields.items():
            args += (field, value)
        args.append(self.keys.status_prefix)
        found = FINISH(self.redis, [working], args)
        bad_keys.report(bad_keys.pairs(found[1] if len(found) > 1 else None))
        return bool(found[0])

    def note_error(self, jid: str, entry: dict[str, Any], keep: int) -> bool:
        """Add a failed attempt to a tracked job's error history (the ``errors`` field, the last
        ``keep`` attempts); False when the job is not tracked. Written before the move that
        settles the attempt, so a status that says retry or dead already lists it."""
        found = ERROR_HISTORY(self.redis, [self.keys.status(jid)], [json.dumps(entry), keep])
        return bool(found)

    def remove(self, source: str, kind: str, member: Member) -> bool:
        """Take a waiting job out of a queue (``kind="list"``) or the schedule or retry set
        (``"zset"``) as cancelled; False when it was not there any more."""
        args = [kind, member, self.keys.tally(source), self.keys.status_prefix]
        return bool(CANCEL(self.redis, [source], args))

    def flag_cancel(self, jid: str, held: bool = False) -> bool:
        """Ask a running tracked job to stop; False when it is not running (state 'active').
        ``held``: a job not found where its status says 'pending' is in a worker's hands (not
        yet marked active): flag it too, it ends cancelled once it runs."""
        key = self.keys.status(jid)
        kind = "held" if held else "running"
        return bool(CANCEL(self.redis, [key], [kind, jid, "", self.keys.status_prefix]))

    def cancel_requested(self, jids: Sequence[str]) -> set[str]:
        """Which of these running jobs were asked to stop: one round trip for all (a status
        key of the wrong type asks nothing: the job's next transition replaces it)."""
        if not jids:
            return set()
        pipe = self.redis.pipeline(transaction=False)
        for jid in jids:
            pipe.hexists(self.keys.status(jid), "cancel")
        replies = pipe.execute(raise_on_error=False)
        for reply in replies:
            if isinstance(reply, Exception) and not bad_keys.is_wrong_type(reply):
                raise reply
        flags = [not isinstance(reply, Exception) and bool(reply) for reply in replies]
        return {jid for jid, flagged in zip(jids, flags, strict=True) if flagged}
