"""The jobs live in Redis: the unmanaged models below exist for the admin. The one table is
the optional transactional outbox (`OutboxJob`).

`Job` carries djqueue's permissions: ``djqueue.view_job`` to see the pages, ``change_job`` to
retry, run, kill, quiet and stop, ``delete_job`` to delete jobs and clear queues. The other
models are the admin's entries for each page (its index and sidebar list models) and carry no
permissions of their own. ``managed = False``: no migration creates a table for any of these
page models.
"""

from __future__ import annotations

from django.db import models


class Job(models.Model):
    class Meta:
        managed = False
        default_permissions = ("view", "change", "delete")
        verbose_name = "job"


class _Page(models.Model):
    class Meta:
        abstract = True
        managed = False
        default_permissions = ()


class Dashboard(_Page):
    class Meta(_Page.Meta):
        verbose_name = verbose_name_plural = "dashboard"


class Queue(_Page):
    class Meta(_Page.Meta):
        verbose_name, verbose_name_plural = "queue", "queues"


class ScheduledJob(_Page):
    class Meta(_Page.Meta):
        verbose_name, verbose_name_plural = "scheduled job", "scheduled"


class RetryJob(_Page):
    class Meta(_Page.Meta):
        verbose_name, verbose_name_plural = "retry", "retries"


class DeadJob(_Page):
    class Meta(_Page.Meta):
        verbose_name, verbose_name_plural = "dead job", "dead"


class Busy(_Page):
    class Meta(_Page.Meta):
        verbose_name = verbose_name_plural = "busy"


class Metrics(_Page):
    class Meta(_Page.Meta):
        verbose_name = verbose_name_plural = "metrics"


class Limits(_Page):
    class Meta(_Page.Meta):
        verbose_name = verbose_name_plural = "limits"


class PeriodicJob(_Page):
    class Meta(_Page.Meta):
        verbose_name, verbose_name_plural = "periodic job", "periodic"


class OutboxJob(models.Model):
    """A job written in the same transaction as the data it belongs to (the transactional
    outbox, ``ENQUEUE_ON_COMMIT: "outbox"``), until it is pushed to Redis.

    The only table djqueue creates (migration 0003). ``payload`` is the job's JSON as it will
    be pushed; ``run_at`` its scheduled time, if any; ``created_at`` the writing host's clock
    (epoch seconds), which keeps relays off a row for a short grace period.
    """

    jid = models.CharField(max_length=64)
    payload = models.TextField()
    run_at = models.FloatField(null=True, blank=True)
    created_at = models.FloatField(db_index=True)

    class Meta:
        db_table = "djqueue_outbox"
        default_permissions = ()
        verbose_name = "outbox job"
