"""The job's body, shared by the three systems so that only the worker around it differs."""

from __future__ import annotations

from django.db.models import F
from django.db.models.functions import Now

from .models import Counter


def touch(pk: int) -> int:
    """Read the row, then update it, as an app's job would (load a record, change it)."""
    counter = Counter.objects.get(pk=pk)
    Counter.objects.filter(pk=counter.pk).update(hits=F("hits") + 1, touched_at=Now())
    return counter.pk
