"""Middleware chains, one for the client (around a push) and one for the server (around a run).

A middleware is a class whose instances are called as::

    class StampTenant:
        def __init__(self, tenant_header="X-Tenant"):        # arguments given to add()
            self.header = tenant_header

        def __call__(self, job, payload, queue, call_next):
            payload["tenant"] = current_tenant()
            return call_next()

Client middleware gets the job's registered name as ``job``; it may change ``payload`` in
place, and stops the push by returning without calling ``call_next`` (the push then returns
None). Server middleware gets the job object (the `Job` instance, or the function's handle);
``call_next()`` runs the rest of the chain and the job, and raises what the job raised.

As in Sidekiq, an entry added as a class is instantiated for every invocation, with the
arguments given to `Chain.add`, so a middleware may keep per-job state on ``self``. A plain
function or an already-built object can be added too and is called as it is.

A middleware may also be written as a generator that yields where the job runs, without
``call_next`` (`djqueue.pipeline`): the one shape that wraps a thread-run job and an ``async
def`` job alike, on the event loop, with no thread of its own::

        def __call__(self, job, payload, queue):
            with tenant(payload.get("tenant")):
                yield

A ``call_next`` middleware wraps ``async def`` jobs through an ``acall`` coroutine method when
it has one, else from a thread of its own (`djqueue.pipeline.Wrapper`).
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable, Iterator
from typing import Any

from . import pipeline


class _Entry:
    __slots__ = ("klass", "args", "kwargs", "hook")

    def __init__(self, klass: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        if not callable(klass):
            raise TypeError(f"middleware must be a class or a callable, got {klass!r}")
        if (args or kwargs) and not isinstance(klass, type):
            raise TypeError("constructor arguments need a middleware class, not an instance")
        self.klass = klass
        self.args = args
        self.kwargs = kwargs
        call = klass.__call__ if isinstance(klass, type) else klass
        if not (inspect.isfunction(call) or inspect.ismethod(call)):
            call = type(call).__call__
        #: Written once as a generator (``yield`` where the job runs), not with ``call_next``.
        self.hook = inspect.isgeneratorfunction(call)

    def make(self) -> Callable[..., Any]:
        if isinstance(self.klass, type):
            return self.klass(*self.args, **self.kwargs)
        return self.klass

    def step(self) -> Any:
        middleware = self.make()
        return middleware if self.hook else pipeline.Wrapper(middleware)


class Chain:
    """An ordered list of middleware; copy-on-write, so it may change while jobs run."""

    def __init__(self) -> None:
        self._entries: tuple[_Entry, ...] = ()
        self._lock = threading.Lock()

    def __iter__(self) -> Iterator[Any]:
        return (entry.klass for entry in self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, klass: object) -> bool:
        return any(entry.klass is klass for entry in self._entries)

    def exists(self, klass: object) -> bool:
        return klass in self

    def add(self, klass: Any, *args: Any, **kwargs: Any) -> None:
        """Append ``klass``; if it is already there, it moves to the end with the new arguments
        (as in Sidekiq)."""
        with self._lock:
            entries = [e for e in self._entries if e.klass is not klass]
            entries.append(_Entry(klass, args, kwargs))
            self._entries = tuple(entries)

    def prepend(self, klass: Any, *args: Any, **kwargs: Any) -> None:
        with self._lock:
            entries = [e for e in self._entries if e.klass is not klass]
            self._entries = (_Entry(klass, args, kwargs), *entries)

    def insert_before(self, old: Any, klass: Any, *args: Any, **kwargs: Any) -> None:
        self._insert(old, klass, args, kwargs, offset=0)

    def insert_after(self, old: Any, klass: Any, *args: Any, **kwargs: Any) -> None:
        self._insert(old, klass, args, kwargs, offset=1)

    def _insert(
        self, old: Any, klass: Any, args: tuple[Any, ...], kwargs: dict[str, Any], offset: int
    ) -> None:
        with self._lock:
            new = _Entry(klass, args, kwargs)
            entries = [e for e in self._entries if e.klass is not klass]
            index = next((i for i, e in enumerate(entries) if e.klass is old), None)
            if index is None:
                raise ValueError(f"{old!r} is not in this middleware chain")
            entries.insert(index + offset, new)
            self._entries = tuple(entries)

    def remove(self, klass: Any) -> None:
        with self._lock:
            self._entries = tuple(e for e in self._entries if e.klass is not klass)

    def clear(self) -> None:
        with self._lock:
            self._entries = ()

    def copy(self) -> Chain:
        chain = Chain()
        chain._entries = self._entries
        return chain

    def steps(self) -> list[Any]:
        """This invocation's entries as `djqueue.pipeline` steps: a middleware whose call is a
        generator function is a step of its own (written once for threads and the event
        loop); one of the ``call_next`` shape is a `djqueue.pipeline.Wrapper`."""
        return [entry.step() for entry in self._entries]

    def invoke(
        self, job: Any, payload: dict[str, Any], queue: str, final: Callable[[], Any]
    ) -> Any:
        """Run every middleware around ``final`` and return what the outermost one returned."""
        if not self._entries:
            return final()
        return pipeline.run(self.steps(), (job, payload, queue), final)


#: Middleware run around every push from this process.
client_middleware = Chain()
#: Middleware run around every job this process runs (worker, ``perform_now``, inline testing).
server_middleware = Chain()
