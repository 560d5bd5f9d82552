"""django.tasks tasks, run through djqueue's backend."""

from __future__ import annotations

from djqueue.contrib.django.tasks_framework import task

from .jobs import record
from .models import Order


@task
def add_order(name: str, *, mark: bool = False) -> int:
    order = Order.objects.create(name=name, seen_by_job=mark)
    record("task", name=name, mark=mark, order_id=order.pk)
    return order.pk


@task(queue_name="tasks")
async def shout(text: str) -> str:
    record("async-task", text=text.upper())
    return text.upper()


@task(takes_context=True)
def with_context(context, value: int) -> None:  # type: ignore[no-untyped-def]
    record("context-task", attempt=context.attempt, id=context.task_result.id, value=value)


@task
def broken() -> None:
    raise RuntimeError("task failed on purpose")


@task(takes_context=True)
def flaky(context, failures: int) -> int:  # type: ignore[no-untyped-def]
    """Fails its first ``failures`` attempts, then returns the attempt that succeeded."""
    record("flaky", attempt=context.attempt, worker_ids=context.task_result.worker_ids)
    if context.attempt <= failures:
        raise ValueError(f"attempt {context.attempt} failed on purpose")
    return context.attempt


@task(retry=0, retention=60, tags=["billing"])
def once(value: int) -> int:
    """djqueue's job options given to @task: no retries, a minute's retention."""
    raise RuntimeError(f"{value} failed on purpose, once")


@task
async def meet(count: int) -> bool:
    """Waits (awaiting, up to 10 s) until ``count`` of these have started: True when they all
    did, which only happens when they run at once on one event loop."""
    import asyncio

    from djqueue.connection import get_redis

    get_redis().incr("djqueue-tests:met")
    for _ in range(200):
        if int(get_redis().get("djqueue-tests:met") or 0) >= count:
            return True
        await asyncio.sleep(0.05)
    return False


@task
def echo(text: str, small: float, big: float) -> list:
    """Returns its arguments: a task whose push is compared byte for byte."""
    return [text, small, big]


@task
async def nap(seconds: float) -> int:
    """Awaits ``seconds``; returns how many naps had started when it woke (one at a time on
    threads, the first to wake would have seen at most as many as there are threads)."""
    import asyncio

    from djqueue.connection import get_redis

    get_redis().incr("djqueue-tests:naps")
    await asyncio.sleep(seconds)
    return int(get_redis().get("djqueue-tests:naps") or 0)
