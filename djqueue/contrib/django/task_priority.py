"""``django.tasks`` priorities as queues: a task with a priority above 0 goes to its queue's
sibling ``NAME:high``, one below 0 to ``NAME:low``, 0 to the queue itself. They stay plain
Sidekiq lists; ``runworker`` listens to a task queue's siblings around it (`with_bands`), so
with strict queue order (no weights) ``NAME:high`` is always fetched before ``NAME`` and
``NAME:low`` after it.

Three bands, not 201 lists: a worker tries each listened list on every fetch, so each band
costs every fetch a step. Django's −100..100 is honoured as its sign: 100 and 1 share a band,
where they run in the order they were pushed.
"""

from __future__ import annotations

from typing import Any

HIGH = ":high"
LOW = ":low"


def band(queue: str, priority: int) -> str:
    """The list a task of ``priority`` enqueued to ``queue`` is pushed to."""
    if priority > 0:
        return queue + HIGH
    if priority < 0:
        return queue + LOW
    return queue


def base(queue: str) -> str:
    """The queue a band belongs to (a queue that is no band is its own)."""
    for suffix in (HIGH, LOW):
        if queue.endswith(suffix):
            return queue[: -len(suffix)]
    return queue


def with_bands(queues: tuple[tuple[str, int], ...], task_queues: set[str]) -> list[str]:
    """``queues`` as ``-q`` values, each of ``task_queues`` between its bands with its weight
    (``NAME:high``, ``NAME``, ``NAME:low``); bands already listed are left where they are."""
    listed = {name for name, _ in queues}
    found: list[str] = []
    for name, weight in queues:
        group = [name]
        if name in task_queues:
            group = [b for b in (name + HIGH, name, name + LOW) if b == name or b not in listed]
        found += [f"{each},{weight}" if weight else each for each in group]
    return found


def listened(given: Any) -> Any:
    """The ``-q`` values ``runworker`` runs with: those given (or ``DJQUEUE['QUEUES']``), with
    the bands of the queues a djqueue ``TASKS`` backend sends to; unchanged without one."""
    from djqueue import get_settings
    from djqueue.setting_checks import parse_queues

    from .apps import task_queues

    tasks = set(task_queues())
    if not tasks:
        return given
    queues = parse_queues(given) if given else get_settings().queues
    return with_bands(queues, tasks)
