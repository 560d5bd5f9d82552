"""Which SQLAlchemy sessions of this thread are in a transaction, and writes held back until
those transactions commit.

SQLAlchemy has no ``on_commit`` of its own, so this listens to every `Session`'s transactions
(`track`, once per process; Flask-SQLAlchemy's session is a `Session` too). A push made while a
session is in a transaction is held for its commit, whether or not the transaction has written
yet: "push, then save the jid on the new row" must not leave a job behind when that row rolls
back. A transaction that ends without a commit drops its held pushes if it *wrote* (flushed or
executed an INSERT, UPDATE or DELETE, bulk statements and ``text()`` included, or had objects
added, changed or deleted), and writes them if it only read: SQLAlchemy begins a transaction
on any query, and a view that reads, pushes and never commits (Flask-SQLAlchemy closes the
session at teardown) must not lose its job.

A held write is attached to the session's innermost transaction. A savepoint released moves
its writes to the enclosing transaction, one rolled back drops them; the outermost
transaction's commit writes them (jobs of one ``perform_bulk`` batch in one round trip, as
`djqueue.client.batched` does). They are written from SQLAlchemy's ``after_transaction_end``
event, when the session is already clean. If Redis is down then, the jobs go to the outbox
table in a new short transaction on the session's engine (`djqueue.outbox.write_or_keep`),
where a worker relays them; without that table `RedisUnavailable` is raised from ``commit()``
(the data committed, the session usable), saying how to create it.

SQLAlchemy is imported only by `track` and when a push after a commit failed, so it stays an
optional dependency.
"""

from __future__ import annotations

import functools
import re
import threading
import weakref
from collections.abc import Callable
from typing import Any, NamedTuple

from djqueue import outbox
from djqueue.client import current_batch

#: Keys of ``Session.info`` (the session's dict for its users' data).
_WRITES = "djqueue.writes"  # the current transaction has written
_HELD = "djqueue.held"  # transaction -> [_Held]
_COMMITTED = "djqueue.committed"  # transactions whose commit has happened

# A text() statement writes when it starts with one of these words.
_WRITE_SQL = re.compile(r"\s*(insert|update|delete|merge|replace|upsert)\b", re.IGNORECASE)

_tracking = False
_lock = threading.Lock()
_local = threading.local()


class _Held(NamedTuple):
    """A write waiting for commits: its batch token, its payload (None for a write that is
    not a push), the sessions it waits for after the current one, and the session it was
    first held on (whose engine keeps the job if Redis is down at commit)."""

    token: object
    payload: dict[str, Any] | None
    write: Callable[[], Any]
    rest: list[Any]
    session: Any


def track() -> bool:
    """Listen to every SQLAlchemy session's transactions (once); False without SQLAlchemy."""
    global _tracking
    try:
        from sqlalchemy import event
        from sqlalchemy.orm import Session
    except ImportError:
        return False
    with _lock:
        if not _tracking:
            event.listen(Session, "after_transaction_create", _created)
            event.listen(Session, "after_flush", _wrote)
            event.listen(Session, "after_attach", _attached)
            event.listen(Session, "after_rollback", _rolled_back)
            event.listen(Session, "persistent_to_detached", _detached)
            event.listen(Session, "do_orm_execute", _executed)
            event.listen(Session, "after_commit", _committed)
            event.listen(Session, "after_transaction_end", _ended)
            _tracking = True
    return True


def in_transaction() -> list[Any]:
    """This thread's sessions that are in a transaction, in no particular order."""
    if not _tracking:
        return []
    return [session for session in list(_open()) if session.in_transaction()]


def hold(
    write: Callable[[], Any], sessions: list[Any], payload: dict[str, Any] | None = None
) -> None:
    """Call ``write`` once every session in ``sessions`` has ended its current transaction
    (one after another) with a commit, or without one and without writes; never if one of
    them rolls back writes. ``payload``: the job ``write`` pushes, kept in the outbox if
    Redis is down at commit."""
    _hold(_Held(current_batch(), payload, write, sessions[1:], sessions[0]), sessions[0])


def _hold(held: _Held, session: Any) -> None:
    entries: dict[Any, list[_Held]] = session.info.setdefault(_HELD, {})
    entries.setdefault(_innermost(session), []).append(held)


def _open() -> weakref.WeakSet[Any]:
    """Sessions whose outermost transaction began in this thread and has not ended."""
    sessions = getattr(_local, "sessions", None)
    if sessions is None:
        sessions = _local.sessions = weakref.WeakSet()
    return sessions


def _innermost(session: Any) -> Any:
    return session.get_nested_transaction() or session.get_transaction()


def _is_root(transaction: Any) -> bool:
    return transaction.parent is None


# -- SQLAlchemy events ----------------------------------------------------------------------


def _created(session: Any, transaction: Any) -> None:
    # The write flag is cleared when the outermost transaction ends, not here: a statement's
    # do_orm_execute comes before the transaction it begins.
    if _is_root(transaction):
        _open().add(session)


def _wrote(session: Any, *args: Any) -> None:
    session.info[_WRITES] = True


def _attached(session: Any, instance: Any) -> None:
    _wrote(session)  # add(), merge() or delete(): a write, flushed or not


def _rolled_back(session: Any) -> None:
    if session.new or session.dirty or session.deleted:  # changes never flushed
        _wrote(session)


def _detached(session: Any, instance: Any) -> None:
    from sqlalchemy import inspect

    if inspect(instance).modified:  # close() drops a changed object before the transaction
        _wrote(session)


def _executed(state: Any) -> None:
    statement = state.statement
    if (
        state.is_insert
        or state.is_update
        or state.is_delete
        or (isinstance(getattr(statement, "text", None), str) and _WRITE_SQL.match(statement.text))
    ):
        _wrote(state.session)


def _committed(session: Any) -> None:
    session.info.setdefault(_COMMITTED, set()).add(_innermost(session))


def _ended(session: Any, transaction: Any) -> None:
    committed = session.info.get(_COMMITTED)
    was_committed = committed is not None and transaction in committed
    if was_committed:
        committed.discard(transaction)
    root = _is_root(transaction)
    wrote = bool(session.info.get(_WRITES))
    if root:
        _open().discard(session)
        session.info.pop(_WRITES, None)
    held = session.info.get(_HELD)
    writes = held.pop(transaction, None) if held else None
    if not writes:
        return
    if not was_committed and (wrote or not root):
        return  # rolled back (or closed) with its writes, or a savepoint rolled back: dropped
    if root:
        _write(writes)
    else:  # a savepoint released: its jobs now wait for the enclosing transaction
        held.setdefault(transaction.parent, []).extend(writes)


def _write(writes: list[_Held]) -> None:
    """Call the held writes that wait for no other session, in order (those of one client
    batch together); the others wait for the next session's transaction."""
    ready = []
    for held in writes:
        pending = [session for session in held.rest if session.in_transaction()]
        if pending:
            _hold(held._replace(rest=pending[1:]), pending[0])
        else:
            ready.append(held)
    index = 0
    while index < len(ready):
        token = ready[index].token
        end = index + 1
        while token is not None and end < len(ready) and ready[end].token is token:
            end += 1
        group = ready[index:end]
        outbox.write_or_keep(
            [(held.payload, held.write) for held in group],
            functools.partial(_keep, group[0].session),
            MISSING_TABLE_FIX,
        )
        index = end


#: How the outbox table is created.
CREATE_TABLE = (
    "create it with flask_djqueue.outbox.outbox_metadata.create_all(db.engine) (or add "
    "outbox_metadata to Alembic's target_metadata)"
)
#: What `RedisUnavailable` at commit says when the session's database has no outbox table.
MISSING_TABLE_FIX = (
    "the session committed but its job could not be pushed, and its database has no outbox "
    f"table to keep it in: {CREATE_TABLE} so such jobs are kept and relayed by a worker"
)


def _keep(session: Any, payloads: list[dict[str, Any]]) -> bool:
    from .outbox import keep

    return keep(session, payloads)
