"""An app's ``DJQUEUE_*`` keys, read and checked in one place when ``init_app`` runs.

Keys that name a core setting (``DJQUEUE_REDIS_URL``, ``DJQUEUE_QUEUES``, ...) build the app's
`djqueue.Settings`, over the environment and the defaults; the extension's own keys are the
integration settings of `djqueue.setting_table`, which checks both. Any other ``DJQUEUE_`` key
is an error naming it, since a misspelt ``DJQUEUE_CONCURENCY`` would otherwise run with the
default, silently.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from djqueue import setting_table
from djqueue.config import Settings
from djqueue.errors import ConfigurationError

PREFIX = "DJQUEUE_"

#: The extension's own keys (without the prefix) and their defaults.
APP_DEFAULTS: dict[str, Any] = setting_table.check_integration({}, setting_table.FLASK)
CORE_KEYS = frozenset(s.key for s in setting_table.CORE)


@dataclass(frozen=True)
class AppOptions:
    """The extension's own settings for one app."""

    enqueue_on_commit: bool | str = True
    request_id_header: str = "X-Request-ID"
    context_keys: tuple[str, ...] = ()
    testing: str | None = None
    outbox_relay: bool | None = None
    outbox_grace: float = 10.0


def read(config: Mapping[str, Any]) -> tuple[Settings, AppOptions]:
    """The app's djqueue settings and options from its config; `ConfigurationError` names the
    first bad key as it is spelt in the config (``DJQUEUE_CONCURRENCY: must be ...``)."""
    values = {
        key[len(PREFIX) :]: value
        for key, value in config.items()
        if isinstance(key, str) and key.startswith(PREFIX)
    }
    setting_table.check_keys(values, setting_table.FLASK, PREFIX)
    options = _options(values)
    try:
        settings = Settings.build(framework={k: v for k, v in values.items() if k in CORE_KEYS})
    except ConfigurationError as exc:
        message = str(exc).removeprefix(f"{exc.setting}: ")
        raise ConfigurationError(PREFIX + exc.setting.upper(), message) from None
    return settings, options


def _options(values: Mapping[str, Any]) -> AppOptions:
    found = setting_table.check_integration(values, setting_table.FLASK, PREFIX)
    return AppOptions(
        found["ENQUEUE_ON_COMMIT"],
        found["REQUEST_ID_HEADER"],
        found["CONTEXT_KEYS"],
        found["TESTING"],
        found["OUTBOX_RELAY"],
        float(found["OUTBOX_GRACE"]),
    )
