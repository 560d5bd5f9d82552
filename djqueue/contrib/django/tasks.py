"""A backend for Django's Tasks framework (``django.tasks``; the ``django-tasks`` backport on
Django 5.2) that enqueues into djqueue, so ``@task`` functions run in ``runworker``::

    TASKS = {"default": {"BACKEND": "djqueue.contrib.django.tasks.DjQueueBackend",
                         "QUEUES": ["default", "emails"]}}

A task travels as a job of one registered wrapper, ``djqueue.contrib.django.run_task``, whose
single argument names the task and carries its arguments and keyword arguments. The worker runs
a task only if this process defined it (every `Task` using this backend is recorded when it is
created), which is the allow-list: nothing is imported from a string found in Redis. Task
modules are found by discovery: the apps' ``tasks`` modules are imported at start-up when this
backend is configured.

Flags: ``supports_defer`` (``run_after`` becomes a scheduled job), ``supports_async_task``.
``supports_priority``: a task with a priority goes to a band of its queue
(`djqueue.contrib.django.task_priority`), fetched before (above 0) or after (below 0) it.
``supports_get_result``: every task is pushed with a
``retention`` (``OPTIONS: {"RESULT_RETENTION": seconds}``, default a day; None turns it off), so
djqueue tracks it (`djqueue.lifecycle`) and ``get_result`` / ``aget_result`` / ``refresh()`` read
its status hash: one HGETALL. The queue's retry policy applies (``OPTIONS: {"RETRY": 5}``;
default 25 tries). A task's own djqueue job options (``@task(retry=0, retention=60)``, Django
6.1) are taken by ``task_class``, `djqueue.contrib.django.task_options.DjQueueTask`, and win
over the backend's.
"""

from __future__ import annotations

import datetime as dt
import json
import threading
from inspect import iscoroutinefunction
from typing import Any

from django.utils import timezone

from djqueue import lifecycle
from djqueue.client import get_client
from djqueue.errors import UnknownJob
from djqueue.payload import new_jid, now, to_seconds
from djqueue.signals import job_dead, job_enqueued

from . import task_priority
from .task_options import DjQueueTask
from .tasks_framework import (
    BaseTaskBackend,
    Task,
    TaskError,
    TaskResult,
    TaskResultDoesNotExist,
    TaskResultStatus,
    task_backends,
    task_enqueued,
    task_finished,
)

try:
    from django.utils.json import normalize_json
except ImportError:  # Django < 6.0

    def normalize_json(obj: Any) -> Any:
        import json

        return json.loads(json.dumps(obj))


JOB_NAME = "djqueue.contrib.django.run_task"
#: The wrapper of ``async def`` tasks, run on the worker's event loop.
ASYNC_JOB_NAME = "djqueue.contrib.django.run_async_task"
#: Both wrappers' names.
JOB_NAMES = (JOB_NAME, ASYNC_JOB_NAME)
#: Seconds a finished task's status and return value are kept, unless OPTIONS say otherwise.
RESULT_RETENTION = 24 * 3600

#: A djqueue state as Django's TaskResult tells it: a job waiting to run (again) is READY,
#: one that died, was cancelled or expired (taken after its deadline, not run) FAILED.
STATUSES = {
    "scheduled": TaskResultStatus.READY,
    "pending": TaskResultStatus.READY,
    "retry": TaskResultStatus.READY,
    "active": TaskResultStatus.RUNNING,
    "completed": TaskResultStatus.SUCCESSFUL,
    "dead": TaskResultStatus.FAILED,
    "cancelled": TaskResultStatus.FAILED,
    "expired": TaskResultStatus.FAILED,
}

_lock = threading.Lock()
_tasks: dict[str, Task] = {}


def register_task(task: Task) -> None:
    """Record a task this process defined; only recorded tasks run in the worker."""
    with _lock:
        _tasks.setdefault(task.module_path, task)


def lookup_task(path: str) -> Task:
    try:
        return _tasks[path]
    except KeyError:
        raise UnknownJob(
            f"no django task {path!r} is defined in this process; define it in an installed "
            f"app's tasks or jobs module (imported at start-up) or import it with runworker -r"
        ) from None


class DjQueueBackend(BaseTaskBackend):
    supports_defer = True
    supports_async_task = True
    supports_get_result = True
    supports_priority = True

    task_class = DjQueueTask

    def validate_task(self, task: Task) -> None:
        super().validate_task(task)
        if isinstance(task, DjQueueTask):
            task.job_options  # noqa: B018 - a bad option fails where the task is defined
        register_task(task)

    def check(self, **kwargs: Any) -> list[Any]:
        """Without the app, DJQUEUE is never read (the backend would push to the default
        Redis) and no worker command exists: say so. A ``RESULT_RETENTION`` of None (or 0)
        tracks no task, so every ``get_result`` fails: say so too; a value that is not a
        number of seconds is an error."""
        from django.apps import apps
        from django.core import checks

        found: list[Any] = []
        if not apps.is_installed("djqueue.contrib.django"):
            found.append(
                checks.Warning(
                    "the djqueue tasks backend is configured but the djqueue app is not "
                    "installed: DJQUEUE is not read, jobs go to the default Redis, and there "
                    "is no runworker",
                    hint="Add 'djqueue' to INSTALLED_APPS.",
                    obj="settings.TASKS",
                    id="djqueue.W003",
                )
            )
        retention = self.options.get("RESULT_RETENTION", RESULT_RETENTION)
        where = f"TASKS[{self.alias!r}]['OPTIONS']['RESULT_RETENTION']"
        if retention is not None and (
            not isinstance(retention, int) or isinstance(retention, bool) or retention < 0
        ):
            found.append(
                checks.Error(
                    f"{where} is {retention!r}: it must be a number of seconds (an integer "
                    f">= 0) or None",
                    obj="settings.TASKS",
                    id="djqueue.E002",
                )
            )
        elif not retention:
            found.append(
                checks.Warning(
                    f"{where} is {retention!r}: tasks are not tracked, so get_result, "
                    f"aget_result and TaskResult.refresh() always raise TaskResultDoesNotExist "
                    f"although the backend says supports_get_result",
                    hint="Give RESULT_RETENTION a number of seconds (the default is a day), or "
                    "silence this with SILENCED_SYSTEM_CHECKS = ['djqueue.W006'] if no code "
                    "reads results.",
                    obj="settings.TASKS",
                    id="djqueue.W006",
                )
            )
        return found

    def enqueue(self, task: Task, args: Any, kwargs: Any) -> TaskResult:
        result, item = self._job(task, args, kwargs)
        return _pushed(result, item, get_client().push(item))

    async def aenqueue(self, task: Task, args: Any, kwargs: Any) -> TaskResult:
        """`enqueue` from async code, holding no thread: the same job, through the same
        client middleware, written on the event loop's asyncio connection
        (`djqueue.client.Client.apush`). A push from a coroutine run by ``async_to_sync`` for
        sync code, which may be inside ``atomic()``, is made in that code's thread and waits
        for its commit (`djqueue.contrib.django.transaction.in_calling_thread`)."""
        result, item = self._job(task, args, kwargs)
        return _pushed(result, item, await get_client().apush(item))

    def _job(self, task: Task, args: Any, kwargs: Any) -> tuple[TaskResult, dict[str, Any]]:
        """The READY TaskResult and the job item of one enqueue, sync or async."""
        self.validate_task(task)
        result = _result(task, new_jid(), self.alias, list(args), dict(kwargs))
        item: dict[str, Any] = {
            "class": ASYNC_JOB_NAME if iscoroutinefunction(task.func) else JOB_NAME,
            "args": [
                {
                    "task": task.module_path,
                    "args": result.args,
                    "kwargs": result.kwargs,
                    "backend": self.alias,
                }
            ],
            "queue": task_priority.band(task.queue_name, task.priority),
            "jid": result.id,
            # "wrapped" names the task as ActiveJob's wrapper does; "display_class" is what
            # Sidekiq's Web UI (and djqueue's pages) show as the job's name for any class.
            "wrapped": task.module_path,
            "display_class": task.module_path,
            "retry": self.options.get("RETRY", True),
        }
        retention = self.options.get("RESULT_RETENTION", RESULT_RETENTION)
        if retention:
            item["retention"] = retention
        if isinstance(task, DjQueueTask):
            item.update(task.job_options)  # the task's own options win over the backend's
        if task.priority:
            item["args"][0]["priority"] = task.priority
        if task.run_after is not None:
            item["at"] = task.run_after.timestamp()
            # Kept in the task's own argument too: "at" leaves the payload when it is due.
            item["args"][0]["run_after"] = item["at"]
        # The push's created_at, which `get_result` reads as enqueued_at: the two agree.
        item["created_at"] = now()
        return result, item

    def get_result(self, result_id: str) -> TaskResult:
        """The task's TaskResult as its djqueue status tells it: status, times, the workers of
        each attempt, the last error, the return value. A task whose status has expired (its
        retention passed), that was pushed without one, or was never enqueued does not exist.
        """
        return self._told(result_id, lifecycle.status(str(result_id)))

    async def aget_result(self, result_id: str) -> TaskResult:
        """`get_result` from async code: the same status read awaited on the event loop's
        asyncio connection (`djqueue.lifecycle.astatus`), the same decoding, no thread."""
        return self._told(result_id, await lifecycle.astatus(str(result_id)))

    def _told(self, result_id: str, st: lifecycle.JobStatus) -> TaskResult:
        """The TaskResult a status tells: the one decoder of `get_result` and `aget_result`."""
        try:
            payload = json.loads(st.payload_json or "")
            spec = _spec(payload)
            task = _as_enqueued(_known_task(spec["task"]), payload, spec, self)
        except (ValueError, TypeError, UnknownJob):
            raise TaskResultDoesNotExist(result_id) from None
        errors = _errors(st)
        result = _result(
            task,
            st.jid,
            self.alias,
            spec.get("args", []),
            spec.get("kwargs", {}),
            status=STATUSES.get(st.state, TaskResultStatus.READY),
            # Django's enqueued_at is when enqueue() ran: the payload's created_at (djqueue's
            # enqueued_at moves on each push to a queue: when a deferred task is due, a retry).
            enqueued_at=_when(payload.get("created_at")) or _when(st.enqueued_at),
            started_at=_when(st.started_at),
            finished_at=_when(st.finished_at),
            last_attempted_at=_when(st.started_at),
            errors=errors,
            worker_ids=[""] * max(0, min(st.attempts, MAX_ATTEMPTS) - len(st.workers))
            + list(st.workers),
        )
        if st.state == "completed":
            object.__setattr__(result, "_return_value", st.value)
        return result


def _pushed(result: TaskResult, item: dict[str, Any], jid: str | None) -> TaskResult:
    """``result`` with ``enqueued_at`` set when the push went ahead (or is held for the
    commit): the job's ``created_at``, the time of enqueue, which `get_result` reports too,
    so a result refreshed before the task runs is unchanged (Django's contract)."""
    if jid is not None:
        object.__setattr__(result, "enqueued_at", _when(item["created_at"]))
    return result


def _errors(st: lifecycle.JobStatus) -> list[TaskError]:
    """One TaskError per failed attempt, oldest first, from the status's error history (the
    last `djqueue.retry_policy.ERROR_HISTORY` attempts). A status written before the history
    existed has only its last error's class and message."""
    if st.errors:
        return [
            TaskError(
                exception_class_path=_class_path(str(entry.get("class", ""))),
                traceback=str(entry.get("traceback", "")),
            )
            for entry in st.errors
        ]
    if not st.error_class:
        return []
    traceback_text = f"{st.error_class}: {st.error_message or ''}"
    return [TaskError(exception_class_path=_class_path(st.error_class), traceback=traceback_text)]


def _class_path(name: str) -> str:
    """djqueue (as Sidekiq's UI) names a built-in exception bare, ``ValueError``; Django's
    ``TaskError.exception_class`` imports the path, so it gets ``builtins.ValueError``."""
    return name if "." in name or not name else f"builtins.{name}"


def _result(
    task: Task, jid: str, alias: str, args: list[Any], kwargs: dict[str, Any], **fields: Any
) -> TaskResult:
    values: dict[str, Any] = {
        "status": TaskResultStatus.READY,
        "enqueued_at": None,
        "started_at": None,
        "finished_at": None,
        "last_attempted_at": None,
        "errors": [],
        "worker_ids": [],
    }
    values.update(fields)
    return TaskResult(task=task, id=jid, args=args, kwargs=kwargs, backend=alias, **values)


def _when(value: Any) -> dt.datetime | None:
    seconds = to_seconds(value)
    if seconds is None:
        return None
    try:
        return dt.datetime.fromtimestamp(seconds, tz=dt.UTC)
    except (OverflowError, OSError, ValueError):  # a number from Redis out of any date's range
        return None


#: The most attempts a TaskResult reports (``retry_count`` comes from Redis: a hostile or
#: broken payload must not make the worker build a list of 10^8 worker ids).
MAX_ATTEMPTS = 1000


def _spec(payload: dict[str, Any]) -> dict[str, Any]:
    """The wrapper job's one argument, checked for shape before anything is done with it."""
    args = payload.get("args")
    spec = args[0] if isinstance(args, list) and len(args) == 1 else None
    if (
        not isinstance(spec, dict)
        or not isinstance(spec.get("task"), str)
        or not isinstance(spec.get("args", []), list)
        or not isinstance(spec.get("kwargs", {}), dict)
        or not isinstance(spec.get("backend", "default"), str)
    ):
        raise TypeError(
            f"{JOB_NAME} takes one argument, {{'task': path, 'args': [...], 'kwargs': {{...}}, "
            f"'backend': alias}}"
        )
    return spec


def _known_task(path: str) -> Task:
    """The task at ``path`` for reading a result: one this process defined, else the module
    named by the path is imported when it belongs to an installed app (a web process that
    never imported the module defining a task still reads its results). The worker does not
    do this: it runs only tasks it defined itself (`lookup_task`)."""
    try:
        return lookup_task(path)
    except UnknownJob:
        from django.apps import apps
        from django.utils.module_loading import import_string

        module = path.rpartition(".")[0]
        if not module or apps.get_containing_app_config(module) is None:
            raise
        try:
            found = import_string(path)
        except ImportError:
            raise UnknownJob(f"no django task {path!r}: its module does not define it") from None
        if not isinstance(found, Task):
            raise UnknownJob(f"{path!r} is not a django task") from None
        return found


def _as_enqueued(task: Task, payload: dict[str, Any], spec: dict[str, Any], backend: Any) -> Task:
    """The task as it was enqueued: ``.using(queue_name=..., run_after=...)`` made at enqueue
    is in the payload (the queue) and the task's argument (``run_after``)."""
    queue = task_priority.base(str(payload.get("queue")))
    if task.queue_name != queue and queue in backend.queues:
        task = task.using(queue_name=queue)
    priority = spec.get("priority")
    if isinstance(priority, int) and not isinstance(priority, bool) and -100 <= priority <= 100:
        task = task.using(priority=priority)
    run_after = _when(spec.get("run_after"))
    if run_after is not None and backend.supports_defer:
        task = task.using(run_after=run_after)
    return task


def _from_payload(payload: dict[str, Any], **fields: Any) -> tuple[TaskResult, type]:
    """The TaskResult a payload describes, and the backend class (the signals' sender)."""
    spec = _spec(payload)
    backend = task_backends[spec.get("backend", "default")]
    task = _as_enqueued(lookup_task(spec["task"]), payload, spec, backend)
    fields.setdefault("enqueued_at", _when(payload.get("enqueued_at")))
    args, kwargs = spec.get("args", []), spec.get("kwargs", {})
    result = _result(task, payload["jid"], backend.alias, args, kwargs, **fields)
    return result, type(backend)


def _sent_to_redis(sender: Any, payload: dict[str, Any], **kwargs: Any) -> None:
    """``task_enqueued`` goes out when the job is written, so after the commit when held."""
    if sender not in JOB_NAMES:
        return
    result, backend_class = _from_payload(payload)
    task_enqueued.send(backend_class, task_result=result)


job_enqueued.connect(_sent_to_redis, weak=False)


def _ended(sender: Any, payload: dict[str, Any] | None, exception: Any, **kwargs: Any) -> None:
    """``task_finished(FAILED)`` once a task has failed for good (buried in the dead set, or
    dropped: ``retry: false``), as its status says FAILED from then on. An attempt that will be
    retried sends nothing final: the task stays READY, and Django's receivers would otherwise
    count every retry as a failure."""
    if sender not in JOB_NAMES or payload is None:
        return
    try:
        result, backend_class = _from_payload(
            payload,
            status=TaskResultStatus.FAILED,
            started_at=_when(payload.get("retried_at") or payload.get("failed_at")),
            finished_at=timezone.now(),
            last_attempted_at=_when(payload.get("retried_at") or payload.get("failed_at")),
        )
    except (TypeError, UnknownJob):
        return  # not a task this process runs: the wrapper refused it, nothing was started
    result.errors.extend(_errors(lifecycle.status(result.id)))
    task_finished.send(backend_class, task_result=result)


job_dead.connect(_ended, weak=False)


# The wrapper jobs, registered when this module is imported (by discovery, in the worker).
from . import task_runner  # noqa: E402, F401
