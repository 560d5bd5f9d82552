"""An app's ``DJQUEUE_*`` keys, read and checked in one place when ``init_app`` runs.

Keys that name a core setting (``DJQUEUE_REDIS_URL``, ``DJQUEUE_QUEUES``, ...) build the app's
`djqueue.Settings`, over the environment and the defaults; the keys in `APP_DEFAULTS` belong to
the extension. Any other ``DJQUEUE_`` key is an error naming it, since a misspelt
``DJQUEUE_CONCURENCY`` would otherwise run with the default, silently.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from djqueue.config import Settings
from djqueue.errors import ConfigurationError

PREFIX = "DJQUEUE_"

#: The extension's own keys (without the prefix) and their defaults.
APP_DEFAULTS: dict[str, Any] = {
    # Pushes made while a SQLAlchemy session is in a transaction wait for its commit;
    # "outbox" writes them to the outbox table in the transaction instead.
    "ENQUEUE_ON_COMMIT": True,
    # Workers relay the outbox; None: when ENQUEUE_ON_COMMIT is True or "outbox" (a push that
    # meets Redis down at commit is kept in the outbox table in either mode).
    "OUTBOX_RELAY": None,
    # Seconds a new outbox row is left to the process that wrote it before a relay takes it.
    "OUTBOX_GRACE": 10.0,
    # The header a request id is read from (and written back to the response).
    "REQUEST_ID_HEADER": "X-Request-ID",
    # Context keys that travel with jobs besides request_id, user_id and language.
    "CONTEXT_KEYS": (),
    # "fake" records this app's pushes, "inline" runs them; None writes to Redis.
    "TESTING": None,
}

CORE_KEYS = frozenset(f.name.upper() for f in dataclasses.fields(Settings) if f.name != "extra")
TESTING_MODES = ("fake", "inline")


@dataclass(frozen=True)
class AppOptions:
    """The extension's own settings for one app."""

    enqueue_on_commit: bool | str = True
    request_id_header: str = "X-Request-ID"
    context_keys: tuple[str, ...] = ()
    testing: str | None = None
    outbox_relay: bool | None = None
    outbox_grace: float = 10.0

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


@functools.cache
def _sqlalchemy_installed() -> bool:
    """Imported, not merely found: asked only where the outbox would be used next."""
    try:
        import sqlalchemy  # noqa: F401
    except ImportError:
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
    known = CORE_KEYS | set(APP_DEFAULTS)
    for name in values:
        if name not in known:
            near = difflib.get_close_matches(name, known, n=1)
            hint = f"did you mean {PREFIX}{near[0]}?" if near else "see docs/flask.md"
            raise ConfigurationError(PREFIX + name, f"unknown djqueue setting ({hint})")
    options = _options(values)
    try:
        settings = Settings.build(framework={k: v for k, v in values.items() if k in CORE_KEYS})
    except ConfigurationError as exc:
        message = str(exc).removeprefix(f"{exc.setting}: ")
        raise ConfigurationError(PREFIX + exc.setting.upper(), message) from None
    return settings, options


def _options(values: Mapping[str, Any]) -> AppOptions:
    on_commit = values.get("ENQUEUE_ON_COMMIT", True)
    if on_commit not in (True, False, "outbox"):
        raise ConfigurationError(PREFIX + "ENQUEUE_ON_COMMIT", 'must be True, False or "outbox"')
    relay = values.get("OUTBOX_RELAY")
    if relay not in (None, True, False):
        raise ConfigurationError(PREFIX + "OUTBOX_RELAY", "must be True, False or None")
    grace = values.get("OUTBOX_GRACE", 10.0)
    if isinstance(grace, bool) or not isinstance(grace, (int, float)) or not grace >= 0:
        raise ConfigurationError(PREFIX + "OUTBOX_GRACE", "must be a number of seconds, 0 or more")
    header = values.get("REQUEST_ID_HEADER", "X-Request-ID")
    if not isinstance(header, str) or not header:
        raise ConfigurationError(PREFIX + "REQUEST_ID_HEADER", "must be a header name")
    keys = values.get("CONTEXT_KEYS", ())
    if isinstance(keys, str) or not all(isinstance(k, str) and k for k in keys):
        raise ConfigurationError(
            PREFIX + "CONTEXT_KEYS", "must be a list of key names, e.g. ['tenant']"
        )
    testing = values.get("TESTING") or None
    if testing is not None and testing not in TESTING_MODES:
        raise ConfigurationError(
            PREFIX + "TESTING", f"must be 'fake', 'inline' or None, got {testing!r}"
        )
    options = AppOptions(on_commit, header, tuple(keys), testing, relay, float(grace))
    if options.outbox_chosen:
        try:
            import sqlalchemy  # noqa: F401
        except ImportError:
            key = "ENQUEUE_ON_COMMIT" if on_commit == "outbox" else "OUTBOX_RELAY"
            raise ConfigurationError(
                PREFIX + key,
                "the outbox is a SQLAlchemy table, and SQLAlchemy is not installed: "
                "pip install sqlalchemy (or flask-sqlalchemy)",
            ) from None
    return options
