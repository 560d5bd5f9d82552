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

from djqueue import config, unwired
from djqueue.client import Client, client_for
from djqueue.config import Settings

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


#: How an app is set up with the extension, as every message that misses it says.
SET_UP = "call DjQueue(app), or djq.init_app(app) in its factory"


def fallback() -> Settings | None:
    """djqueue's fallback resolver, asked when no app context answered and
    ``djqueue.configure()`` was never called: what Flask shows of its apps, for the rule of
    `djqueue.unwired.which` (the only app's settings, no opinion when the extension is not in
    use, else `ConfigurationError` saying what to do)."""
    return unwired.which(_wiring())


def _wiring() -> unwired.Wiring[Settings] | None:
    from .extension import DjQueue

    apps = live_apps()
    if len(apps) > 1:
        gc.collect()  # apps made and dropped (a test's, a factory's trial run) do not count
        apps = live_apps()
    if not (apps or DjQueue.made):
        return None  # a plain program that imports the extension but never uses it
    here = current_app.name if has_app_context() else None  # resolve() did not answer for it
    wired = []
    for app in apps:
        found = state_of(app)
        if found is not None:
            wired.append((app.name, found.configured))
    return unwired.Wiring(
        "app",
        SET_UP,
        unwired=f"the Flask app {here!r}" if here is not None else None,
        wired=wired,
        outside="push inside `with app.app_context():` (create the app first, app = "
        "create_app(); a thread you start: pass it the app)",
    )


config.add_resolver(resolve)
config.add_resolver(fallback, fallback=True)
