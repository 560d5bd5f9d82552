"""The client: turns a job item into Sidekiq-format JSON and writes it to Redis.

``push`` costs one Redis round trip: the store's push (`djqueue.store.JobStore.push`) adds the
queue to ``queues`` and LPUSHes the job, or ZADDs it to ``schedule``, atomically. ``push_bulk``
writes up to ``batch_size`` jobs per round trip. Any other codebase that speaks Sidekiq's format
can run what this writes.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Awaitable, Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import redis
import redis.exceptions

from . import config, connection, unique
from .config import Settings
from .errors import BatchClosed, RedisUnavailable
from .middleware import Chain, client_middleware
from .payload import (
    BATCH_DEFINITION,
    Payload,
    check_json_args,
    due_at,
    encode,
    new_jid,
    normalize,
    now,
)
from .signals import job_enqueued, job_not_unique
from .store import JobStore, Keys
from .store.calls import Steps, aexecute, execute

logger = logging.getLogger("djqueue.client")


class Landing:
    """Where a push lands: the one thing a caller of `Client.send` chooses. Each place writes
    the jobs its own way (``write``) and says which steps of the push apply to it; the table
    of places and steps is in docs/design.md (Client, "One way to push")."""

    #: Whether the client middleware chain runs (not where it ran when the job was first
    #: pushed: the outbox relay).
    chain: bool = True
    #: Whether the write happens inside the chain, so a middleware may wrap it or hold it for
    #: later (enqueue-on-commit). Where it does not (a requeue: one atomic move for many
    #: entries, written after every chain ran), a middleware that returns the payload without
    #: calling ``call_next`` lets the job go now.
    inline: bool = True
    #: Whether a job landing here joins the `djqueue.Batch` open in the thread.
    batch: bool = False

    def write(self, client: Client, payloads: list[Payload]) -> Collection[str] | None:
        """Encode and write ``payloads`` (normalised jobs that went through the chain).
        Returns the jids of the jobs left out because another job holds their unique lock
        (`djqueue.unique`), or None when there are none (or it is not known yet: a write held
        for a `batched` block)."""
        raise NotImplementedError


class _ToQueue(Landing):
    """A queue, or ``schedule`` for a job with a future ``at``: `Client.push`, ``push_bulk``
    and everything built on them. Joins the thread's `batched` block when one is open, and
    the thread's innermost open `djqueue.Batch` (its jobs are stamped with its ``bid`` before
    the client middleware sees them)."""

    batch = True

    def write(self, client: Client, payloads: list[Payload]) -> Collection[str] | None:
        pending = getattr(_batch, "pending", None)
        if pending is None:
            return client.raw_push(payloads)
        pending.setdefault(client, []).extend(payloads)
        return None


class _Relayed(Landing):
    """A queue or ``schedule``, for jobs from the outbox: the chain ran when the row was
    written, in the pushing process. Written at once, never joining a `batched` block: the
    rows' claim commits only once their jobs are in Redis."""

    chain = False

    def write(self, client: Client, payloads: list[Payload]) -> Collection[str] | None:
        return client.raw_push(payloads)


class _Gathered(Landing):
    """A queue or ``schedule``, written from async code (`Client.apush`): the chain runs as
    for `QUEUE`, inside it the write only gathers the jobs, and `awrite` sends them after,
    awaited. A write a middleware held past the call (it kept ``call_next`` for a commit)
    happens when it is made, as `QUEUE`'s: there is no awaiting caller any more."""

    def __init__(self) -> None:
        self.payloads: list[Payload] = []
        self.closed = False

    def write(self, client: Client, payloads: list[Payload]) -> Collection[str] | None:
        if self.closed:
            return QUEUE.write(client, payloads)
        self.payloads += payloads
        return None

    async def awrite(self, client: Client) -> Collection[str]:
        """Write what the chain let through; returns the jids of the unique jobs left out."""
        self.closed = True
        if not self.payloads:
            return ()
        return await client.awrite(self.payloads) or ()


#: The landing places `djqueue.client` owns; the sets (requeue) and periodic jobs (tick)
#: define theirs next to their store calls.
QUEUE: Landing = _ToQueue()
RELAY: Landing = _Relayed()


class Client:
    """Push jobs, as ``Sidekiq::Client`` does::

        Client().push({"class": "HardWorker", "args": [1, "x"], "queue": "critical"})
        Client().push_bulk({"class": "HardWorker", "args": [[1], [2], [3]]})

    ``class`` is any string: the job may be run by another codebase. ``at`` (epoch seconds)
    schedules the job. Raises `djqueue.errors.RedisUnavailable` when Redis cannot be reached;
    nothing is half-written then, as every write is atomic.
    """

    def __init__(
        self,
        settings: Settings | None = None,
        redis_client: redis.Redis | None = None,
        middleware: Chain | None = None,
    ) -> None:
        self.settings = settings or config.get_settings()
        self.redis = redis_client or connection.get_redis(self.settings)
        self.keys = Keys(self.settings.namespace)
        self.store = JobStore(self.redis, self.keys)
        self.middleware = client_middleware if middleware is None else middleware

    # -- public ------------------------------------------------------------------------------

    def push(self, item: dict[str, Any]) -> str | None:
        """Write one job; returns its jid, or None if a client middleware stopped it or
        another job holds its unique lock (`djqueue.unique`)."""
        payload = normalize(item, self.settings.default_queue, self.settings.default_job_options)
        return payload["jid"] if self.send([payload], QUEUE) else None

    def push_bulk(self, item: dict[str, Any], batch_size: int = 1000) -> list[str]:
        """Write one job per entry of ``item["args"]`` (a list of argument lists).

        ``at`` may be one time for all or a list with one time per job. Returns the jids of
        the jobs written, in order (jobs a middleware stopped, and unique jobs whose lock
        another job holds, are left out).
        """
        args_list = item.get("args")
        if not isinstance(args_list, list) or not all(isinstance(a, list) for a in args_list):
            raise TypeError("push_bulk needs 'args' as a list of argument lists")
        at = item.get("at")
        if isinstance(at, list) and len(at) != len(args_list):
            raise ValueError("push_bulk: 'at' must have one entry per job")
        if batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        # Everything but args, jid and at is shared: normalise and check it once (Sidekiq does
        # the same, so the jobs of one bulk share created_at), then copy it per job.
        base = {k: v for k, v in item.items() if k not in ("at", "jid")}
        base["args"] = []
        if not isinstance(at, list):
            base["at"] = at
        template = normalize(base, self.settings.default_queue, self.settings.default_job_options)
        template.pop("at", None)
        payloads: list[Payload] = []
        for index, args in enumerate(args_list):
            try:
                check_json_args(args)
            except TypeError as exc:
                raise TypeError(f"push_bulk job #{index}: {exc}") from None
            one = template.copy()
            one["args"] = args
            one["jid"] = new_jid()
            when = at[index] if isinstance(at, list) else at
            if when is not None:
                if not isinstance(when, (int, float)) or isinstance(when, bool):
                    raise TypeError(
                        f"push_bulk job #{index}: 'at' must be epoch seconds, "
                        f"got {type(when).__name__}"
                    )
                due_at(one, when)
            payloads.append(one)
        jids: list[str] = []
        for start in range(0, len(payloads), batch_size):
            with batched() as skipped:  # one round trip per batch, whatever the chain does
                sent = self.send(payloads[start : start + batch_size], QUEUE)
            jids += [payload["jid"] for payload in sent if payload["jid"] not in skipped]
        return jids

    # -- the push ------------------------------------------------------------------------------

    def send(self, payloads: list[Payload], landing: Landing) -> list[Payload]:
        """The one way a job reaches Redis: run the client middleware chain around each job
        (where ``landing`` has it), then ``landing.write``, which encodes with
        `djqueue.payload.encode` (Ruby's JSON, the size limit) and sends ``job_enqueued``
        (`announce`). New jobs are normalised first (`djqueue.payload.normalize`); jobs that
        were pushed before (a requeue, a relayed outbox row) are taken as stored. Returns the
        payloads written or held by a middleware, in order; those stopped are left out, and
        so are unique jobs the write skipped because another job holds their lock.

        A push goes ahead when the chain reached its end, whatever the middleware returned: a
        middleware that calls ``call_next()`` but forgets to return its value still pushes.
        A middleware may also hold the write back (the Django app does, until the transaction
        commits): it keeps ``call_next``, calls it later, and returns the payload now, so the
        caller gets the jid at once.
        """
        if landing.batch:
            opened = getattr(_batch, "opened", None)
            if opened:
                opened[-1].stamp(payloads)
        if not landing.chain or not len(self.middleware):
            return _kept(payloads, landing.write(self, payloads))
        passed: list[Payload] = []
        due: list[Payload] = []
        skipped: set[str] = set()
        for payload in payloads:
            if self._through_chain(payload, landing, due, skipped):
                passed.append(payload)
        if due:
            skipped.update(landing.write(self, due) or ())
        return _kept(passed, skipped)

    def _through_chain(
        self, payload: Payload, landing: Landing, due: list[Payload], skipped: set[str]
    ) -> bool:
        """Run the chain around one job's write; True if it was written, held, or (for a
        landing that writes after the chain) added to ``due``. Unique jobs left out by the
        write are added to ``skipped``."""
        reached = closed = False

        def final() -> Payload:
            nonlocal reached
            if landing.inline:
                skipped.update(landing.write(self, [payload]) or ())
            elif not closed:  # a call held past the chain: the job went with ``due``
                due.append(payload)
            reached = True
            return payload

        result = self.middleware.invoke(payload["class"], payload, payload["queue"], final)
        closed = True
        if reached:
            return True
        if result is not payload:
            return False
        if not landing.inline:
            due.append(payload)
        return True

    def raw_push(self, payloads: list[Payload]) -> Collection[str] | None:
        """Write normalised payloads; due jobs to their queues, future ones to ``schedule``.

        One round trip whatever the mix of queues and times, so a batch is written whole or
        not at all (unique jobs whose lock another job holds left out: their jids are
        returned, after `report_not_unique` reported them). The testing helpers replace this
        method to capture jobs instead of writing them.
        """
        return self._written(payloads, execute(self.redis, self._write(payloads)))

    async def awrite(self, payloads: list[Payload]) -> Collection[str] | None:
        """`raw_push` from async code, on the running event loop's asyncio connection
        (`djqueue.connection.get_aredis`): the same steps (`_write`: stamps, encoding, size
        limit, the one script call and its reply) and the same ending (`_written`), awaited
        without a thread. A replaced ``raw_push`` (the testing modes, a subclass's) is called
        instead, as is: it is what a write means for this client."""
        if type(self).raw_push is not _RAW_PUSH:
            return self.raw_push(payloads)
        aredis = connection.get_aredis(self.settings)
        return self._written(payloads, await aexecute(aredis, self._write(payloads)))

    def _write(self, payloads: list[Payload]) -> Steps[list[tuple[str, str]]]:
        """The write of ``payloads`` as `djqueue.store.calls` steps, for either connection:
        ``enqueued_at`` stamped (dropped for a future job), unique jobs stamped, each encoded
        (`djqueue.payload.encode`, the size limit: checked before anything is sent), then the
        store's push. A connection failure is `RedisUnavailable`."""
        t = now()
        scheduled: list[tuple[float, str]] = []
        queued: dict[str, list[str]] = {}
        limit = self.settings.max_payload_bytes
        batches: dict[str, None] = {}
        in_batch = False
        for payload in payloads:
            if "bid" in payload:
                in_batch = True
                for definition in payload.pop(BATCH_DEFINITION, ()):
                    batches[definition] = None
            at = payload.pop("at", None)
            if at is not None and at > t:
                payload.pop("enqueued_at", None)
            else:
                payload["enqueued_at"] = t
            if "unique_for" in payload:
                unique.stamp(payload)
            text = encode(payload, limit)
            if at is not None and at > t:
                scheduled.append((float(at), text))
            elif payload["queue"] in queued:
                queued[payload["queue"]].append(text)
            else:
                queued[payload["queue"]] = [text]
        return (yield from self._push_steps(queued, scheduled, list(batches), in_batch))

    def _push_steps(
        self,
        queued: dict[str, list[str]],
        scheduled: list[tuple[float, str]],
        batches: Sequence[str] = (),
        in_batch: bool = False,
    ) -> Steps[list[tuple[str, str]]]:
        """The store's push (`JobStore.push_steps`), with its errors as djqueue's: Redis out
        of reach raises `RedisUnavailable`, a batch that takes no more jobs `BatchClosed`.
        ``batches``: definitions of batches (`djqueue.batch`) to create with the jobs; alone
        (no job), they create empty batches."""
        # `connection.translate_errors` inlined: a context manager costs ~1 us a push.
        try:
            return (yield from self.store.push_steps(queued, scheduled, batches, in_batch))
        except RedisUnavailable:  # PoolExhausted: ours already
            raise
        except connection.CONNECTION_ERRORS as exc:
            raise RedisUnavailable(self.settings.safe_redis_url, exc) from exc
        except redis.exceptions.ResponseError as exc:
            if str(exc).startswith("BATCH "):
                raise BatchClosed(str(exc)[6:]) from None
            raise

    def _written(
        self, payloads: list[Payload], left_out: list[tuple[str, str]]
    ) -> Collection[str] | None:
        """After the write: ``job_enqueued`` for the jobs written, the unique ones left out
        reported; returns the jids of those (None when there are none)."""
        if not left_out:
            announce(payloads)
            return None
        holders = dict(left_out)
        announce([payload for payload in payloads if payload["jid"] not in holders])
        report_not_unique(payloads, holders)
        return holders.keys()

    def create_batches(self, definitions: Sequence[str]) -> None:
        """Create batches that no job joined (`djqueue.Batch`, empty): their callbacks are
        pushed at once. The testing helpers replace it, as `raw_push`."""
        execute(self.redis, self._push_steps({}, [], definitions))

    # -- async ---------------------------------------------------------------------------------

    async def apush(self, item: dict[str, Any]) -> str | None:
        """`push` from async code, holding no thread: the job is normalised and goes through
        the client middleware chain as `push` does (`send`, on the event loop), and its write
        is awaited on an asyncio connection (`awrite`). Returns the jid, or None if a
        middleware stopped it or another job holds its unique lock. The chain is sync and
        runs on the event loop: what a middleware reads that needs I/O is fetched before it,
        by `before_async_push`. When the coroutine runs for sync code that may be inside a
        transaction (`in_calling_thread` says so), the push is `push`, made in that thread,
        so it waits for that commit as a sync push would. Inside a `batched` block (a
        `djqueue.Batch`, a bulk) the push is `push` too: it only joins the block's write,
        which the block makes when it ends, so nothing waits here."""
        if current_batch() is not None:
            return self.push(item)
        if in_calling_thread is not None:
            there = in_calling_thread(lambda: self.push(item))
            if there is not None:
                return await there
        payload = normalize(item, self.settings.default_queue, self.settings.default_job_options)
        for prepare in before_async_push:
            await prepare()
        landing = _Gathered()
        sent = self.send([payload], landing)
        skipped = await landing.awrite(self)
        return payload["jid"] if sent and payload["jid"] not in skipped else None


def _kept(payloads: list[Payload], skipped: Collection[str] | None) -> list[Payload]:
    """``payloads`` without the jobs whose jid is in ``skipped``."""
    if not skipped:
        return payloads
    return [payload for payload in payloads if payload["jid"] not in skipped]


def report_not_unique(payloads: list[Payload], holders: Mapping[str, str]) -> None:
    """Report the unique jobs left out of a write (``holders``: their jid -> the jid of the
    job holding the lock, or ``""`` when not known): logged, and sent with
    ``job_not_unique``."""
    for payload in payloads:
        holder = holders.get(payload["jid"])
        if holder is None:
            continue
        logger.info(
            "%s %s not pushed: not unique (lock %s held by %s)",
            payload["class"],
            payload["jid"],
            payload.get("unique_digest"),
            f"job {holder}" if holder else "another job",
        )
        if job_not_unique.receivers:
            job_not_unique.send(payload["class"], payload=payload, holder=holder)


def announce(payloads: list[Payload]) -> None:
    """Send ``job_enqueued`` for jobs just written (the last step of a landing's write)."""
    if job_enqueued.receivers:
        for payload in payloads:
            job_enqueued.send(payload["class"], payload=payload)


_batch = threading.local()


@contextmanager
def batched() -> Iterator[set[str]]:
    """Write the jobs pushed by this thread inside the block together when it ends: one round
    trip per client instead of one per job. Nested blocks join the outermost one; if the block
    raises, none of its jobs is written. ``push_bulk`` uses it per batch, the Django app
    for the jobs held until a transaction commits, and `djqueue.Batch` for its jobs.

    Yields a set that holds, once the outermost block has ended, the jids of the unique jobs
    its write left out (`djqueue.unique`); an inner block's set stays empty.
    """
    left_out: set[str] = set()
    if getattr(_batch, "pending", None) is not None:
        yield left_out
        return
    _batch.pending = {}
    _batch.empty = []
    try:
        yield left_out
        pending: dict[Client, list[Payload]] = _batch.pending
        empty: list[tuple[Client, str]] = _batch.empty
    finally:
        _batch.pending = None
        _batch.empty = None
    for client, definition in empty:
        _carry(pending.setdefault(client, []), client, definition)
    for client, payloads in pending.items():
        if payloads:
            left_out.update(client.raw_push(payloads) or ())


def _carry(payloads: list[Payload], client: Client, definition: str) -> None:
    """A batch that no job of the block joined (`djqueue.Batch`, empty) is created with the
    block's first job of a batch, in the same write, or on its own when there is none."""
    for payload in payloads:
        if "bid" in payload:
            payload[BATCH_DEFINITION] = [*payload.get(BATCH_DEFINITION, ()), definition]
            return
    client.create_batches([definition])


def add_empty_batch(client: Client, definition: str) -> None:
    """Have the open `batched` block create the batch ``definition`` when it ends (a batch
    no job joined)."""
    _batch.empty.append((client, definition))


def open_batches() -> list[Any]:
    """The `djqueue.Batch` blocks open in this thread, innermost last (a list to push to)."""
    opened = getattr(_batch, "opened", None)
    if opened is None:
        opened = _batch.opened = []
    return opened


_RAW_PUSH = Client.raw_push

#: Coroutine functions `Client.apush` awaits before the client middleware chain, which is
#: sync and runs on the event loop: an integration fetches there, without blocking, what its
#: middleware will read (the Django app: the request's user, `stamping.user_ready`).
before_async_push: list[Callable[[], Awaitable[None]]] = []

#: Set by an integration whose pushes wait for a transaction: given the sync push, an
#: awaitable running it in the thread the current coroutine runs for, when that thread may be
#: inside a transaction; None to push on the event loop. The Django app's
#: (`djqueue.contrib.django.transaction.in_calling_thread`) answers for a coroutine that
#: asgiref's ``async_to_sync`` runs for sync code: an event loop's own thread is never inside
#: ``atomic()``.
in_calling_thread: Callable[[Callable[[], Any]], Awaitable[Any] | None] | None = None


def current_batch() -> object | None:
    """A token for the `batched` block open in this thread (None outside one): integrations
    that hold writes back use it to keep one batch's jobs together."""
    return getattr(_batch, "pending", None)


#: One client per distinct settings (the process's, each Flask app's), and the last one used.
_clients: dict[Settings, Client] = {}
_last: tuple[Settings, Client] | None = None


def client_for(settings: Settings) -> Client:
    """The shared client for ``settings``: one per distinct settings, so apps that share a
    Redis and a namespace share a pool, and a push costs no new object. A client whose pool
    `djqueue.connection.reset` dropped (as `configure` does) is replaced."""
    global _last
    last = _last
    if last is not None and last[0] is settings:
        return last[1]
    client = _clients.get(settings)
    if client is None or client.redis is not connection.get_redis(settings):
        client = _clients[settings] = Client(settings)
    _last = (settings, client)
    return client


def get_client() -> Client:
    """The client for the settings in force here (`djqueue.config.get_settings`: the pinned
    ones, the current app's, or the process-wide ones)."""
    return client_for(config.get_settings())
