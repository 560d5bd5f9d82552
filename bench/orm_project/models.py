"""The one table the benchmark's jobs read and update."""

from __future__ import annotations

from django.db import models


class Counter(models.Model):
    """A row per job: ``hits`` proves each row was updated exactly once, ``touched_at`` (set by
    PostgreSQL's clock in the update itself) gives the run's start and end without the job
    writing anywhere else."""

    hits = models.IntegerField(default=0)
    touched_at = models.DateTimeField(null=True)
