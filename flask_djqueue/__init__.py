"""Flask integration: ``DjQueue(app)`` (or ``init_app`` in a factory) sets djqueue up per app.

- Settings come from the app's ``DJQUEUE_*`` config keys and stay with the app
  (``app.extensions["djqueue"]``): a push from an app goes to that app's Redis and namespace.
  An unknown or bad key fails at ``init_app``, naming it.
- ``flask djqueue worker`` runs the worker for the app, with ``djqueue worker``'s flags; every
  job, ``retries_exhausted`` hook and signal receiver runs in the app's context.
- A push made while a SQLAlchemy session has uncommitted writes waits for its commit and is
  dropped on rollback; the jid is returned at once.
- Jobs pushed in a request carry its request id and what ``@djq.job_context`` returns.
- ``DJQUEUE_TESTING = "fake"`` or ``"inline"``: the app's own test mode.

docs/flask.md has the whole story.
"""

from __future__ import annotations

from . import worker as _worker  # noqa: F401  (answers the worker's worker_preparing signal)
from .appcontext import AppContext
from .extension import DjQueue
from .request_context import RequestContext, StampRequestContext
from .state import AppState
from .testing import TestingMode
from .transaction import EnqueueOnCommit

__all__ = [
    "AppContext",
    "AppState",
    "DjQueue",
    "EnqueueOnCommit",
    "RequestContext",
    "StampRequestContext",
    "TestingMode",
]
