"""Running one job: registry lookup, server middleware, the call.

The worker runtime, ``perform_now`` and the inline testing mode all run jobs through `run`, so
middleware (database connections, request context, app context, logging) behaves the same
wherever a job runs. Retries, stats and signals belong to the runtime, around this.
"""

from __future__ import annotations

import contextvars
import os
import sys
import traceback
from functools import partial
from typing import Any

from . import pipeline, registry
from .middleware import Chain, server_middleware
from .payload import Payload

_current: contextvars.ContextVar[Payload | None] = contextvars.ContextVar(
    "djqueue_current_job", default=None
)


def current_job() -> Payload | None:
    """The payload of the job running in this thread (None outside a job)."""
    return _current.get()


def _in_this_process(definition: Any, instance: Any, args: list[Any]) -> Any:
    """Run the job's own code (``definition.execute``); a process it forks and that returns
    from it exits there.

    Only the forking thread survives a fork, so a child returning into djqueue would run a
    lone processor loop: fetching and running jobs, its middleware closing the parent's
    database connections, and deaf to TERM (no run loop reads the signal). The child's work
    is the job's, and it ended when the job returned: it exits at once (0, or 1 with the
    traceback on stderr), before any middleware, acknowledgement or log line of the worker.
    """
    pid = os.getpid()
    try:
        value = definition.execute(instance, args)
    except BaseException:
        if os.getpid() != pid:
            _leave_forked_child(1)
        raise
    if os.getpid() != pid:
        _leave_forked_child(0)
    return value


def _leave_forked_child(code: int) -> None:
    if code:
        traceback.print_exc()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


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
            partial(_in_this_process, definition, instance, payload["args"]),
        )
    finally:
        _current.reset(token)


async def run_async(payload: Payload, queue: str | None = None) -> Any:
    """`run` for an ``async def`` job, awaited on the worker's event loop: the same steps."""
    definition = registry.lookup(payload["class"])
    instance = definition.instantiate(payload)
    token = _current.set(payload)
    try:
        return await pipeline.run_async(
            server_middleware.steps(),
            (instance, payload, queue or payload.get("queue", "default")),
            lambda: definition.aexecute(instance, payload["args"]),
        )
    finally:
        _current.reset(token)


def execute_now(item: dict[str, Any]) -> Any:
    """Build the payload exactly as a push would (`djqueue.payload.normalize`), without
    writing it, and run it here."""
    from .config import get_settings
    from .payload import normalize

    settings = get_settings()
    payload = normalize(item, settings.default_queue, settings.default_job_options)
    payload.pop("at", None)
    payload["enqueued_at"] = payload["created_at"]
    return run(payload)
