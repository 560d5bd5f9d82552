"""The jobs live in Redis: the unmanaged models below exist for the admin. The one table is
the optional transactional outbox (`OutboxJob`).

`Job` carries djqueue's permissions: ``djqueue.view_job`` to see the pages, ``change_job`` to
retry, run, kill, quiet and stop, ``delete_job`` to delete jobs and clear queues. The other
models are the admin's entries for each page (its index and sidebar list models) and carry no
permissions of their own. ``managed = False``: no migration creates a table for any of these
page models.

Their names, as the admin's index and sidebar show them, come from djqueue's one catalog
(`djqueue.web.i18n`), read lazily in the request's language (``get_language()``), so the
admin's section and the pages it links to read in the same words.
"""

from __future__ import annotations

from django.db import models
from django.utils.functional import lazy
from django.utils.translation import get_language

from djqueue.web import i18n


def _in_language(message: str) -> str:
    with i18n.active(get_language()):
        return i18n.gettext(message)


#: ``gettext_lazy`` over djqueue's catalog; ``python -m djqueue.web.i18n extract`` reads it.
_ = lazy(_in_language, str)


class Job(models.Model):
    class Meta:
        managed = False
        default_permissions = ("view", "change", "delete")
        verbose_name = _("job")


class _Page(models.Model):
    class Meta:
        abstract = True
        managed = False
        default_permissions = ()


class Dashboard(_Page):
    class Meta(_Page.Meta):
        verbose_name = verbose_name_plural = _("dashboard")


class Queue(_Page):
    class Meta(_Page.Meta):
        verbose_name, verbose_name_plural = _("queue"), _("queues")


class ScheduledJob(_Page):
    class Meta(_Page.Meta):
        verbose_name, verbose_name_plural = _("scheduled job"), _("scheduled")


class RetryJob(_Page):
    class Meta(_Page.Meta):
        verbose_name, verbose_name_plural = _("retry"), _("retries")


class DeadJob(_Page):
    class Meta(_Page.Meta):
        verbose_name, verbose_name_plural = _("dead job"), _("dead")


class Batch(_Page):
    class Meta(_Page.Meta):
        verbose_name, verbose_name_plural = _("batch"), _("batches")


class Busy(_Page):
    class Meta(_Page.Meta):
        verbose_name = verbose_name_plural = _("busy")


class Metrics(_Page):
    class Meta(_Page.Meta):
        verbose_name = verbose_name_plural = _("metrics")


class Limits(_Page):
    class Meta(_Page.Meta):
        verbose_name = verbose_name_plural = _("limits")


class PeriodicJob(_Page):
    class Meta(_Page.Meta):
        verbose_name, verbose_name_plural = _("periodic job"), _("periodic")


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
        verbose_name = _("outbox job")
