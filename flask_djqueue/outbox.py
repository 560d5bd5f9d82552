"""The transactional outbox with SQLAlchemy: the job is a row of ``djqueue_outbox``, inserted
through the session that holds the view's writes, pushed after that session commits, and
relayed by workers when that push did not happen (see `djqueue.outbox`).

The table is on its own `MetaData`, which the app creates with its other tables::

    from flask_djqueue.outbox import outbox_metadata
    outbox_metadata.create_all(db.engine)      # or include it in Alembic's target_metadata

Workers relay from the app's outbox engine: ``DjQueue(app, outbox_engine=engine)`` (an engine
or a function returning one, called in the app context), else Flask-SQLAlchemy's default
engine. SQLAlchemy is imported here only, and this module only when the outbox is used.
"""

from __future__ import annotations

import os
import socket
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from flask import Flask
from sqlalchemy import (
    BigInteger,
    Column,
    Float,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    delete,
    func,
    insert,
    inspect,
    select,
    update,
)
from sqlalchemy.engine import Engine

from djqueue import config, outbox
from djqueue.outbox import OutboxStats, Row
from djqueue.payload import Payload

from . import sessions
from .state import AppState, state_of

#: The outbox's own metadata: create it with the app's tables.
outbox_metadata = MetaData()

#: ``djqueue_outbox``: the same columns as the Django app's table.
outbox_table = Table(
    outbox.TABLE,
    outbox_metadata,
    Column("id", BigInteger().with_variant(Integer, "sqlite"), primary_key=True),
    Column("jid", String(64), nullable=False),
    Column("payload", Text, nullable=False),
    Column("run_at", Float, nullable=True),
    Column("created_at", Float, nullable=False, index=True),
)

#: Rows deleted per statement.
DELETE_CHUNK = 500
#: Databases whose SELECT ... FOR UPDATE SKIP LOCKED the relay uses.
SKIP_LOCKED = frozenset(("postgresql", "mysql", "mariadb", "oracle"))


def write(session: Any, payload: Payload, call_next: Callable[[], Any], state: AppState) -> None:
    """Insert the job's row through ``session``; push it once the session commits."""
    with outbox.naming_fix(sessions.CREATE_TABLE):
        result = session.execute(
            insert(outbox_table).values(
                jid=payload["jid"],
                payload=outbox.row_text(payload, state.settings),
                run_at=payload.get("at"),
                created_at=time.time(),
            )
        )
    pk = result.inserted_primary_key[0]
    transaction = session.get_nested_transaction() or session.get_transaction()
    flushes = session.info.setdefault(_FLUSHES, weakref.WeakKeyDictionary())
    flush = flushes.get(transaction)
    if flush is None:
        flush = flushes[transaction] = _Flush(session.get_bind())
        sessions.hold(flush, [session])
    flush.rows.append(pk)


_FLUSHES = "djqueue.outbox"  # Session.info key: transaction -> its _Flush


class _Flush:
    """The held write of one transaction's rows: claim, push and delete them
    (`djqueue.outbox.push_own`)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.rows: list[int] = []

    def __call__(self) -> None:
        outbox.push_own(EngineSource(self.engine), self.rows)


def keep(session: Any, payloads: list[Payload]) -> bool:
    """Enqueue-on-commit's jobs whose push after ``session``'s commit met Redis down: rows
    inserted in a transaction of their own on the session's engine, for a worker to relay
    (`djqueue.outbox.write_or_keep`). False when that database has no outbox table."""
    try:
        engine = session.get_bind()
    except Exception:  # several binds and none for a plain statement: no single database
        return False
    if not _has_table(engine):
        return False
    settings = config.get_settings()
    with engine.begin() as connection:
        connection.execute(
            insert(outbox_table),
            [
                {
                    "jid": payload["jid"],
                    "payload": outbox.row_text(payload, settings),
                    "run_at": payload.get("at"),
                    "created_at": time.time(),
                }
                for payload in payloads
            ],
        )
    return True


def _has_table(engine: Engine) -> bool:
    return bool(inspect(engine).has_table(outbox_table.name))


def _delete(connection: Any, pks: list[int]) -> None:
    for start in range(0, len(pks), DELETE_CHUNK):
        chunk = pks[start : start + DELETE_CHUNK]
        connection.execute(delete(outbox_table).where(outbox_table.c.id.in_(chunk)))


# -- the relay ------------------------------------------------------------------------------


class EngineSource:
    """`djqueue.outbox.Source` for one engine."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.name = engine.url.render_as_string(hide_password=True)

    @contextmanager
    def claim(
        self, cutoff: float, limit: int, ids: Sequence[int] | None = None
    ) -> Iterator[list[Row]]:
        """PostgreSQL, MySQL, Oracle: ``FOR UPDATE SKIP LOCKED``. Others (SQLite): the write
        lock first, by a statement that changes nothing, so a second relay waits for the
        first's commit and then finds the rows gone."""
        table = outbox_table
        with self.engine.begin() as connection:
            which = table.c.id.in_(ids) if ids is not None else table.c.created_at < cutoff
            query = select(table.c.id, table.c.payload).where(which).order_by(table.c.id)
            query = query.limit(limit)
            if connection.dialect.name in SKIP_LOCKED:
                query = query.with_for_update(skip_locked=True)
            else:
                connection.execute(update(table).where(table.c.id < 0).values(jid=""))
            rows = [Row(int(pk), text) for pk, text in connection.execute(query)]
            _delete(connection, [row.id for row in rows])
            yield rows

    def figures(self) -> tuple[int, float | None]:
        query = select(func.count(), func.min(outbox_table.c.created_at))
        with self.engine.connect() as connection:
            count, oldest = connection.execute(query).one()
        return int(count or 0), oldest


def engine_of(app: Flask) -> Engine | None:
    """The engine holding ``app``'s outbox (call in the app context)."""
    state = state_of(app)
    given = state.outbox_engine if state is not None else None
    if given is not None:
        return given() if callable(given) and not isinstance(given, Engine) else given
    extension = app.extensions.get("sqlalchemy")
    return getattr(extension, "engine", None) if extension is not None else None


def sources(app: Flask) -> list[EngineSource]:
    """The app's outbox engine, when it has the table (an app that never created it relays
    nothing, silently: it chose no outbox)."""
    engine = engine_of(app)
    if engine is None:
        return []
    if engine not in _with_table:
        if not _has_table(engine):
            return []
        _with_table.add(engine)
    return [EngineSource(engine)]


_with_table: weakref.WeakSet[Engine] = weakref.WeakSet()


def relay_duty(app: Flask, state: AppState) -> Callable[[], bool]:
    """The worker's relay duty for ``app``: each round in a fresh app context."""

    duty = outbox.relay_duty(
        lambda: sources(app),
        grace=state.options.outbox_grace,
        identity=lambda: f"{socket.gethostname()}:{os.getpid()}",
    )

    def relay() -> bool:
        with app.app_context():
            return duty()

    return relay


def stats(app: Flask) -> OutboxStats | None:
    """Rows waiting in ``app``'s outbox; None when the outbox is not in use, or was not chosen
    and is empty (call in the app context)."""
    state = state_of(app)
    if state is None or not state.options.relays_outbox:
        return None
    found = sources(app)
    if not found:
        return None
    size, oldest = found[0].figures()
    if not size and not state.options.outbox_chosen:
        return None
    return OutboxStats.of(size, oldest)
