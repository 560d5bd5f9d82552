"""The extension object: ``DjQueue(app)``, or ``djq = DjQueue()`` and ``djq.init_app(app)`` in
an app factory.

``init_app`` reads the app's ``DJQUEUE_*`` keys (a bad or unknown one raises, naming it), keeps
the app's settings in ``app.extensions["djqueue"]`` (`flask_djqueue.state.AppState`), adds the
request hooks and the ``flask djqueue`` commands to the app, and puts the extension's middleware
in djqueue's chains. The middleware is process-wide, as every djqueue middleware is, but holds
no app: each call looks up the current app, so one extension serves any number of apps, and
an app of one test leaves nothing behind for the next.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from flask import Flask

import djqueue

from . import config, request_context, sessions, state
from .appcontext import AppContext
from .cli import group
from .request_context import RequestContext, StampRequestContext
from .testing import TestingMode
from .transaction import EnqueueOnCommit

ContextHook = Callable[[], Mapping[str, Any] | None]
H = TypeVar("H", bound=ContextHook)


class DjQueue:
    """djqueue for a Flask app::

        djq = DjQueue()

        def create_app():
            app = Flask(__name__)
            app.config.from_prefixed_env()      # FLASK_DJQUEUE_REDIS_URL=... and so on
            djq.init_app(app)
            return app

    One object serves any number of apps; each app's state is in ``app.extensions["djqueue"]``.
    """

    #: Whether any DjQueue was made in this process (a worker without an app then warns).
    made = False

    def __init__(self, app: Flask | None = None, outbox_engine: Any = None) -> None:
        self._context_hooks: list[ContextHook] = []
        DjQueue.made = True
        if app is not None:
            self.init_app(app, outbox_engine)

    def init_app(self, app: Flask, outbox_engine: Any = None) -> None:
        """Set djqueue up for ``app``; `djqueue.ConfigurationError` names a bad key.

        ``outbox_engine``: the SQLAlchemy engine (or a function returning it, called in the
        app context) whose ``djqueue_outbox`` table workers relay, when it is not
        Flask-SQLAlchemy's default engine (`flask_djqueue.outbox`)."""
        settings, options = config.read(app.config)
        state.register(app, state.AppState(self, settings, options, outbox_engine))
        request_context.install(app)
        if "djqueue" not in app.cli.commands:
            app.cli.add_command(group)
        if options.enqueue_on_commit:
            sessions.track()
        install_middleware()

    def job_context(self, hook: H) -> H:
        """Decorator: ``hook()`` returns values (a dict) that travel with every job pushed
        during a request, such as the user's id; called at push time, in the request::

            @djq.job_context
            def who():
                return {"user_id": current_user.get_id()}

        Only ``request_id``, ``user_id``, ``language`` and the names in
        ``DJQUEUE_CONTEXT_KEYS`` travel, with string, number or boolean values.
        """
        self._context_hooks.append(hook)
        return hook

    def context_values(self) -> dict[str, Any]:
        """What the hooks return now, merged (later hooks win)."""
        values: dict[str, Any] = {}
        for hook in self._context_hooks:
            found = hook()
            if found is None:
                continue
            if not isinstance(found, Mapping):
                name = getattr(hook, "__qualname__", repr(hook))
                raise TypeError(f"job_context hook {name} must return a dict or None")
            values.update(found)
        return values


def install_middleware() -> None:
    """Put the extension's middleware in djqueue's chains, in its places (idempotent: ``add``
    and ``prepend`` move an entry, never double it; called again when a worker starts, so
    middleware added since does not slip outside the app context).

    Server: the app context outermost, then the request context, so every other middleware
    runs inside both. Client: stamping first, so other middleware sees the context; then, last,
    the on-commit hold and the app's test mode, so only the write waits.
    """
    djqueue.server_middleware.prepend(RequestContext)
    djqueue.server_middleware.prepend(AppContext)
    djqueue.client_middleware.prepend(StampRequestContext)
    djqueue.client_middleware.add(EnqueueOnCommit)
    djqueue.client_middleware.add(TestingMode)
