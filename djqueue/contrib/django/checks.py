"""System checks: ``manage.py check`` names a bad ``DJQUEUE`` key, and warns when Redis does not
answer (a warning, not an error: a web process may start before Redis does)."""

from __future__ import annotations

from typing import Any

from django.conf import settings as django_settings
from django.core import checks

from djqueue.config import Settings
from djqueue.connection import CONNECTION_ERRORS, make_redis
from djqueue.errors import ConfigurationError

from . import conf


@checks.register("djqueue")
def check_settings(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    try:
        settings = conf.validate(conf.raw())
    except ConfigurationError as exc:
        return [
            checks.Error(
                f"DJQUEUE[{exc.setting.upper()!r}]: {str(exc).partition(': ')[2]}",
                hint="See docs/django.md for the keys DJQUEUE takes.",
                obj="settings.DJQUEUE",
                id="djqueue.E001",
            )
        ]
    return _check_queues(settings) + _check_redis(settings)


def used_queues() -> dict[str, str]:
    """Queue name -> what sends jobs there: the registered jobs' ``queue`` option, the
    ``django.tasks`` queues of djqueue backends, and the default queue."""
    from djqueue import get_settings, registry

    from .apps import BACKEND_PATH

    used = {get_settings().default_queue: "the default queue"}
    for name in registry.names():
        queue = getattr(registry.get(name), "job_options", {}).get("queue")
        if isinstance(queue, str):
            used.setdefault(queue, f"job {name}")
    tasks: Any = getattr(django_settings, "TASKS", {}) or {}
    for alias, spec in tasks.items():
        if isinstance(spec, dict) and spec.get("BACKEND") == BACKEND_PATH:
            for queue in spec.get("QUEUES") or ["default"]:
                used.setdefault(queue, f"TASKS[{alias!r}]")
    return used


def _check_queues(settings: Settings) -> list[checks.CheckMessage]:
    """A queue jobs go to that no worker started with these settings listens to: its jobs would
    wait for ever, silently."""
    listened = {name for name, _ in settings.queues}
    return [
        checks.Warning(
            f"queue {queue!r} ({source}) is not in DJQUEUE['QUEUES'] {sorted(listened)}: "
            f"a worker started with these settings never runs its jobs",
            hint=f"Add it to DJQUEUE['QUEUES'], or start a worker with -q {queue} (then "
            f"silence this with SILENCED_SYSTEM_CHECKS = ['djqueue.W002']).",
            obj="settings.DJQUEUE",
            id="djqueue.W002",
        )
        for queue, source in sorted(used_queues().items())
        if queue not in listened
    ]


def _check_redis(settings: Settings) -> list[checks.CheckMessage]:
    client = make_redis(settings.replace(connect_timeout=1.0, socket_timeout=1.0))
    try:
        client.ping()
    except CONNECTION_ERRORS as exc:
        return [
            checks.Warning(
                f"Redis at {settings.safe_redis_url} is unreachable: {exc}",
                hint="Start Redis or set DJQUEUE['REDIS_URL']; jobs cannot be pushed until then.",
                obj="settings.DJQUEUE",
                id="djqueue.W001",
            )
        ]
    finally:
        client.close()
    return []
