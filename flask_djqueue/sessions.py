"""Which SQLAlchemy sessions of this thread hold uncommitted writes, and writes held back until
those sessions commit.

SQLAlchemy has no ``on_commit`` of its own, so this listens to every `Session`'s transactions
(`track`, once per process; Flask-SQLAlchemy's session is a `Session` too). A session *holds
writes* when its transaction has flushed or executed an INSERT, UPDATE or DELETE, or has
objects pending (added, changed, deleted). Only such a transaction holds a push: SQLAlchemy
begins a transaction on any query, so a view that only reads, and never commits, would
otherwise hold its pushes until the rollback at teardown dropped them.

A held write is attached to the session's innermost transaction. A savepoint released moves
its writes to the enclosing transaction, one rolled back drops them; the outermost
transaction's commit writes them (jobs of one ``perform_bulk`` batch in one round trip, as
`djqueue.client.batched` does), a rollback or a ``close()`` drops them. They are written from
SQLAlchemy's ``after_transaction_end`` event, when the session is already clean, so a Redis
failure there raises from ``commit()`` with the data committed and the session usable.

SQLAlchemy is imported only by `track`, so it stays an optional dependency.
"""

from __future__ import annotations

import re
import threading
import weakref
from collections.abc import Callable
from typing import Any

from djqueue.client import batched, current_batch

#: Keys of ``Session.info`` (the session's dict for its users' data).
_WRITES = "djqueue.writes"  # the current transaction has written
_HELD = "djqueue.held"  # transaction -> [(batch token, write)]
_COMMITTED = "djqueue.committed"  # transactions whose commit has happened

# A text() statement writes when it starts with one of these words.
_WRITE_SQL = re.compile(r"\s*(insert|update|delete|merge|replace|upsert)\b", re.IGNORECASE)

_tracking = False
_lock = threading.Lock()
_local = threading.local()

Held = tuple[object, Callable[[], Any]]


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
            event.listen(Session, "after_flush", _flushed)
            event.listen(Session, "do_orm_execute", _executed)
            event.listen(Session, "after_commit", _committed)
            event.listen(Session, "after_transaction_end", _ended)
            _tracking = True
    return True


def with_writes() -> list[Any]:
    """This thread's sessions whose transaction holds writes, in no particular order."""
    if not _tracking:
        return []
    return [session for session in list(_open()) if _has_writes(session)]


def hold(write: Callable[[], Any], sessions: list[Any]) -> None:
    """Call ``write`` once every session in ``sessions`` has committed its current
    transaction (one after another), never if one of them rolls back."""
    first, rest = sessions[0], sessions[1:]
    held: dict[Any, list[Held]] = first.info.setdefault(_HELD, {})
    held.setdefault(_innermost(first), []).append((current_batch(), lambda: _then(write, rest)))


def _then(write: Callable[[], Any], rest: list[Any]) -> None:
    pending = [session for session in rest if _has_writes(session)]
    if pending:
        hold(write, pending)
    else:
        write()


def _open() -> weakref.WeakSet[Any]:
    """Sessions whose outermost transaction began in this thread and has not ended."""
    sessions = getattr(_local, "sessions", None)
    if sessions is None:
        sessions = _local.sessions = weakref.WeakSet()
    return sessions


def _has_writes(session: Any) -> bool:
    return bool(
        session.in_transaction()
        and (session.info.get(_WRITES) or session.new or session.dirty or session.deleted)
    )


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


def _flushed(session: Any, flush_context: Any) -> None:
    session.info[_WRITES] = True


def _executed(state: Any) -> None:
    statement = state.statement
    if (
        state.is_insert
        or state.is_update
        or state.is_delete
        or (isinstance(getattr(statement, "text", None), str) and _WRITE_SQL.match(statement.text))
    ):
        state.session.info[_WRITES] = True


def _committed(session: Any) -> None:
    session.info.setdefault(_COMMITTED, set()).add(_innermost(session))


def _ended(session: Any, transaction: Any) -> None:
    committed = session.info.get(_COMMITTED)
    was_committed = committed is not None and transaction in committed
    if was_committed:
        committed.discard(transaction)
    if _is_root(transaction):
        _open().discard(session)
        session.info.pop(_WRITES, None)
    held = session.info.get(_HELD)
    writes = held.pop(transaction, None) if held else None
    if not writes or not was_committed:
        return  # nothing held, or rolled back (or closed): the jobs are dropped
    if _is_root(transaction):
        _write(writes)
    else:  # a savepoint released: its jobs now wait for the enclosing transaction
        held.setdefault(transaction.parent, []).extend(writes)


def _write(writes: list[Held]) -> None:
    """Call the held writes in order; those of one client batch go out together."""
    index = 0
    while index < len(writes):
        token = writes[index][0]
        end = index + 1
        while token is not None and end < len(writes) and writes[end][0] is token:
            end += 1
        if end - index == 1:
            writes[index][1]()
        else:
            with batched():
                for _, write in writes[index:end]:
                    write()
        index = end
