"""A Redis call written once, issued by a sync (`redis.Redis`) or an asyncio
(`redis.asyncio.Redis`) client.

A store call that the asyncio side needs too (the push, a status read) is written as *steps*: a
generator that yields the commands it needs and gets their replies back, deciding what to do
next (load a script Redis forgot, read a key's type after WRONGTYPE) and what it returns. It does
no I/O of its own. `execute` and `aexecute` are the two thin executors that send a step's
commands on a connection; nothing else differs between the sync and the asyncio push, so the
keys, arguments, script and reply decoding exist once (docs/design.md, Client, "Async push").

A yielded item is one command as a tuple, ``("EVALSHA", sha, 2, key1, key2, arg)``, or a list of
such tuples, sent as one pipeline (not a transaction) whose reply is the list of replies. An
error the call meets (a Redis error reply, a lost connection) is thrown into the steps at the
yield, so they may handle it; one they do not handle leaves the executor as raised.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any, TypeVar

T = TypeVar("T")

Command = tuple[Any, ...]
#: Steps that yield commands (or lists of them: a pipeline), receive the replies, and return T.
Steps = Generator[Command | list[Command], Any, T]


def execute(client: Any, steps: Steps[T]) -> T:
    """Run ``steps`` on a `redis.Redis` (or a pipeline, which queues the commands and
    answers with itself)."""
    reply: Any = None
    error: Exception | None = None
    while True:
        try:
            request = steps.send(reply) if error is None else steps.throw(error)
        except StopIteration as done:
            return done.value
        error = None
        try:
            reply = _send(client, request)
        except Exception as exc:  # noqa: BLE001 - handed to the steps, which re-raise it
            error = exc


async def aexecute(client: Any, steps: Steps[T]) -> T:
    """Run ``steps`` on a `redis.asyncio.Redis`: `execute`, awaiting each reply on the event
    loop, holding no thread (the one place the two differ)."""
    reply: Any = None
    error: Exception | None = None
    while True:
        try:
            request = steps.send(reply) if error is None else steps.throw(error)
        except StopIteration as done:
            return done.value
        error = None
        try:
            reply = await _send(client, request)
        except Exception as exc:  # noqa: BLE001 - handed to the steps, which re-raise it
            error = exc


def _send(client: Any, request: Command | list[Command]) -> Any:
    """Send one command, or a list of them as one pipeline: the reply from a sync client, an
    awaitable of it from an asyncio one."""
    if type(request) is tuple:
        return client.execute_command(*request)
    pipe = client.pipeline(transaction=False)
    for command in request:
        pipe.execute_command(*command)
    return pipe.execute()
