"""Enqueue on commit: in an app that uses DjQueue, a push made while a SQLAlchemy session of
this thread is in a transaction is written when that session commits, and not at all if it
rolls back its writes (as the Django app does with ``transaction.atomic``); if Redis is down
then, the job is kept in the outbox table where it exists.

A client middleware, last in the chain: the rest of the chain (and any middleware that would
stop the push) runs at call time, only the write waits, and the caller gets the jid at once.
``.set(on_commit=False)`` or ``DJQUEUE_ENQUEUE_ON_COMMIT = False`` writes at once; the option
is taken out of the payload here, so it never reaches Redis. Outside an app that uses DjQueue
the middleware does nothing at all. ``DJQUEUE_ENQUEUE_ON_COMMIT = "outbox"`` or
``.set(outbox=True)`` inserts the job as a row of the outbox table through the session instead
(`flask_djqueue.outbox`): pushed after the commit, relayed by workers if that push failed.
`flask_djqueue.sessions` knows which sessions are in a transaction and how it ends.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import sessions
from .state import current_state


class EnqueueOnCommit:
    def __call__(
        self, job: str, payload: dict[str, Any], queue: str, call_next: Callable[[], Any]
    ) -> Any:
        state = current_state()
        if state is None:  # not in an app of ours: not ours to decide (Django's, perhaps)
            return call_next()
        on_commit = payload.pop("on_commit", None)
        use_outbox = payload.pop("outbox", None)
        if on_commit is None:
            on_commit = state.options.enqueue_on_commit
        if use_outbox is None:
            use_outbox = on_commit == "outbox"
        if not on_commit and not use_outbox:
            return call_next()
        pending = sessions.in_transaction()
        if not pending:
            return call_next()
        if use_outbox:
            from . import outbox

            outbox.write(pending[0], payload, call_next, state)
        else:
            sessions.hold(call_next, pending, payload)
        return payload
