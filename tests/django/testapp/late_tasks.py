"""A task module nothing imports at start-up (discovery imports ``tasks`` modules only)."""

from __future__ import annotations

from djqueue.contrib.django.tasks_framework import task


@task
def late(value: int) -> int:
    return value * 2
