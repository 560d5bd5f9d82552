"""The Lua scripts of `djqueue.store`, each kept in ``lua/NAME.lua`` and run by SHA.

A script is how a state change that touches several keys happens atomically: Redis runs it
whole, and no other client sees a state in between. EVALSHA costs one round trip like any
command; the script is loaded again when Redis has forgotten it (after a restart or SCRIPT
FLUSH). Each file opens with the KEYS and ARGV it takes.

A line ``--!include NAME`` is replaced by ``lua/NAME.lua`` (Redis runs one text per script, so
the job-status helpers every transition shares are kept once and pasted in when loaded); an
included file may include others, and each is pasted once, where it is first named.
"""

from __future__ import annotations

import hashlib
from importlib import resources
from typing import Any

import redis
import redis.exceptions

from .keys import STATUS_IN_FLIGHT_TTL


def _read(name: str) -> str:
    return resources.files(__package__).joinpath(f"lua/{name}.lua").read_text("utf-8")


def _pasted(name: str, done: set[str]) -> str:
    lines = []
    for line in _read(name).splitlines(keepends=True):
        if not line.startswith("--!include "):
            lines.append(line)
        elif (included := line.split()[1]) not in done:
            done.add(included)
            lines.append(_pasted(included, done))
    return "".join(lines)


def _source(name: str) -> str:
    return _pasted(name, {name}).replace("@IN_FLIGHT_TTL@", str(STATUS_IN_FLIGHT_TTL))


class Script:
    """``lua/<name>.lua``, callable on a `redis.Redis` (or a pipeline that loaded it)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.source = _source(name)
        self.sha = hashlib.sha1(self.source.encode()).hexdigest()

    def __repr__(self) -> str:
        return f"<Script {self.name}>"

    def __call__(self, client: Any, keys: list[Any], args: list[Any]) -> Any:
        try:
            return client.evalsha(self.sha, len(keys), *keys, *args)
        except redis.exceptions.NoScriptError:
            self._load(client)
            return client.evalsha(self.sha, len(keys), *keys, *args)

    def queue(self, pipe: Any, keys: list[Any], args: list[Any]) -> None:
        """Queue the call on a pipeline; its reply is a `redis.exceptions.NoScriptError` when
        Redis has not loaded the script (call it directly then: that loads it)."""
        pipe.evalsha(self.sha, len(keys), *keys, *args)

    def ensure_loaded(self, client: redis.Redis) -> None:
        if not client.script_exists(self.sha)[0]:
            self._load(client)

    def _load(self, client: Any) -> None:
        """SCRIPT LOAD. A Redis before 7.0 reads no ``#!lua flags=...`` line (the flags let a
        script that only moves jobs run when Redis is out of memory): there the script is
        loaded without it, once and for all in this process."""
        try:
            client.script_load(self.source)
        except redis.exceptions.ResponseError:
            if not self.source.startswith("#!"):
                raise
            self.source = self.source.split("\n", 1)[1]
            self.sha = hashlib.sha1(self.source.encode()).hexdigest()
            client.script_load(self.source)


PUSH = Script("push")
PUSH_ONE = Script("push_one")
TAKE = Script("take")
REQUEUE_PROCESS = Script("requeue_process")
MOVE_TO_QUEUE = Script("move_to_queue")
RETRY_LATER = Script("retry_later")
BURY = Script("bury")
FIND_JID = Script("find_jid")
SCAN = Script("scan")
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
PUT_BACK = Script("put_back")
