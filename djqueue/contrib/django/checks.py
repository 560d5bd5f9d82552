"""System checks: ``manage.py check`` names a bad ``DJQUEUE`` key, and warns when Redis does not
answer (a warning, not an error: a web process may start before Redis does)."""

from __future__ import annotations

from typing import Any

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
    return _check_redis(settings)


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
