"""The app config: where djqueue meets Django's start-up.

``ready()`` runs in every process that sets Django up (web server, ``runworker``, management
commands, tests), so the settings, job discovery and middleware are the same wherever a job is
pushed or run. A bad ``DJQUEUE`` setting does not stop Django from starting: ``manage.py
check`` (and ``runserver``/``migrate``, which run the checks) report it by name, ``runworker``
refuses to start, and a push raises it, rather than silently using another Redis.
"""

from __future__ import annotations

from typing import Any

from django.apps import AppConfig
from django.conf import settings as django_settings

import djqueue
from djqueue.errors import ConfigurationError

from . import conf

BACKEND_PATH = "djqueue.contrib.django.tasks.DjQueueBackend"


class DjQueueConfig(AppConfig):
    name = "djqueue.contrib.django"
    label = "djqueue"
    verbose_name = "djqueue"
    default_auto_field = "django.db.models.BigAutoField"

    #: The `ConfigurationError` found in DJQUEUE at start-up, if any.
    settings_error: ConfigurationError | None = None

    def ready(self) -> None:
        from . import checks  # noqa: F401  (registers the system checks)

        self.settings_error = configure()
        install_middleware()
        from .discovery import discover

        modules = list(conf.option("DISCOVER")) if self.settings_error is None else ["jobs"]
        if uses_task_backend():
            from . import tasks  # noqa: F401  (registers the task wrapper job)

            modules.append("tasks")
        discover(dict.fromkeys(modules))
        djqueue.signals.worker_preparing.connect(prepare_worker)
        from django.db.models.signals import post_migrate

        from .outbox import forget_missing_tables

        post_migrate.connect(forget_missing_tables, dispatch_uid="djqueue.outbox")


def prepare_worker(sender: Any, **kwargs: Any) -> None:
    """Receiver of ``worker_preparing``: a worker relays the outbox when it is in use
    (`djqueue.contrib.django.outbox.relay_enabled`). Only workers do: a web process that
    merely set Django up relays nothing."""
    from djqueue.outbox import DUTY
    from djqueue.worker import duties

    from .outbox import relay_duty, relay_enabled

    if relay_enabled():
        duties.add(DUTY, relay_duty())
    else:
        duties.remove(DUTY)


def configure() -> ConfigurationError | None:
    """Install ``settings.DJQUEUE`` as djqueue's settings; the error instead of raising it."""
    try:
        values = conf.raw()
        conf.validate(values)
    except ConfigurationError as exc:
        return exc
    djqueue.configure(framework=values)
    from djqueue import context

    context.allow(*values.get("CONTEXT_KEYS", ()))
    return None


def task_queues() -> dict[str, str]:
    """The queues djqueue ``TASKS`` backends send to, each with the alias that does
    (``["default"]`` for a backend without ``QUEUES``, as Django's default)."""
    tasks: Any = getattr(django_settings, "TASKS", {}) or {}
    found: dict[str, str] = {}
    for alias, spec in tasks.items():
        if isinstance(spec, dict) and spec.get("BACKEND") == BACKEND_PATH:
            for queue in spec.get("QUEUES") or ["default"]:
                found.setdefault(queue, alias)
    return found


def uses_task_backend() -> bool:
    return bool(task_queues())


class _RefuseBadSettings:
    """First client middleware: a push with a bad DJQUEUE setting raises its error."""

    def __call__(self, job: str, payload: dict[str, Any], queue: str, call_next: Any) -> Any:
        from django.apps import apps

        error = apps.get_app_config("djqueue").settings_error
        if error is not None:
            raise error
        return call_next()


def install_middleware() -> None:
    """Add the app's middleware to djqueue's chains (idempotent: ``add`` moves, never doubles).

    Client: refuse bad settings, stamp the request context, then hold the write until commit,
    last, so every other middleware still runs at call time; before an async push, the
    request's user is fetched with the async ORM (`stamping.user_ready`), and a push from a
    coroutine run for sync code is made in that code's thread (`in_calling_thread`).
    Server: database connections outermost, then the request context.
    """
    from djqueue import client

    from .server import DatabaseConnections, RequestContext
    from .stamping import StampRequestContext, user_ready
    from .transaction import EnqueueOnCommit, in_calling_thread

    djqueue.client_middleware.prepend(_RefuseBadSettings)
    if StampRequestContext not in djqueue.client_middleware:
        djqueue.client_middleware.insert_after(_RefuseBadSettings, StampRequestContext)
    if user_ready not in client.before_async_push:
        client.before_async_push.append(user_ready)
    client.in_calling_thread = in_calling_thread
    djqueue.client_middleware.add(EnqueueOnCommit)
    djqueue.server_middleware.prepend(DatabaseConnections)
    if RequestContext not in djqueue.server_middleware:
        djqueue.server_middleware.insert_after(DatabaseConnections, RequestContext)
