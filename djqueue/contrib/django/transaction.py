"""Enqueue on commit: a push inside ``transaction.atomic()`` is written when the outermost
transaction commits, and not at all if it rolls back.

This is a client middleware, last in the chain, so the rest of the chain (and any middleware
that would stop the push) runs at call time and only the write waits; the caller gets the jid at
once. Which transaction: the one on ``.set(using="alias")`` if given, otherwise every database
connection of this thread that is inside an atomic block at call time; the job is written once
all of those have committed. ``.set(on_commit=False)`` or ``DJQUEUE["ENQUEUE_ON_COMMIT"] =
False`` writes at once. Both options are taken out of the payload here, so they never reach
Redis.

``DJQUEUE["ENQUEUE_ON_COMMIT"] = "outbox"`` or ``.set(outbox=True)`` writes the job to the
outbox table in the transaction instead (`djqueue.contrib.django.outbox`), so a commit can no
longer lose it; ``.set(outbox=False)`` turns that off for one push.

Jobs held in one batch (``perform_bulk``) are written together at commit, one round trip per
batch, through `djqueue.client.batched`. If Redis is unavailable at that moment, the jobs go to
the outbox table in a new short transaction (`djqueue.outbox.write_or_keep`), where a worker
relays them; only a database without the table (not migrated) raises `RedisUnavailable`,
saying so.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, NamedTuple

from asgiref.sync import AsyncToSync, sync_to_async
from django.db import DEFAULT_DB_ALIAS, connections, transaction

from djqueue.client import current_batch

from . import conf, outbox


class EnqueueOnCommit:
    """Client middleware; the app adds it when Django is ready."""

    def __call__(
        self, job: str, payload: dict[str, Any], queue: str, call_next: Callable[[], Any]
    ) -> Any:
        on_commit = payload.pop("on_commit", None)
        use_outbox = payload.pop("outbox", None)
        using = payload.pop("using", None)
        if on_commit is None:
            on_commit = conf.option("ENQUEUE_ON_COMMIT")
        if use_outbox is None:
            use_outbox = on_commit == "outbox"
        if not on_commit and not use_outbox:
            return call_next()
        aliases = [using] if using else _open_aliases()
        pending = [alias for alias in aliases if connections[alias].in_atomic_block]
        if not pending:
            return call_next()
        if use_outbox:
            outbox.write(payload, call_next, pending[0])
        else:
            held = _Held(payload, call_next, pending, pending[1:])
            _on_commit(held, pending[0], current_batch())
        return payload


def in_calling_thread(push: Callable[[], Any]) -> Awaitable[Any] | None:
    """For a push from async code (`djqueue.client.in_calling_thread`): code on an event
    loop is never inside ``transaction.atomic()`` (Django has no async transactions; atomic
    there raises ``SynchronousOnlyOperation``), so the push goes ahead on the loop (None),
    unless the coroutine is run by ``async_to_sync`` for sync code, which may be inside
    ``atomic()`` (asgiref names that code's thread: ``AsyncToSync.executors.current``). Then
    the push is made in that thread (``sync_to_async(thread_sensitive=True)``, as Django's
    default ``aenqueue`` does), where this middleware sees the transaction and holds it. A
    request served by Django's ASGI handler runs in a ``ThreadSensitiveContext``, which clears
    that executor: views push on the loop."""
    if getattr(AsyncToSync.executors, "current", None) is None:
        return None
    return sync_to_async(push, thread_sensitive=True)()


def _open_aliases() -> list[str]:
    """Connections of this thread that exist, default first (others cannot be in a block)."""
    aliases = [c.alias for c in connections.all(initialized_only=True)]
    aliases.sort(key=lambda alias: alias != DEFAULT_DB_ALIAS)
    return aliases


class _Held(NamedTuple):
    """A push waiting for the commit of every database in ``aliases``; ``rest``: those it
    still waits for once the callback it is in runs."""

    payload: dict[str, Any]
    write: Callable[[], Any]
    aliases: list[str]
    rest: list[str]


class _Batch:
    """One on-commit callback for the pushes of one client batch (or one push), written in one
    round trip; a push still waiting for another database's commit moves on to that one."""

    def __init__(self, token: object) -> None:
        self.token = token
        self.calls: list[_Held] = []

    def __call__(self) -> None:
        ready = []
        for held in self.calls:
            pending = [alias for alias in held.rest if connections[alias].in_atomic_block]
            if pending:
                _on_commit(held._replace(rest=pending[1:]), pending[0], self.token)
            else:
                ready.append(held)
        if ready:
            outbox.write_held([(held.payload, held.write) for held in ready], ready[0].aliases)


def _on_commit(held: _Held, alias: str, token: object | None) -> None:
    """``transaction.on_commit``, joining the previous push's callback when both came from the
    same batch (``perform_bulk``) at the same savepoint, so they share its fate and its write."""
    if token is not None:
        connection = connections[alias]
        last = connection.run_on_commit[-1] if connection.run_on_commit else None
        if (
            last is not None
            and isinstance(last[1], _Batch)
            and last[1].token is token
            and last[0] == set(connection.savepoint_ids)
        ):
            last[1].calls.append(held)
            return
    group = _Batch(token)
    group.calls.append(held)
    transaction.on_commit(group, using=alias)
