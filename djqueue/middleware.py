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

``async def`` jobs run on the worker's event loop; server middleware wraps them through an
``acall`` coroutine method when it has one (`Chain.ainvoke`)::

        async def acall(self, job, payload, queue, call_next):
            payload["tenant"] = current_tenant()
            return await call_next()
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Awaitable, Callable, Iterator
from typing import Any


class _Entry:
    __slots__ = ("klass", "args", "kwargs")

    def __init__(self, klass: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        if not callable(klass):
            raise TypeError(f"middleware must be a class or a callable, got {klass!r}")
        if (args or kwargs) and not isinstance(klass, type):
            raise TypeError("constructor arguments need a middleware class, not an instance")
        self.klass = klass
        self.args = args
        self.kwargs = kwargs

    def make(self) -> Callable[..., Any]:
        if isinstance(self.klass, type):
            return self.klass(*self.args, **self.kwargs)
        return self.klass


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

    def invoke(
        self, job: Any, payload: dict[str, Any], queue: str, final: Callable[[], Any]
    ) -> Any:
        """Run every middleware around ``final`` and return what the outermost one returned."""
        entries = self._entries
        if not entries:
            return final()
        instances = [entry.make() for entry in entries]
        last = len(instances)

        def step(index: int) -> Any:
            if index == last:
                return final()
            return instances[index](job, payload, queue, lambda: step(index + 1))

        return step(0)

    async def ainvoke(
        self,
        job: Any,
        payload: dict[str, Any],
        queue: str,
        final: Callable[[], Awaitable[Any]],
    ) -> Any:
        """`invoke` for an ``async def`` job, on the worker's event loop.

        A middleware with an ``acall`` coroutine method is awaited: ``await call_next()``
        runs the rest. One without (a plain ``__call__``) runs in a thread of its own, where
        ``call_next()`` blocks until the rest has run on the loop, so it keeps its meaning at
        the price of a thread per running job: give middleware an ``acall`` to keep async jobs
        thread-free (the Django and Flask integrations' do).
        """
        entries = self._entries
        if not entries:
            return await final()
        instances = [entry.make() for entry in entries]
        last = len(instances)

        async def step(index: int) -> Any:
            if index == last:
                return await final()
            middleware = instances[index]
            acall = getattr(middleware, "acall", None)
            if acall is not None:
                return await acall(job, payload, queue, lambda: step(index + 1))
            return await _in_thread(middleware, job, payload, queue, lambda: step(index + 1))

        return await step(0)


async def _in_thread(
    middleware: Callable[..., Any],
    job: Any,
    payload: dict[str, Any],
    queue: str,
    rest: Callable[[], Awaitable[Any]],
) -> Any:
    """Run a synchronous middleware in a thread; its ``call_next`` runs ``rest`` on the loop,
    with the context variables the middleware set (a tenant, a locale) carried over."""
    loop = asyncio.get_running_loop()

    def call_next() -> Any:
        context = contextvars.copy_context()
        return asyncio.run_coroutine_threadsafe(_within(context, rest), loop).result()

    return await asyncio.to_thread(middleware, job, payload, queue, call_next)


async def _within(context: contextvars.Context, rest: Callable[[], Awaitable[Any]]) -> Any:
    for variable, value in context.items():
        variable.set(value)
    return await rest()


#: Middleware run around every push from this process.
client_middleware = Chain()
#: Middleware run around every job this process runs (worker, ``perform_now``, inline testing).
server_middleware = Chain()
