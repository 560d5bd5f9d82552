"""``@task(retry=0, retention=60, ...)``: djqueue's job options per ``django.tasks`` task.

Django 6.1 passes the keyword arguments ``@task`` does not know to the backend's
``task_class``; `DjQueueTask` takes djqueue's job options there (``retry``, ``retry_for``,
``retry_queue``, ``backtrace``, ``dead``, ``tags``, ``retention``, ``time_limit``,
``unique_for``, ``unique_until``, ``expires_in``), checked when the task is defined, as
``@job`` checks them, and written into each push of the task. The queue stays Django's
``queue_name``.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from djqueue.job_options import PAYLOAD_OPTIONS, check_options

from .tasks_framework import Task

#: The job options a task takes: all of a job's but ``queue`` (Django's ``queue_name``).
TASK_OPTIONS = tuple(name for name in PAYLOAD_OPTIONS if name != "queue")


@dataclass(frozen=True, slots=True, kw_only=True)
class DjQueueTask(Task):
    """A task with djqueue job options; None: not given (the backend's ``OPTIONS`` apply)."""

    retry: Any = None
    retry_for: Any = None
    retry_queue: Any = None
    backtrace: Any = None
    dead: Any = None
    tags: Any = None
    retention: Any = None
    time_limit: Any = None
    unique_for: Any = None
    unique_until: Any = None
    expires_in: Any = None

    @property
    def job_options(self) -> dict[str, Any]:
        """The options given, checked and in their payload form (seconds for durations); a
        bad one raises ValueError naming it."""
        given = {name: getattr(self, name) for name in TASK_OPTIONS}
        return check_options({name: value for name, value in given.items() if value is not None})


# A job option added to PAYLOAD_OPTIONS needs its field here too.
if missing := set(TASK_OPTIONS) - {f.name for f in fields(DjQueueTask)}:
    raise RuntimeError(f"DjQueueTask has no field for the job options {sorted(missing)}")
