"""What ``DjQueue.init_app`` keeps per app, in ``app.extensions["djqueue"]``, and how a push
finds it.

Each app has its own settings (its ``DJQUEUE_*`` keys), so two apps in one process push to
their own Redis and namespace: djqueue's core asks `resolve` for the settings of the current
context (`djqueue.config.add_resolver`), and that is ``current_app``'s. Outside any app context
(a thread, a script), the process-wide settings apply when the program called
``djqueue.configure()``; otherwise `fallback` answers: the only app set up with DjQueue, or an
error saying what to do when the extension is in use but no app, several apps, or an app
without DjQueue leave the push without settings. Nothing here holds on to an app between
tests: the middleware looks the app up on every call.
"""

from __future__ import annotations

import gc
import weakref
from typing import TYPE_CHECKING, Any

from flask import Flask, current_app, has_app_context

from djqueue import config, testing
from djqueue.client import Client, client_for
from djqueue.config import Settings
from djqueue.errors import ConfigurationError

from .config import AppOptions

if TYPE_CHECKING:
    from .extension import DjQueue

KEY = "djqueue"

#: Every app set up in this process (for a worker started without ``--app``).
_apps: weakref.WeakSet[Flask] = weakref.WeakSet()


class AppState:
    """``app.extensions["djqueue"]``: the app's settings, client and options."""

    def __init__(
        self,
        extension: DjQueue,
        configured: Settings,
        options: AppOptions,
        outbox_engine: Any = None,
    ) -> None:
        self.extension = extension
        #: The engine of the outbox table (or a function returning it), if not
        #: Flask-SQLAlchemy's default one.
        self.outbox_engine = outbox_engine
        #: The settings built from the app's config.
        self.configured = configured
        self.options = options

    @property
    def settings(self) -> Settings:
        """The settings this app's pushes use: its own, or in a worker process the worker's
        (its flags over the app's settings, `djqueue.config.pin`)."""
        return config.pinned() or self.configured

    @property
    def client(self) -> Client:
        """The client that writes this app's jobs (shared by apps with equal settings)."""
        return client_for(self.settings)

    def __repr__(self) -> str:
        return (
            f"<djqueue state {self.settings.safe_redis_url} namespace={self.settings.namespace!r}>"
        )


def register(app: Flask, state: AppState) -> None:
    app.extensions[KEY] = state
    _apps.add(app)


def state_of(app: Flask) -> AppState | None:
    found = app.extensions.get(KEY)
    return found if isinstance(found, AppState) else None


def current_state() -> AppState | None:
    """The state of ``current_app``; None outside an app context or in an app without
    DjQueue."""
    if not has_app_context():
        return None
    return state_of(current_app)


def live_apps() -> list[Flask]:
    """The apps set up with DjQueue in this process that still exist."""
    return list(_apps)


def resolve() -> Settings | None:
    """djqueue's settings resolver: ``current_app``'s settings, or None (no opinion)."""
    state = current_state()
    return state.configured if state is not None else None


def fallback() -> Settings | None:
    """djqueue's fallback resolver, asked when no app context answered and
    ``djqueue.configure()`` was never called: the only app's settings; None when the extension
    is not in use (a plain program that imports it) or a process-wide test mode holds every
    push; else `ConfigurationError` saying what to do, since the environment's or the default
    Redis is then one nobody chose for this push."""
    from .extension import DjQueue

    if testing.mode() != testing.DISABLED:
        return None  # djqueue.testing.fake() or inline(): the push reaches no Redis at all
    apps = live_apps()
    if len(apps) > 1:
        gc.collect()  # apps made and dropped (a test's, a factory's trial run) do not count
        apps = live_apps()
    if not (apps or DjQueue.made):
        return None
    if has_app_context():  # an app that resolve() did not answer for: no DjQueue
        raise ConfigurationError(
            "app",
            f"the Flask app {current_app.name!r} is not set up with DjQueue, so this push has no "
            "Redis to go to: call DjQueue(app), or djq.init_app(app) in its factory",
        )
    if len(apps) == 1:
        found = state_of(apps[0])
        return found.configured if found is not None else None
    if not apps:
        raise ConfigurationError(
            "app",
            "a push outside any Flask app: DjQueue() was made, but no app was set up with "
            "it (djq.init_app(app) not called yet), so the push has no Redis to go to. Create "
            "the app first (app = create_app()) and push inside `with app.app_context():`",
        )
    names = ", ".join(sorted(repr(app.name) for app in apps))
    raise ConfigurationError(
        "app",
        f"a push outside any Flask app context, with {len(apps)} apps set up with DjQueue "
        f"({names}): which app's Redis is meant is unknown. Push inside `with "
        "app.app_context():` (a thread you start: pass it the app), or call "
        "djqueue.configure(redis_url=...) for pushes made outside any app",
    )


config.add_resolver(resolve)
config.add_resolver(fallback, fallback=True)
