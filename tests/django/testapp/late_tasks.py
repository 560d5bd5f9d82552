"""A task module nothing imports at start-up (discovery imports ``tasks`` modules only)."""

from __future__ import annotations

try:
    from django.tasks import task
except ImportError:  # Django 5.2: the django-tasks backport
    from django_tasks import task  # type: ignore[no-redef]


@task
def late(value: int) -> int:
    return value * 2
