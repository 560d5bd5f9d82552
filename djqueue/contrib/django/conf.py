"""The ``DJQUEUE`` setting: one dict, checked in one place.

Keys that name a core setting (``REDIS_URL``, ``QUEUES``, ``CONCURRENCY``, ...) go to
`djqueue.configure`; the Django app's own (``ENQUEUE_ON_COMMIT``, ``DISCOVER``, ...) are the
integration settings of `djqueue.setting_table`, which checks both. A typo is an error rather
than a silently ignored key, because a misspelt ``CONCURRENCY`` would otherwise run with the
default.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings as django_settings

from djqueue import setting_table
from djqueue.config import Settings, hide_password
from djqueue.errors import ConfigurationError

#: The Django app's own keys and their defaults.
APP_DEFAULTS: dict[str, Any] = setting_table.check_integration({}, setting_table.DJANGO)


def raw() -> dict[str, Any]:
    """``settings.DJQUEUE`` as given (empty when unset), its ``REDIS_URL`` made a
    `SecretURL` so that the DEBUG page's list of settings shows no password."""
    value = getattr(django_settings, "DJQUEUE", {})
    if not isinstance(value, dict):
        raise ConfigurationError("DJQUEUE", f"must be a dict, got {type(value).__name__}")
    hide_password(value, "REDIS_URL")
    return value


def validate(values: dict[str, Any]) -> Settings:
    """Build the core settings from ``values``; `ConfigurationError` names the bad key."""
    setting_table.check_keys(values, setting_table.DJANGO)
    setting_table.check_integration(values, setting_table.DJANGO)
    return Settings.build(framework=values)


def option(name: str) -> Any:
    """One of the Django app's own settings (`APP_DEFAULTS`), read when needed."""
    return raw().get(name, APP_DEFAULTS[name])
