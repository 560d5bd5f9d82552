"""The Lua scripts of `djqueue.store`, each kept in ``lua/NAME.lua`` and run by SHA.

A script is how a state change that touches several keys happens atomically: Redis runs it
whole, and no other client sees a state in between. EVALSHA costs one round trip like any
command; the script is loaded again when Redis has forgotten it (after a restart or SCRIPT
FLUSH). Each file opens with the KEYS and ARGV it takes.

A line ``--!include NAME`` is replaced by ``lua/NAME.lua`` (Redis runs one text per script, so
the job-status helpers every transition shares are kept once and pasted in when loaded); an
included file may include others, and each is pasted once, where it is first named. Comment
lines are left out of what Redis is sent: it keeps each script's text in its memory, which a
Redis at its ``maxmemory`` must not spend on the files' explanations. ``@IN_FLIGHT_TTL@``
and ``@LIMITERS_TTL@`` are replaced by those constants of `djqueue.store.keys`, so a
lifetime a script shares with Python is written once.
"""

from __future__ import annotations

import hashlib
from importlib import resources
from typing import Any

import redis
import redis.exceptions

from .calls import Steps, execute
from .keys import LIMITERS_TTL, STATUS_IN_FLIGHT_TTL


def _read(name: str) -> str:
    return resources.files(__package__).joinpath(f"lua/{name}.lua").read_text("utf-8")


def _pasted(name: str, done: set[str], swap: dict[str, str]) -> str:
    lines = []
    for line in _read(name).splitlines(keepends=True):
        if line.lstrip().startswith("--") and not line.startswith("--!include "):
            continue  # a comment: Redis keeps every loaded script's text in its memory
        if not line.startswith("--!include "):
            lines.append(line)
        elif (included := swap.get(named := line.split()[1], named)) not in done:
            done.add(included)
            lines.append(_pasted(included, done, swap))
    return "".join(lines)


def _source(name: str, swap: dict[str, str]) -> str:
    pasted = _pasted(name, {name}, swap)
    pasted = pasted.replace("@LIMITERS_TTL@", str(LIMITERS_TTL))
    return pasted.replace("@IN_FLIGHT_TTL@", str(STATUS_IN_FLIGHT_TTL))


class Script:
    """``lua/<name>.lua``, callable on a `redis.Redis` (or a pipeline that loaded it).
    ``swap`` pastes another file for an include (``{"batch": "no_batch"}``): a variant of
    the script without what it does not need."""

    def __init__(self, name: str, swap: dict[str, str] | None = None) -> None:
        self.name = name
        self.source = _source(name, swap or {})
        self.sha = hashlib.sha1(self.source.encode()).hexdigest()

    def __repr__(self) -> str:
        return f"<Script {self.name}>"

    def __call__(self, client: Any, keys: list[Any], args: list[Any]) -> Any:
        return execute(client, self.steps(keys, args))

    def steps(self, keys: list[Any], args: list[Any]) -> Steps[Any]:
        """The call as `djqueue.store.calls` steps, for a sync or an asyncio client: EVALSHA,
        and when Redis has forgotten the script, SCRIPT LOAD and EVALSHA again."""
        try:
            return (yield ("EVALSHA", self.sha, len(keys), *keys, *args))
        except redis.exceptions.NoScriptError:
            yield from self._load()
            return (yield ("EVALSHA", self.sha, len(keys), *keys, *args))

    def queue(self, pipe: Any, keys: list[Any], args: list[Any]) -> None:
        """Queue the call on a pipeline; its reply is a `redis.exceptions.NoScriptError` when
        Redis has not loaded the script (call it directly then: that loads it)."""
        pipe.evalsha(self.sha, len(keys), *keys, *args)

    def ensure_loaded(self, client: redis.Redis) -> None:
        if not client.script_exists(self.sha)[0]:
            execute(client, self._load())

    def _load(self) -> Steps[None]:
        """SCRIPT LOAD. A Redis before 7.0 reads no ``#!lua flags=...`` line (the flags let a
        script that only moves jobs run when Redis is out of memory): there the script is
        loaded without it, once and for all in this process."""
        try:
            yield ("SCRIPT LOAD", self.source)
        except redis.exceptions.ResponseError:
            if not self.source.startswith("#!"):
                raise
            self.source = self.source.split("\n", 1)[1]
            self.sha = hashlib.sha1(self.source.encode()).hexdigest()
            yield ("SCRIPT LOAD", self.source)


#: The push of jobs of no batch, and of jobs of batches (lua/batch.lua pasted in).
PUSH = Script("push", swap={"batch": "no_batch"})
PUSH_BATCH = Script("push")
PUSH_ONE = Script("push_one")
TAKE = Script("take")
REQUEUE_PROCESS = Script("requeue_process")
MOVE_TO_QUEUE = Script("move_to_queue")
RETRY_LATER = Script("retry_later")
BURY = Script("bury")
FIND_JID = Script("find_jid")
SCAN = Script("scan")
TALLY_READ = Script("tally_read")
DELETE_FROM_QUEUE = Script("delete_from_queue")
DELETE_FROM_SET = Script("delete_from_set")
BEAT = Script("beat")
LEAVE = Script("leave")
FINISH = Script("finish")
CANCEL = Script("cancel")
STARTED = Script("started")
ERROR_HISTORY = Script("error_history")
PERIODIC_FIRE = Script("periodic_fire")
PERIODIC_SAVE = Script("periodic_save")
PERIODIC_STATUS = Script("periodic_status")
UPGRADE = Script("upgrade")
LIMIT_ENTER = Script("limit_enter")
LIMIT_RENEW = Script("limit_renew")
LIMIT_LEAVE = Script("limit_leave")
LIMIT_UNPARK = Script("limit_unpark")
PARKED_COUNT = Script("parked_count")
PUT_BACK = Script("put_back")
BATCH_CANCEL = Script("batch_cancel")
