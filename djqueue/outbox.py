"""The transactional outbox, the part no framework owns.

With enqueue-on-commit a job is pushed after its data commits; if Redis cannot be reached at
that moment the job is lost while the data stays. With the outbox, the push writes a row (the
job's JSON) into a table in the same database transaction as the data instead; after the
commit the pushing process claims its rows, pushes the jobs at once and deletes the rows (as a
relay would: `push_own`), and rows left behind
(Redis was down, the process died in between) are pushed by the workers' relay duty. The
Django app and flask_djqueue own the table and the transactions; this module holds what they
share: the row's text, the push of claimed rows, the relay round, the figures, and
`write_or_keep`, which keeps in the table the jobs of plain enqueue-on-commit whose push after
the commit met Redis down.

A row younger than ``grace`` seconds is left to the process that wrote it: its own push after
the commit is normally done within milliseconds, and a relay taking the row meanwhile would
push the job twice. The grace must outlast that push's worst case (connect and socket
timeouts, 2 + 5 s by default), hence 10 s. Times are the writing and the relaying hosts' wall
clocks, which must agree to well within the grace.
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Any, Protocol

from .client import RELAY, Client, batched, get_client
from .config import Settings
from .errors import RedisUnavailable
from .payload import Payload, encode

logger = logging.getLogger("djqueue.outbox")

#: The relay duty's name, in a worker's ``info["duties"]``.
DUTY = "outbox"
#: Seconds a row is left to the process that wrote it before a relay may take it.
GRACE_SECONDS = 10.0
#: Rows claimed, pushed (one Redis round trip) and deleted per transaction: a relay (or a
#: writer) killed between its push and its commit leaves these rows to be pushed again, so this
#: is the most such a crash can duplicate. ``bench/outbox_bench.py --relay`` measures the cost.
CLAIM_SIZE = 50
#: Rows a relay round moves at most (in claims of `CLAIM_SIZE`) before it publishes its
#: figures; a full round makes the duty go on at once.
BATCH_SIZE = 500


@dataclass(frozen=True)
class Row:
    """One outbox row as a relay claims it: its primary key and the job's JSON."""

    id: int
    payload: str


@dataclass(frozen=True)
class OutboxStats:
    """Rows waiting in the outbox and the age of the oldest (None when empty), in seconds."""

    size: int
    oldest_age: float | None

    @classmethod
    def of(cls, size: int, oldest: float | None, now: float | None = None) -> OutboxStats:
        """From a count and the oldest row's ``created_at`` (epoch seconds)."""
        if oldest is None or not size:
            return cls(size, None)
        return cls(size, max(0.0, (time.time() if now is None else now) - oldest))

    @property
    def age_text(self) -> str:
        return "-" if self.oldest_age is None else f"{self.oldest_age:.1f}s"


class Source(Protocol):
    """One outbox table, as a framework reaches it."""

    name: str

    def claim(
        self, cutoff: float, limit: int, ids: Sequence[int] | None = None
    ) -> AbstractContextManager[list[Row]]:
        """A database transaction holding up to ``limit`` rows created before ``cutoff`` (or,
        with ``ids``, those of the rows still there), oldest first, already deleted in it, and
        taken by nobody else (``SELECT ... FOR UPDATE SKIP LOCKED`` where the database has
        it); committed when the block ends, rolled back if it raises."""

    def figures(self) -> tuple[int, float | None]:
        """The row count and the oldest row's ``created_at``."""


#: The outbox table's name, in Django and SQLAlchemy alike.
TABLE = "djqueue_outbox"


@contextmanager
def naming_fix(fix: str) -> Iterator[None]:
    """A database error that names the outbox table (it was never created) gets ``fix`` as a
    note, so the traceback says what to do; the error keeps its type for the caller."""
    try:
        yield
    except Exception as exc:
        if TABLE in str(exc):
            exc.add_note(f"djqueue: the outbox table is missing: {fix}")
        raise


def row_text(payload: Payload, settings: Settings) -> str:
    """The JSON a row keeps: the payload as the client would push it (``at`` included).
    A job too large to push is refused now, while the caller can still see the error."""
    return encode(payload, settings.max_payload_bytes)


def decode(rows: list[Row]) -> list[Payload]:
    """The payloads of claimed rows; a row that is not a job object is logged and dropped
    (only djqueue writes rows, so this is a row edited by hand)."""
    payloads = []
    for row in rows:
        try:
            payload = json.loads(row.payload)
        except ValueError:
            payload = None
        if not isinstance(payload, dict) or not isinstance(payload.get("class"), str):
            logger.error("outbox row %s is not a job; dropped: %.200s", row.id, row.payload)
            continue
        payloads.append(payload)
    return payloads


def push_rows(rows: list[Row], client: Client | None = None) -> None:
    """Push the jobs of ``rows`` in one round trip (raises `RedisUnavailable` if it failed)."""
    payloads = decode(rows)
    if payloads:
        (client or get_client()).send(payloads, RELAY)


def relay_round(
    source: Source,
    grace: float = GRACE_SECONDS,
    limit: int = BATCH_SIZE,
    client: Client | None = None,
    claim_size: int = CLAIM_SIZE,
) -> int:
    """Claim, push and delete up to ``limit`` rows older than ``grace``, ``claim_size`` rows per
    transaction; returns how many.

    The rows are deleted inside the claim's transaction before the push, and the push happens
    before the commit: a push that fails rolls the deletion back; a commit that fails after a
    push (the relay killed in between) leaves that claim's rows to be pushed again (at least
    once). Hence one transaction per claim rather than per round: a crash duplicates at most
    ``claim_size`` jobs, while a claim still spreads its database and Redis round trips over
    many rows.
    """
    cutoff = time.time() - grace
    done = 0
    while done < limit:
        wanted = min(claim_size, limit - done)
        with source.claim(cutoff, wanted) as rows:
            if rows:
                push_rows(rows, client)
        done += len(rows)
        if len(rows) < wanted:
            break
    return done


def relay_duty(
    sources: Callable[[], Sequence[Source]],
    grace: float = GRACE_SECONDS,
    limit: int = BATCH_SIZE,
    identity: Callable[[], str] = lambda: "",
) -> Callable[[], bool]:
    """A worker duty (`djqueue.worker.duties`): one relay round per source, then the figures
    published for ``djqueue stats``; True (go on at once) when a batch was full."""

    def relay() -> bool:
        full = False
        size, oldest = 0, None
        for source in sources():
            count, first = source.figures()
            # A claim takes SQLite's write lock even when it finds nothing: an outbox with no
            # row past the grace (the usual case, since writers push their own) is only read.
            if first is not None and first < time.time() - grace:
                full = relay_round(source, grace, limit) == limit or full
                count, first = source.figures()
            size += count
            if first is not None and (oldest is None or first < oldest):
                oldest = first
        publish(size, oldest, identity())
        return full

    return relay


def publish(size: int, oldest: float | None, process: str, client: Client | None = None) -> None:
    from .store import OutboxFigures, OutboxStore

    client = client or get_client()
    figures = OutboxFigures(size, oldest, time.time(), process)
    OutboxStore(client.redis, client.keys).publish(figures)


def published(settings: Settings | None = None) -> tuple[OutboxStats, float] | None:
    """The figures the last relay round published and their age in seconds, or None when no
    relay has published for a minute (``djqueue stats`` shows this: it sees no database)."""
    from .client import client_for
    from .config import get_settings
    from .store import OutboxStore

    client = client_for(settings or get_settings())
    figures = OutboxStore(client.redis, client.keys).read()
    if figures is None:
        return None
    now = time.time()
    return OutboxStats.of(figures.size, figures.oldest, now), max(0.0, now - figures.at)


def write_or_keep(
    held: Sequence[tuple[Payload | None, Callable[[], Any]]],
    keep: Callable[[list[Payload]], bool],
    fix: str,
) -> None:
    """After a commit, the writes held for it (each with its payload, or None for a write that
    is not a push): called together, one round trip per client (`batched`).

    If Redis is unavailable the data has committed already, so the job would be lost and the
    user, seeing an error, would submit again and get a duplicate. Where the outbox table
    exists, ``keep`` writes the jobs there (a new short transaction on the same database) and
    a worker's relay pushes them: nothing raises, one warning is logged. Where it does not
    (``keep`` returns False; it looks only now, as the normal commit must not pay for it),
    `RedisUnavailable` is raised with ``fix`` (how to create the table) in its message. The
    payloads are copied first: a failed push has already taken ``at`` out of a scheduled job.
    """
    kept = [dict(payload) for payload, _ in held if payload is not None]
    try:
        with batched():
            for _, write in held:
                write()
    except RedisUnavailable as exc:
        if not kept:
            raise
        if not keep(kept):
            raise RedisUnavailable(exc.url, exc.cause, hint=fix) from exc
        logger.warning(
            "outbox: Redis at %s was unavailable at commit; %d job(s) kept in the outbox, a "
            "worker's relay will push them (%s)",
            exc.url,
            len(kept),
            ", ".join(f"{p['class']} {p['jid']}" for p in kept[:5])
            + (" ..." if len(kept) > 5 else ""),
        )


def push_own(source: Source, ids: Sequence[int], client: Client | None = None) -> bool:
    """After a commit, the writing process's own push of its rows ``ids``: claimed as a relay
    claims rows (deleted in a transaction, rows a relay holds skipped or waited for), pushed,
    then committed. A relay that took a row first (the transaction outlived the grace) leaves
    nothing to push here, so a slow transaction's job is not pushed twice. Nothing raises to
    the committing code, whose data is safe either way: a push that fails rolls the deletion
    back and leaves the rows to the relay (logged as a warning). Returns whether every push
    went through."""
    try:
        for start in range(0, len(ids), CLAIM_SIZE):
            chunk = ids[start : start + CLAIM_SIZE]
            with source.claim(math.inf, len(chunk), chunk) as rows:
                if rows:
                    push_rows(rows, client)
    except Exception as exc:
        logger.warning("outbox: push after commit failed (%s); a worker's relay will push it", exc)
        return False
    return True
