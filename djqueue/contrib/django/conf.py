"""The ``DJQUEUE`` setting: one dict, checked in one place.

Keys that name a core setting (``REDIS_URL``, ``QUEUES``, ``CONCURRENCY``, ...) go to
`djqueue.configure`; the keys below belong to the Django app. A typo is an error rather than a
silently ignored key, because a misspelt ``CONCURRENCY`` would otherwise run with the default.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from django.conf import settings as django_settings

from djqueue.config import Settings, hide_password
from djqueue.errors import ConfigurationError

#: The Django app's own keys and their defaults.
APP_DEFAULTS: dict[str, Any] = {
    # Pushes inside transaction.atomic() wait for the outermost commit; "outbox" writes them
    # to the outbox table in the transaction instead (pushed after the commit, or relayed).
    "ENQUEUE_ON_COMMIT": True,
    # Workers relay the outbox; None: when ENQUEUE_ON_COMMIT is True or "outbox" (a push that
    # meets Redis down at commit is kept in the outbox table in either mode).
    "OUTBOX_RELAY": None,
    # Seconds a new outbox row is left to the process that wrote it before a relay takes it.
    "OUTBOX_GRACE": 10.0,
    # The header a request id is read from (and written back to the response).
    "REQUEST_ID_HEADER": "X-Request-ID",
    # Module names imported from every installed app at start-up.
    "DISCOVER": ("jobs",),
    # Context keys that travel with jobs besides request_id, user_id and language.
    "CONTEXT_KEYS": (),
}

CORE_KEYS = frozenset(f.name.upper() for f in dataclasses.fields(Settings) if f.name != "extra")


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
    for key in values:
        if not isinstance(key, str) or (key not in CORE_KEYS and key not in APP_DEFAULTS):
            if isinstance(key, str) and key.upper() in CORE_KEYS | set(APP_DEFAULTS):
                raise ConfigurationError(
                    key,
                    f"DJQUEUE keys are upper case, as Django's settings are: write {key.upper()!r}",
                )
            known = ", ".join(sorted(CORE_KEYS | set(APP_DEFAULTS)))
            raise ConfigurationError(str(key), f"unknown DJQUEUE setting (known: {known})")
    if values.get("ENQUEUE_ON_COMMIT", True) not in (True, False, "outbox"):
        raise ConfigurationError("ENQUEUE_ON_COMMIT", 'must be True, False or "outbox"')
    if values.get("OUTBOX_RELAY") not in (None, True, False):
        raise ConfigurationError("OUTBOX_RELAY", "must be True, False or None")
    grace = values.get("OUTBOX_GRACE", 10.0)
    if isinstance(grace, bool) or not isinstance(grace, (int, float)) or not grace >= 0:
        raise ConfigurationError("OUTBOX_GRACE", "must be a number of seconds, 0 or more")
    header = values.get("REQUEST_ID_HEADER", "X-Request-ID")
    if not isinstance(header, str) or not header:
        raise ConfigurationError("REQUEST_ID_HEADER", "must be a header name")
    discover = values.get("DISCOVER", ("jobs",))
    if isinstance(discover, str) or not all(isinstance(m, str) for m in discover):
        raise ConfigurationError("DISCOVER", "must be a list of module names, e.g. ['jobs']")
    keys = values.get("CONTEXT_KEYS", ())
    if isinstance(keys, str) or not all(isinstance(k, str) and k for k in keys):
        raise ConfigurationError("CONTEXT_KEYS", "must be a list of key names, e.g. ['tenant']")
    return Settings.build(framework=values)


def option(name: str) -> Any:
    """One of the Django app's own settings (`APP_DEFAULTS`), read when needed."""
    return raw().get(name, APP_DEFAULTS[name])
