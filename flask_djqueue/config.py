"""An app's ``DJQUEUE_*`` keys, read and checked in one place when ``init_app`` runs.

Keys that name a core setting (``DJQUEUE_REDIS_URL``, ``DJQUEUE_QUEUES``, ...) build the app's
`djqueue.Settings`, over the environment and the defaults; the extension's own keys are the
integration settings of `djqueue.setting_table`, which checks both. Any other ``DJQUEUE_`` key
is an error naming it, since a misspelt ``DJQUEUE_CONCURENCY`` would otherwise run with the
default, silently.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
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
    #: The zone the dashboard shows times in (``DJQUEUE_TIME_ZONE``, checked).
    time_zone: str = "UTC"
    #: The bearer token a Prometheus scrape sends (``DJQUEUE_METRICS_TOKEN``); None: none.
    metrics_token: str | None = field(default=None, repr=False)

    @property
    def outbox_chosen(self) -> bool:
        """Whether the app chose the outbox (``DJQUEUE_ENQUEUE_ON_COMMIT = "outbox"``, or
        ``DJQUEUE_OUTBOX_RELAY = True``): SQLAlchemy is then required, and the outbox's
        figures are always shown (otherwise only while rows wait)."""
        if self.outbox_relay is not None:
            return self.outbox_relay
        return self.enqueue_on_commit == "outbox"

    @property
    def relays_outbox(self) -> bool:
        """Whether this app's workers relay its outbox, and its dashboard and ``flask djqueue
        stats`` show it: when chosen, and by default whenever pushes wait for commits and
        SQLAlchemy is installed (a push that meets Redis down at commit is kept in the outbox
        table where it exists). Only then is `flask_djqueue.outbox`, and with it SQLAlchemy,
        imported (the ``flask`` extra does not install SQLAlchemy)."""
        if self.outbox_relay is not None or self.enqueue_on_commit == "outbox":
            return self.outbox_chosen
        return bool(self.enqueue_on_commit) and _sqlalchemy_installed()


#: An import of SQLAlchemy failed in this process (`_sqlalchemy_installed`).
_sqlalchemy_absent = False
_NOT_IMPORTED = object()


def _sqlalchemy_installed() -> bool:
    """Imported, not merely found: asked only where the outbox would be used next, which is
    on every dashboard page. The answer follows ``sys.modules`` (a test hides the package by
    putting None there, which makes an import fail at once); a failed import is tried once,
    since it searches every folder of the path each time."""
    global _sqlalchemy_absent
    found = sys.modules.get("sqlalchemy", _NOT_IMPORTED)
    if found is not _NOT_IMPORTED:
        return found is not None
    if _sqlalchemy_absent:
        return False
    try:
        import sqlalchemy  # noqa: F401
    except ImportError:
        _sqlalchemy_absent = True
        return False
    return True


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
    options = AppOptions(
        found["ENQUEUE_ON_COMMIT"],
        found["REQUEST_ID_HEADER"],
        found["CONTEXT_KEYS"],
        found["TESTING"],
        found["OUTBOX_RELAY"],
        float(found["OUTBOX_GRACE"]),
        found["TIME_ZONE"],
        found["METRICS_TOKEN"],
    )
    if options.outbox_chosen and not _sqlalchemy_installed():
        key = "ENQUEUE_ON_COMMIT" if options.enqueue_on_commit == "outbox" else "OUTBOX_RELAY"
        raise ConfigurationError(
            PREFIX + key,
            "the outbox is a SQLAlchemy table, and SQLAlchemy is not installed: "
            "pip install sqlalchemy (or flask-sqlalchemy)",
        )
    return options
