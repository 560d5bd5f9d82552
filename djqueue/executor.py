"""Running one job: registry lookup, server middleware, the call.

The worker runtime, ``perform_now`` and the inline testing mode all run jobs through `run`, so
middleware (database connections, request context, app context, logging) behaves the same
wherever a job runs. Retries, stats and signals belong to the runtime, around this.
"""

from __future__ import annotations

import contextvars
from typing import Any

from . import registry
from .middleware import Chain, server_middleware
from .payload import Payload

_current: contextvars.ContextVar[Payload | None] = contextvars.ContextVar(
    "djqueue_current_job", default=None
)


def current_job() -> Payload | None:
    """The payload of the job running in this thread (None outside a job)."""
    return _current.get()


def run(payload: Payload, queue: str | None = None, middleware: Chain | None = None) -> Any:
    """Run the registered job named by ``payload["class"]``; raises what it raised.

    `djqueue.errors.UnknownJob` when the name is not registered in this process.
    """
    definition = registry.lookup(payload["class"])
    instance = definition.instantiate(payload)
    chain = server_middleware if middleware is None else middleware
    token = _current.set(payload)
    try:
        return chain.invoke(
            instance,
            payload,
            queue or payload.get("queue", "default"),
            lambda: definition.execute(instance, payload["args"]),
        )
    finally:
        _current.reset(token)


async def arun(payload: Payload, queue: str | None = None) -> Any:
    """`run` for an ``async def`` job, awaited on the worker's event loop."""
    definition = registry.lookup(payload["class"])
    instance = definition.instantiate(payload)
    token = _current.set(payload)
    try:
        return await server_middleware.ainvoke(
            instance,
            payload,
            queue or payload.get("queue", "default"),
            lambda: definition.aexecute(instance, payload["args"]),
        )
    finally:
        _current.reset(token)


def execute_now(item: dict[str, Any]) -> Any:
    """Build the payload exactly as a push would (the client's `normalize`), without writing
    it, and run it here."""
    from .client import get_client

    payload = get_client().normalize(item)
    payload.pop("at", None)
    payload["enqueued_at"] = payload["created_at"]
    return run(payload)
