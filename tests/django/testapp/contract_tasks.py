"""Tasks for the port of Django's own ``tests/tasks`` cases (test_tasks_django_contract.py):
the kinds of task those cases enqueue, written for djqueue's backend. Failing ones take
``retry=0`` so their first failure is final, as in Django's immediate backend."""

from __future__ import annotations

from djqueue.contrib.django.tasks_framework import task


@task
def noop(*args: object, **kwargs: object) -> None:
    return None


@task
async def noop_async(*args: object, **kwargs: object) -> None:
    return None


@task
def meaning() -> int:
    return 42


@task(retry=0)
def fails_with_value_error() -> None:
    raise ValueError("this task failed on purpose")


@task(retry=0)
def fails_with_system_exit() -> None:
    raise SystemExit("this task exited on purpose")


@task(retry=0)
def fails_with_a_nested_exception() -> None:
    raise ValueError(ValueError("the inner error"))


@task(retry=0)
def returns_what_json_cannot_hold() -> object:
    return {1, 2}


@task(takes_context=True)
def own_id(context) -> str:  # type: ignore[no-untyped-def]
    return context.task_result.id


@task(takes_context=True)
def first_attempt(context, value: int) -> bool:  # type: ignore[no-untyped-def]
    return context.attempt == 1 and context.task_result.args == [value]
