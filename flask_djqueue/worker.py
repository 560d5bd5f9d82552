"""The worker side: which app a worker process runs its jobs in.

djqueue's worker sends `djqueue.signals.worker_preparing` once it has imported its modules and
loaded its app, before it reads its settings. `prepare` answers it. The app is the one the
worker was given (``flask --app X djqueue worker``, ``djqueue worker --app X:create_app``), or
else the only app set up with DjQueue while the worker imported its modules (``-r wsgi``, a
module calling ``create_app()``). That app's context is pushed in the main thread (so the
worker reads the app's settings, under its flags, and ``worker_started`` receivers see
``current_app``) and entered around the whole of every job (`djqueue.worker.around`), so jobs,
``retries_exhausted`` hooks and signal receivers all run in it.

Before ``--processes N`` forks a worker process, `before_fork` empties the app's
Flask-SQLAlchemy connection pools, so no connection is shared across the fork.

A worker with a DjQueue but no app at all (``-r myapp.jobs``, which imports ``djq = DjQueue()``
but never calls the factory) would run every job outside any app context; it says so when it
starts. Several apps and no ``--app`` is an error, as djqueue
cannot guess which one is meant.
"""

from __future__ import annotations

import gc
import logging
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from flask import Flask, current_app, has_app_context

from djqueue import config, registry, signals
from djqueue.errors import ConfigurationError
from djqueue.worker import around

from .appcontext import job_context, set_worker_app
from .extension import DjQueue, install_middleware
from .state import live_apps, state_of

logger = logging.getLogger("flask_djqueue")

_entered: Callable[[dict[str, Any]], AbstractContextManager[Any]] | None = None


def prepare(sender: Any, **kwargs: Any) -> bool | None:
    """Receiver of ``worker_preparing``: make the worker's app ours; True when it is."""
    global _entered
    if sender is not None and not isinstance(sender, Flask):
        return None
    app = sender if sender is not None else _only_app()
    if app is None:
        if not DjQueue.made:  # flask_djqueue imported, but not used: not a Flask worker
            return None
        logger.warning(
            "no Flask app was set up with DjQueue in this worker, so jobs run outside any app "
            "context (current_app, db.session and the app's DJQUEUE_* settings are missing); "
            "start it with `flask --app MODULE djqueue worker` or "
            "`djqueue worker --app MODULE:create_app`"
        )
        # Without an app, the worker's settings are a plain worker's (its flags, the
        # environment), as the warning says: chosen, so no push of its asks for an app.
        config.configure()
        return None
    if state_of(app) is None:
        raise ConfigurationError(
            "app",
            f"the Flask app {app.name!r} is not set up with DjQueue: call DjQueue(app), or "
            "djq.init_app(app) in its factory",
        )
    set_worker_app(app)
    registry.set_imported_where(
        f"where the app {app.name!r} is made (its factory: `from . import jobs`), so that "
        "loading the app registers them"
    )
    if not (has_app_context() and current_app._get_current_object() is app):  # type: ignore[attr-defined]
        app.app_context().push()  # for the life of the worker, as `flask` commands have one
    if _entered is not None:
        around.remove(_entered)

    def entered(payload: dict[str, Any]) -> AbstractContextManager[None]:
        return job_context(app, payload)

    _entered = entered
    around.add(entered)
    install_middleware()
    _relay(app)
    return True


def _relay(app: Flask) -> None:
    """Relay the app's outbox in this worker when it is in use (a duty of the runtime)."""
    from djqueue.outbox import DUTY
    from djqueue.worker import duties

    found = state_of(app)
    if found is None:
        return
    if not found.options.relays_outbox:
        duties.remove(DUTY)
        return
    from .outbox import relay_duty  # SQLAlchemy: only for an app that uses the outbox

    duties.add(DUTY, relay_duty(app, found))


def _only_app() -> Flask | None:
    gc.collect()  # apps made and dropped while importing are not candidates
    apps = live_apps()
    if len(apps) > 1:
        names = ", ".join(sorted(repr(app.name) for app in apps))
        raise ConfigurationError(
            "app",
            f"{len(apps)} Flask apps are set up with DjQueue in this worker ({names}): name "
            "one with `djqueue worker --app MODULE:FACTORY` or `flask --app MODULE djqueue "
            "worker`",
        )
    return apps[0] if apps else None


def before_fork(sender: Any, **kwargs: Any) -> None:
    """Receiver of ``worker_forking`` (``--processes N``): empty Flask-SQLAlchemy's connection
    pools in the parent, which runs no jobs, so no pooled connection crosses a fork; each
    worker process opens its own."""
    if not has_app_context():
        return
    sqlalchemy = current_app.extensions.get("sqlalchemy")
    for engine in getattr(sqlalchemy, "engines", {}).values():
        engine.dispose()


signals.worker_preparing.connect(prepare)
signals.worker_forking.connect(before_fork)
