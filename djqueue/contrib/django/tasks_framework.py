"""Django's Tasks framework, wherever it comes from: ``django.tasks`` on Django 6, the
``django-tasks`` backport on Django 5.2. The backend, its helpers and the tests import it from
here, so the choice between the two is made in one place (the backport spells
``InvalidTask`` ``InvalidTaskError``)."""

from __future__ import annotations

try:
    from django.tasks import default_task_backend, signals, task, task_backends
    from django.tasks.backends.base import BaseTaskBackend
    from django.tasks.base import Task, TaskContext, TaskError, TaskResult, TaskResultStatus
    from django.tasks.exceptions import InvalidTask, TaskResultDoesNotExist, TaskResultMismatch
    from django.tasks.signals import task_enqueued, task_finished, task_started
except ImportError:  # Django < 6.0: the django-tasks backport
    from django_tasks import default_task_backend, signals, task, task_backends
    from django_tasks.backends.base import BaseTaskBackend
    from django_tasks.base import Task, TaskContext, TaskError, TaskResult, TaskResultStatus
    from django_tasks.exceptions import InvalidTaskError as InvalidTask
    from django_tasks.exceptions import TaskResultDoesNotExist, TaskResultMismatch
    from django_tasks.signals import task_enqueued, task_finished, task_started

__all__ = [
    "BaseTaskBackend",
    "InvalidTask",
    "Task",
    "TaskContext",
    "TaskError",
    "TaskResult",
    "TaskResultDoesNotExist",
    "TaskResultMismatch",
    "TaskResultStatus",
    "default_task_backend",
    "signals",
    "task",
    "task_backends",
    "task_enqueued",
    "task_finished",
    "task_started",
]
