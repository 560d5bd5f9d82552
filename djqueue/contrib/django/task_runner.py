"""The worker's side of the ``django.tasks`` backend: the wrapper jobs that run a task's
attempt and send ``task_started`` and (when it returns) ``task_finished``.

``run_task`` runs a task on a processor thread; ``run_async_task``, itself ``async def``, is
the job ``async def`` tasks travel as, so the worker's event loop awaits them as it awaits
djqueue's own async jobs. Both share an attempt's start (`_begin`) and end (`_succeeded`). A
task runs only if this process defined it (`djqueue.contrib.django.tasks.lookup_task`).
"""

from __future__ import annotations

import os
import socket
from typing import Any

from asgiref.sync import sync_to_async
from django.utils import timezone

from djqueue import lifecycle
from djqueue.executor import current_job
from djqueue.job import job
from djqueue.payload import new_jid, now

from .tasks import (
    ASYNC_JOB_NAME,
    JOB_NAME,
    MAX_ATTEMPTS,
    _from_payload,
    _spec,
    lookup_task,
    normalize_json,
)
from .tasks_framework import TaskContext, TaskResult, TaskResultStatus, task_finished, task_started


def _attempt(payload: dict[str, Any]) -> int:
    """1 on the first run, 2 after one failure, ...: ``retry_count + 2``, bounded."""
    count = payload.get("retry_count")
    if not isinstance(count, int) or isinstance(count, bool):
        return 1
    return max(1, min(count + 2, MAX_ATTEMPTS))


def _worker_ids(payload: dict[str, Any], attempt: int) -> list[str]:
    """The process of each attempt, this one last, from a tracked task's status (its
    ``workers``, written when the worker took the job: the last 25). Attempts it does not
    name (earlier than those, or an untracked task's) are ``""``, unknown, so that
    ``attempts`` (and ``TaskContext.attempt``) still counts them."""
    known: list[str] = []
    if "retention" in payload:
        known = list(lifecycle.status(str(payload["jid"])).workers)[-attempt:]
    if not known:
        known = [_worker_id]
    return [""] * (attempt - len(known)) + known


_worker_id = f"{socket.gethostname()}:{os.getpid()}"


def _begin(spec: dict[str, Any]) -> tuple[TaskResult, type, tuple[Any, ...]]:
    """An attempt's start, the same for sync and async tasks: the allow-list, the RUNNING
    TaskResult, ``task_started``; returns the result, the signals' sender and the positional
    arguments of the call (the context first when the task takes it)."""
    payload = current_job() or {"jid": new_jid(), "args": [spec], "enqueued_at": now()}
    lookup_task(_spec(payload)["task"])  # the allow-list first, before anything is built
    attempt = _attempt(payload)
    started = timezone.now()
    result, backend_class = _from_payload(
        payload,
        status=TaskResultStatus.RUNNING,
        started_at=started,
        last_attempted_at=started,
        worker_ids=_worker_ids(payload, attempt),
    )
    task_started.send(backend_class, task_result=result)
    args = tuple(result.args)
    if result.task.takes_context:
        args = (TaskContext(task_result=result), *args)
    return result, backend_class, args


def _succeeded(result: TaskResult, backend_class: type, value: Any) -> Any:
    """An attempt that returned: SUCCESSFUL, ``task_finished``. One that raised sends nothing
    here: whether it was the last is the worker's decision, after the job returns
    (``task_finished(FAILED)`` goes out from `_ended` when the task is dead)."""
    value = normalize_json(value)
    object.__setattr__(result, "finished_at", timezone.now())
    object.__setattr__(result, "status", TaskResultStatus.SUCCESSFUL)
    object.__setattr__(result, "_return_value", value)
    task_finished.send(backend_class, task_result=result)
    return value


@job(name=JOB_NAME)
def run_task(spec: dict[str, Any]) -> Any:
    """Run one django task on a processor thread (an ``async def`` one pushed before
    `ASYNC_JOB_NAME` existed runs to completion there, through Django's ``async_to_sync``)."""
    result, backend_class, args = _begin(spec)
    return _succeeded(result, backend_class, result.task.call(*args, **result.kwargs))


@job(name=ASYNC_JOB_NAME)
async def run_async_task(spec: dict[str, Any]) -> Any:
    """Run one ``async def`` django task on the worker's event loop, as djqueue's own async
    jobs run: awaiting, it holds no thread. Its start and end (Redis reads, the signals, whose
    receivers may use the ORM) run in Django's thread for sync code (``sync_to_async``)."""
    result, backend_class, args = await sync_to_async(_begin)(spec)
    value = await result.task.func(*args, **result.kwargs)
    return await sync_to_async(_succeeded)(result, backend_class, value)
