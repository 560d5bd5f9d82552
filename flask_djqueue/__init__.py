"""Flask integration: ``DjQueue(app)`` configures djqueue from the app's config.

Settings are read from ``app.config`` keys prefixed ``DJQUEUE_`` (``DJQUEUE_REDIS_URL``,
``DJQUEUE_NAMESPACE``, ``DJQUEUE_QUEUES``, ...), which sit between keyword arguments to
`djqueue.configure` and the environment in the precedence order. Jobs run inside the app's
application context, through a server middleware, so ``current_app`` and extensions bound to
the app work in a job as they do in a view.
"""

from __future__ import annotations

from typing import Any

from flask import Flask

import djqueue

PREFIX = "DJQUEUE_"


class AppContextMiddleware:
    """Server middleware: run each job inside ``app.app_context()``."""

    def __init__(self, app: Flask) -> None:
        self.app = app

    def __call__(self, job: Any, payload: dict[str, Any], queue: str, call_next: Any) -> Any:
        with self.app.app_context():
            return call_next()


class DjQueue:
    """The extension object, with the usual ``DjQueue(app)`` or ``init_app(app)`` patterns."""

    def __init__(self, app: Flask | None = None) -> None:
        self.app: Flask | None = None
        if app is not None:
            self.init_app(app)

    def init_app(self, app: Flask) -> None:
        framework = {
            key[len(PREFIX) :]: value for key, value in app.config.items() if key.startswith(PREFIX)
        }
        self.settings = djqueue.configure(framework=framework)
        djqueue.server_middleware.add(AppContextMiddleware, app)
        app.extensions["djqueue"] = self
        self.app = app


__all__ = ["AppContextMiddleware", "DjQueue"]
