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
batch, through `djqueue.client.batched`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connections, transaction

from djqueue.client import batched, current_batch

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
            _hold(call_next, pending)
        return payload


def _open_aliases() -> list[str]:
    """Connections of this thread that exist, default first (others cannot be in a block)."""
    aliases = [c.alias for c in connections.all(initialized_only=True)]
    aliases.sort(key=lambda alias: alias != DEFAULT_DB_ALIAS)
    return aliases


def _hold(write: Callable[[], Any], aliases: list[str]) -> None:
    """Call ``write`` once every alias in ``aliases`` is out of its atomic block (committed)."""
    pending = [alias for alias in aliases if connections[alias].in_atomic_block]
    if not pending:
        write()
        return
    alias, rest = pending[0], pending[1:]
    _on_commit(lambda: _hold(write, rest), alias)


class _Batch:
    """One on-commit callback for the jobs of one client batch, written in one round trip."""

    def __init__(self, token: object) -> None:
        self.token = token
        self.calls: list[Callable[[], Any]] = []

    def __call__(self) -> None:
        with batched():
            for call in self.calls:
                call()


def _on_commit(callback: Callable[[], Any], alias: str) -> None:
    """``transaction.on_commit``, joining the previous job's callback when both came from the
    same batch (``perform_bulk``) at the same savepoint, so they share its fate and its write."""
    token = current_batch()
    if token is not None:
        connection = connections[alias]
        last = connection.run_on_commit[-1] if connection.run_on_commit else None
        if (
            last is not None
            and isinstance(last[1], _Batch)
            and last[1].token is token
            and last[0] == set(connection.savepoint_ids)
        ):
            last[1].calls.append(callback)
            return
    group = _Batch(token)
    group.calls.append(callback)
    transaction.on_commit(group, using=alias)
