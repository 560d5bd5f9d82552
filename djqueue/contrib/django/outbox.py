"""The transactional outbox for Django: the job is a row of ``djqueue_outbox``, written in the
transaction of the data, pushed after the commit, and relayed by workers when that push did not
happen (see `djqueue.outbox` for the design shared with flask_djqueue).

Which database: the one named by ``.set(using=)``, else the default database when it is in an
atomic block, else the first connection of this thread that is. The row commits or rolls back
with that database's transaction, and the push after the commit waits for that database only.

The rows of one transaction (same savepoint) share one on-commit callback: one Redis round trip
and one DELETE for all of them, as enqueue-on-commit writes a held batch.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from django.db import DatabaseError, connections, router, transaction

from djqueue import config, outbox
from djqueue.outbox import OutboxStats, Row
from djqueue.payload import Payload

from . import conf

#: Rows deleted per statement (SQLite's limit on bound variables was 999 before 3.32).
DELETE_CHUNK = 500


def _model() -> Any:
    from .models import OutboxJob

    return OutboxJob


def write(payload: Payload, call_next: Callable[[], Any], alias: str) -> None:
    """Insert the job's row in ``alias``'s open transaction; push it once that commits."""
    with outbox.naming_fix(CREATE_TABLE):
        row = (
            _model()
            .objects.using(alias)
            .create(
                jid=payload["jid"],
                payload=outbox.row_text(payload, config.get_settings()),
                run_at=payload.get("at"),
                created_at=time.time(),
            )
        )
    _on_commit(row.pk, alias)


class _Flush:
    """The on-commit callback of one transaction's rows: claim, push and delete them
    (`djqueue.outbox.push_own`)."""

    def __init__(self, alias: str) -> None:
        self.alias = alias
        self.rows: list[int] = []

    def __call__(self) -> None:
        outbox.push_own(DatabaseSource(self.alias), self.rows)


def _on_commit(pk: int, alias: str) -> None:
    """Join the previous row's callback when it belongs to the same savepoint (so it shares
    its fate); otherwise register a new one."""
    connection = connections[alias]
    last = connection.run_on_commit[-1] if connection.run_on_commit else None
    same_savepoint = last is not None and last[0] == set(connection.savepoint_ids)
    if last is not None and same_savepoint and isinstance(last[1], _Flush):
        last[1].rows.append(pk)
        return
    flush = _Flush(alias)
    flush.rows.append(pk)
    transaction.on_commit(flush, using=alias)


#: How the outbox table is created.
CREATE_TABLE = "run `python manage.py migrate djqueue` (creates djqueue_outbox)"
#: What `RedisUnavailable` at commit says when no database of the push has the outbox table.
MISSING_TABLE_FIX = (
    "the transaction committed but its job could not be pushed, and no database it waited "
    f"for has the outbox table to keep it in: {CREATE_TABLE} so such jobs are kept and "
    "relayed by a worker"
)


def write_held(held: list[tuple[Payload | None, Callable[[], Any]]], aliases: list[str]) -> None:
    """Enqueue-on-commit's writes after the commit of ``aliases``; with Redis down, the jobs
    go to the outbox of the first of them that has the table (`djqueue.outbox.write_or_keep`)."""
    outbox.write_or_keep(held, lambda payloads: _keep(aliases, payloads), MISSING_TABLE_FIX)


def _keep(aliases: list[str], payloads: list[Payload]) -> bool:
    """The rows of jobs whose push failed after the commit, in a transaction of their own in
    the first of ``aliases`` with the table; False when none has it."""
    alias = next((alias for alias in aliases if _has_table(alias)), None)
    if alias is None:
        return False
    settings = config.get_settings()
    model = _model()
    with transaction.atomic(using=alias):
        model.objects.using(alias).bulk_create(
            model(
                jid=payload["jid"],
                payload=outbox.row_text(payload, settings),
                run_at=payload.get("at"),
                created_at=time.time(),
            )
            for payload in payloads
        )
    return True


def _has_table(alias: str) -> bool:
    """Whether the routers let the outbox live in ``alias`` and its table is there (looked up
    each time: this runs only when a push failed, and a table may be created meanwhile)."""
    model = _model()
    if not router.allow_migrate_model(alias, model):
        return False
    try:
        return model._meta.db_table in connections[alias].introspection.table_names()
    except DatabaseError:
        return False


def delete(alias: str, pks: list[int]) -> None:
    model = _model()
    for start in range(0, len(pks), DELETE_CHUNK):
        model.objects.using(alias).filter(pk__in=pks[start : start + DELETE_CHUNK]).delete()


# -- the relay ------------------------------------------------------------------------------


class DatabaseSource:
    """`djqueue.outbox.Source` for one database alias."""

    def __init__(self, alias: str) -> None:
        self.name = alias

    @contextmanager
    def claim(
        self, cutoff: float, limit: int, ids: Sequence[int] | None = None
    ) -> Iterator[list[Row]]:
        """Rows before ``cutoff``, deleted in a transaction that commits when the block ends.

        PostgreSQL, MySQL 8 and Oracle: ``SELECT ... FOR UPDATE SKIP LOCKED``, so relays
        running at once take different rows. Databases without it (SQLite) take the write lock
        first, with a statement that changes nothing: a second relay waits for the first to
        commit (up to the connection's busy timeout) and then finds the rows gone.
        """
        model = _model()
        features = connections[self.name].features
        with transaction.atomic(using=self.name):
            rows = model.objects.using(self.name).order_by("pk")
            rows = (
                rows.filter(pk__in=ids) if ids is not None else rows.filter(created_at__lt=cutoff)
            )
            if features.has_select_for_update_skip_locked:
                rows = rows.select_for_update(skip_locked=True)
            elif features.has_select_for_update:
                rows = rows.select_for_update()
            else:
                model.objects.using(self.name).filter(pk__lt=0).update(jid="")
            claimed = [Row(pk, text) for pk, text in rows.values_list("pk", "payload")[:limit]]
            delete(self.name, [row.id for row in claimed])
            yield claimed

    def figures(self) -> tuple[int, float | None]:
        from django.db.models import Count, Min

        found = _model().objects.using(self.name).aggregate(n=Count("pk"), oldest=Min("created_at"))
        return int(found["n"] or 0), found["oldest"]


def sources() -> list[DatabaseSource]:
    """A source per database the outbox table may live in (the routers allow migrating it)
    and does: an alias without the table (not migrated) is skipped.

    Asked on every dashboard page and every relay round. An alias found with the table is
    remembered; one found without it is looked at again after `LOOK_AGAIN_AFTER` seconds, or
    at once after a ``migrate`` (`forget_missing_tables`), rather than introspected each time."""
    found = []
    now = time.monotonic()
    for alias in connections:
        if alias not in _with_table:
            if now - _without_table.get(alias, -LOOK_AGAIN_AFTER) < LOOK_AGAIN_AFTER:
                continue
            try:
                if not _has_table(alias):
                    _without_table[alias] = now
                    continue
            finally:
                # A worker's duty thread has no request cycle to close what it opened; a
                # request (the dashboard) may be in a transaction (ATOMIC_REQUESTS), where
                # closing would end it.
                if not connections[alias].in_atomic_block:
                    connections[alias].close_if_unusable_or_obsolete()
            _with_table.add(alias)
        found.append(DatabaseSource(alias))
    return found


_with_table: set[str] = set()
#: Aliases found without the table, and when (`time.monotonic`).
_without_table: dict[str, float] = {}
#: Seconds before an alias without the table is introspected again (a table created by hand;
#: ``migrate`` makes it be looked at at once).
LOOK_AGAIN_AFTER = 60.0


def forget_missing_tables(**kwargs: Any) -> None:
    """Receiver of ``post_migrate``: the table may exist now, so every alias is looked at again."""
    _without_table.clear()


def relay_enabled() -> bool:
    """Whether workers relay: ``OUTBOX_RELAY``, or when unset, whether pushes wait for commits
    (``ENQUEUE_ON_COMMIT`` True or ``"outbox"``): a push that meets Redis down at commit is
    kept in the outbox in either mode. A database without the table costs the relay nothing."""
    relay = conf.option("OUTBOX_RELAY")
    if relay is None:
        return bool(conf.option("ENQUEUE_ON_COMMIT"))
    return bool(relay)


def outbox_chosen() -> bool:
    """Whether the project chose the outbox (``ENQUEUE_ON_COMMIT: "outbox"``, or
    ``OUTBOX_RELAY: True`` for ``.set(outbox=True)``): then a missing relay is warned about
    and the outbox's figures are always shown; otherwise they are shown when rows wait."""
    relay = conf.option("OUTBOX_RELAY")
    if relay is None:
        return bool(conf.option("ENQUEUE_ON_COMMIT") == "outbox")
    return bool(relay)


def relay_duty() -> Callable[[], bool]:
    """The workers' relay duty: one round over every source, the thread's connections closed
    when unusable or too old afterwards, as the server middleware does around jobs."""
    duty = outbox.relay_duty(
        sources,
        grace=float(conf.option("OUTBOX_GRACE")),
        identity=lambda: f"{socket.gethostname()}:{os.getpid()}",
    )

    def relay() -> bool:
        try:
            return duty()
        finally:
            for connection in connections.all(initialized_only=True):
                connection.close_if_unusable_or_obsolete()

    return relay


def stats() -> OutboxStats | None:
    """Rows waiting across every database that has the table; None when there is none."""
    found = sources()
    if not found:
        return None
    size, oldest = 0, None
    for source in found:
        count, first = source.figures()
        size += count
        if first is not None and (oldest is None or first < oldest):
            oldest = first
    return OutboxStats.of(size, oldest)
