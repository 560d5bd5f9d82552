"""Batches, chains and signatures: "run these, then that, once" (Sidekiq Pro's Batches).

``job.s(*args)`` is a `Signature`: a job and its arguments, to push later. A `Batch` groups
the jobs pushed inside its ``with`` block and pushes its callbacks, each exactly once:
``complete`` when every job has run once (succeeded or failed a first time), ``success`` when
every job has succeeded (retries included), ``death`` when a job died. `chain` runs jobs one
after another, each once the one before succeeded.

Nothing here counts or decides: the store does, in the same Lua step that acknowledges or
settles each job (lua/batch.lua), so a worker killed at any moment neither loses a count nor
makes one twice, and a callback is pushed by the step that makes its event true. What this
module does is prepare what those steps need: the batch's definition (written with its first
jobs, in the push's own script) and each callback or chain step as a job text cut at one
argument (`_template`), which the store completes with the batch's status or the step's
result and pushes as a normal job.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from . import payload as payloads
from .client import Client, add_empty_batch, batched, get_client, open_batches
from .executor import current_job
from .lifecycle import JobRef
from .payload import BATCH_DEFINITION, Payload, dumps, encode, normalize
from .store.batch_read import BatchState

if TYPE_CHECKING:
    from .api.batches import Batch as ApiBatch

#: The argument a template is cut at: replaced by the batch's status or a step's result.
PLACEHOLDER = "\x00djqueue-placeholder\x00"
EVENTS = ("complete", "success", "death")


class Signature:
    """A job with its arguments and options, to be pushed later: ``job.s(1, 2)``,
    ``job.s(1, queue="low")``. ``perform_later()`` pushes it now."""

    __slots__ = ("item",)

    def __init__(self, item: dict[str, Any]) -> None:
        self.item = item

    def __repr__(self) -> str:
        return f"<Signature {self.item['class']}{tuple(self.item['args'])!r}>"

    def perform_later(self) -> JobRef | None:
        jid = get_client().push(_copy(self.item))
        return JobRef(jid) if jid is not None else None


def _copy(item: dict[str, Any]) -> dict[str, Any]:
    return {**item, "args": list(item["args"])}


def _template(
    client: Client, signature: Any, what: str, first: bool = False
) -> tuple[Payload, list[str]]:
    """``signature`` as the job it becomes (normalised now: its jid and created_at are fixed)
    and as [queue, head, tail]: its JSON cut at the placeholder argument, ``first`` (a chain
    step's result) or last (a callback's status), which the store fills in. Checked as a push
    is, size included."""
    if not isinstance(signature, Signature):
        raise TypeError(f"{what} must be a job signature (job.s(...)), got {signature!r}")
    settings = client.settings
    job = normalize(_copy(signature.item), settings.default_queue, settings.default_job_options)
    job.pop("at", None)
    shown = dict(job)
    job["args"] = [PLACEHOLDER, *job["args"]] if first else [*job["args"], PLACEHOLDER]
    text = encode(job, settings.max_payload_bytes)
    head, mark, tail = text.partition(json.dumps(PLACEHOLDER))
    if not mark or mark in tail:
        raise ValueError(f"{what}: an argument holds djqueue's placeholder text")
    return shown, [job["queue"], head, tail]


def _signatures(value: Any) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return list(value)
    return [value]


class Batch:
    """A group of jobs with callbacks, pushed whole when its ``with`` block ends::

        with djqueue.Batch(description="import 42", on_success=notify.s(42)) as batch:
            for part in parts:
                import_part.perform_later(part)

    Every job pushed in the block by this thread (``perform_later``, ``perform_bulk``,
    ``Client.push``) carries the batch's ``bid`` and is written with the batch, in one
    round trip, when the block ends; if the block raises, nothing is written. Callbacks are
    signatures (or lists of them); each is pushed once, as a normal job whose last argument
    is the batch's status (docs/batches.md). A batch opened inside another's block is its
    child: the parent succeeds once the child has. ``Batch(bid=...)`` (or `current`, in a
    job of a batch) reopens a batch, to add jobs or child batches to it.
    """

    def __init__(
        self,
        description: str = "",
        on_success: Any = None,
        on_complete: Any = None,
        on_death: Any = None,
        *,
        bid: str | None = None,
    ) -> None:
        if not isinstance(description, str):
            raise TypeError(f"description must be a string, got {type(description).__name__}")
        self.reopened = bid is not None
        if self.reopened and (description or on_success or on_complete or on_death):
            raise ValueError("Batch(bid=...) reopens a batch: it takes no description or callbacks")
        self.bid = bid or payloads.new_jid()
        self.description = description
        self.callbacks = {
            "complete": _signatures(on_complete),
            "success": _signatures(on_success),
            "death": _signatures(on_death),
        }
        self.parent: Batch | None = None
        self.client: Client | None = None
        self._definition = ""
        self._carry: list[str] = []
        self._carried = False
        self._block: Any = None

    def __repr__(self) -> str:
        return f"<Batch {self.bid} {self.description!r}>"

    @classmethod
    def current(cls) -> Batch | None:
        """The batch of the job running in this thread, reopened (None outside a job of a
        batch): ``with Batch.current():`` adds jobs to it."""
        job = current_job()
        bid = job.get("bid") if job is not None else None
        return cls(bid=bid) if isinstance(bid, str) else None

    # -- the block ---------------------------------------------------------------------------

    def __enter__(self) -> Batch:
        if self._block is not None:
            raise RuntimeError(f"{self!r} is open already")
        self.client = get_client()
        opened = open_batches()
        self.parent = opened[-1] if opened else None
        self._definition = self._define(self.client)
        self._carry = [self._definition]
        self._carried = False
        self._block = batched()
        self._block.__enter__()
        opened.append(self)
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> Any:
        open_batches().remove(self)
        block, self._block = self._block, None
        if exc_type is None and not self._carried and self.client is not None:
            add_empty_batch(self.client, self._definition)
        done = block.__exit__(exc_type, exc, tb)
        if exc_type is None:
            self.reopened = True  # written: a block opened again adds to it
        return done

    def stamp(self, jobs: list[Payload]) -> None:
        """Make ``jobs`` (pushed in the block) jobs of this batch; each carries the batch's
        definition to the write, which creates the batch with them (`Client.raw_push`)."""
        for job in jobs:
            job["bid"] = self.bid
            job[BATCH_DEFINITION] = self._carry
        batch: Batch | None = self
        while batch is not None and not batch._carried:
            batch._carried = True
            batch = batch.parent

    def _define(self, client: Client) -> str:
        """The definition the store creates the batch from (lua/batch.lua, batch_create), as
        JSON; a reopened batch's only says which batch, to check it still takes jobs."""
        definition: dict[str, Any] = {"bid": self.bid}
        if self.reopened:
            definition["reopen"] = True
        else:
            shown: dict[str, list[Payload]] = {}
            push: dict[str, list[list[str]]] = {}
            for event in EVENTS:
                for signature in self.callbacks[event]:
                    job, template = _template(client, signature, f"on_{event}")
                    shown.setdefault(event, []).append(job)
                    push.setdefault(event, []).append(template)
            definition.update(
                description=self.description,
                created_at=repr(payloads.now()),
                retention=int(client.settings.batch_retention),
                callbacks=dumps(shown),
                push=push,
            )
        if self.parent is not None:
            definition["parent"] = self.parent.bid
            definition["parent_def"] = json.loads(self.parent._definition)
        return json.dumps(definition, separators=(",", ":"))

    # -- the batch in Redis ------------------------------------------------------------------

    def _client(self) -> Client:
        return self.client or get_client()

    def status(self) -> BatchState | None:
        """The batch as Redis holds it now (None once expired, or before it was written).
        Read as the Batches page reads it (`djqueue.api.Batch`): a key of the wrong type
        raises `djqueue.BadKey`, Redis out of reach `djqueue.RedisUnavailable`."""
        return self._api().state()

    def cancel(self) -> int | None:
        """Cancel the batch: no callback is pushed any more, no job may join it, and its
        waiting jobs are taken out of their queues, the schedule and the retry set. Returns
        how many were taken out (None: unknown or expired). Running jobs go on; they can
        look at `cancelled`."""
        return self._api().cancel()

    @property
    def cancelled(self) -> bool:
        """Whether the batch was cancelled (one read of Redis): for its running jobs to stop."""
        return self._api().cancelled()

    def _api(self) -> ApiBatch:
        from .api.batches import Batch as ApiBatch  # the inspection API, loaded when used

        client = self._client()
        return ApiBatch(self.bid, client.settings, client.redis)


class JobChain:
    """Jobs run one after another, each once the one before has succeeded (`chain`)."""

    def __init__(self, steps: Sequence[Signature], pass_result: bool = False) -> None:
        if len(steps) < 1:
            raise ValueError("a chain needs at least one step")
        self.steps = list(steps)
        self.pass_result = pass_result

    def perform_later(self) -> list[JobRef]:
        """Push the first step; the store pushes each next one when the one before succeeds,
        in the step that acknowledges it. Returns every step's jid, in order."""
        client = get_client()
        first = self.steps[0]
        if not isinstance(first, Signature):
            raise TypeError(f"chain step 1 must be a job signature (job.s(...)), got {first!r}")
        later = [
            _template(client, step, f"chain step {n}", first=True)
            for n, step in enumerate(self.steps[1:], start=2)
        ]
        item = _copy(first.item)
        if later:
            item["chain"] = {
                "pass_result": self.pass_result,
                "next": [{"queue": t[0], "head": t[1], "tail": t[2]} for _, t in later],
            }
        jid = client.push(item)
        if jid is None:
            return []
        return [JobRef(jid), *(JobRef(job["jid"]) for job, _ in later)]


def chain(*steps: Signature, pass_result: bool = False) -> JobChain:
    """``djqueue.chain(a.s(1), b.s(), c.s()).perform_later()``: ``a(1)``, then ``b()`` once
    it succeeded, then ``c()``; a step that dies stops the chain. With ``pass_result=True``
    a step's return value is the next step's first argument."""
    return JobChain(steps, pass_result)
