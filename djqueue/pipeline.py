"""One pipeline for running a job through steps, in a thread or on the worker's event loop.

A step is written once for both worlds. It is called with the job's arguments before the job
runs and returns a context manager (or a generator that yields once, or None when it has
nothing to do for this job); the job runs inside it, so the code before its ``yield`` is the
step's *before*, an ``except`` around the ``yield`` its *on failure*, the code after it its
*after*, and a step that catches the job's error without raising again settles it (the retry
step does). Sidekiq's nested ``dispatch`` blocks have this shape, and a ``with`` block means
the same around ``job()`` as around ``await job()``: that is why the shape serves a thread-run
job and an ``async def`` job with the same code::

    def timing(payload):
        started = time.perf_counter()
        try:
            yield
        finally:
            metrics.observe(payload["class"], time.perf_counter() - started)

`run` and `run_async` are the only place where the two worlds differ. On the event loop a
step's before and after run on the loop's thread, as quick as they are in a thread; a step
whose before or after blocks (waits for a lock, talks to a database through a thread-bound
connection) names an ``offload`` attribute, ``offload(function, *args) -> awaitable``, and its
before and after are awaited through it (``asyncio.to_thread``, asgiref's ``sync_to_async``).

A before may raise `Skip` to end the run there, quietly: the job does not run, the steps
already entered see no error, and the run returns None (the recovery guard buries a poison
job that way). A `Wrapper` is the older shape of server middleware, a callable given a
``call_next``; it nests the same way in a thread, and on the loop it runs through its
``acall`` coroutine method when it has one, else in a thread of its own (`Wrapper.around`).
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractContextManager
from functools import partial
from types import GeneratorType
from typing import Any

#: What a step returns for one job: a context manager, a generator yielding once, or None.
Entered = AbstractContextManager[Any] | Any | None
#: A step: called with the job's arguments before the job runs.
Step = Callable[..., Entered]


#: What ``next`` answers for a step's generator that has ended.
_DONE = object()


class Skip(Exception):  # noqa: N818 - a signal, not an error
    """Raised by a step's before: the job does not run, and the run returns None."""


class Wrapper:
    """A middleware of the ``call_next`` shape: ``middleware(*args, call_next)``."""

    __slots__ = ("middleware",)

    def __init__(self, middleware: Callable[..., Any]) -> None:
        self.middleware = middleware

    async def around(self, args: tuple[Any, ...], rest: Callable[[], Awaitable[Any]]) -> Any:
        """On the loop: through the middleware's ``acall`` when it has one; else in a thread,
        where ``call_next()`` blocks until the rest has run on the loop, with the context
        variables the middleware set (a tenant, a locale) carried over."""
        acall = getattr(self.middleware, "acall", None)
        if acall is not None:
            return await acall(*args, rest)
        loop = asyncio.get_running_loop()

        def call_next() -> Any:
            context = contextvars.copy_context()
            return asyncio.run_coroutine_threadsafe(_within(context, rest), loop).result()

        return await asyncio.to_thread(self.middleware, *args, call_next)


async def _within(context: contextvars.Context, rest: Callable[[], Awaitable[Any]]) -> Any:
    for variable, value in context.items():
        variable.set(value)
    return await rest()


def _enter(entered: Any) -> None:
    """A step's before: up to its generator's ``yield``, or its context manager's enter."""
    if type(entered) is GeneratorType:
        next(entered)
    else:
        entered.__enter__()


def _leave(entered: Any, error: BaseException | None) -> None:
    """A step's after, told the job's ``error``; returns when the step settled it (or there
    was none), raises what the step raised (the error itself, as a rule)."""
    if type(entered) is not GeneratorType:
        if error is None:
            entered.__exit__(None, None, None)
        elif not entered.__exit__(type(error), error, error.__traceback__):
            raise error
        return
    if error is None:
        if next(entered, _DONE) is _DONE:
            return
    else:
        try:
            entered.throw(error)
        except StopIteration:
            return
    raise RuntimeError(f"a step yielded more than once: {entered!r}")


def run(steps: Sequence[Step | Wrapper], args: tuple[Any, ...], job: Callable[[], Any]) -> Any:
    """Run ``job()`` inside ``steps`` (``steps[0]`` outermost) in this thread.

    A loop rather than nested calls, with `_enter` and `_leave` inlined for generators: this
    is the cost of every thread-run job, and each call counts on the GIL ten threads share.
    """
    if not steps:
        return job()
    entered: list[Any] = []
    value: Any = None
    error: BaseException | None = None
    try:
        for index, step in enumerate(steps):
            if type(step) is Wrapper:
                value = step.middleware(*args, partial(run, steps[index + 1 :], args, job))
                break
            done: Any = step(*args)  # type: ignore[operator]
            if done is not None:
                if type(done) is GeneratorType:
                    next(done)
                else:
                    done.__enter__()
                entered.append(done)
        else:
            value = job()
    except Skip:
        pass
    except BaseException as raised:
        error = raised
    while entered:
        done = entered.pop()
        if error is None and type(done) is GeneratorType:
            if next(done, _DONE) is not _DONE:
                raise RuntimeError(f"a step yielded more than once: {done!r}")
            continue
        try:
            _leave(done, error)
        except BaseException as raised:
            error = raised
        else:
            if error is not None:  # settled by this step: the run returns None
                error = value = None
    if error is not None:
        raise error
    return value


async def run_async(
    steps: Sequence[Step | Wrapper], args: tuple[Any, ...], job: Callable[[], Awaitable[Any]]
) -> Any:
    """`run` for an ``async def`` job, on the event loop."""
    return await _run_async(steps, 0, args, job)


async def _run_async(
    steps: Sequence[Step | Wrapper],
    index: int,
    args: tuple[Any, ...],
    job: Callable[[], Awaitable[Any]],
) -> Any:
    for position in range(index, len(steps)):
        step = steps[position]
        if isinstance(step, Wrapper):
            return await step.around(args, partial(_run_async, steps, position + 1, args, job))
        entered: Any = step(*args)
        if entered is None:
            continue
        offload = getattr(step, "offload", None)
        try:
            if offload is None:
                _enter(entered)
            else:
                await offload(_enter, entered)
        except Skip:
            return None
        try:
            value = await _run_async(steps, position + 1, args, job)
        except BaseException as error:
            if offload is None:
                _leave(entered, error)
            else:
                await offload(_leave, entered, error)
            return None
        if offload is None:
            _leave(entered, None)
        else:
            await offload(_leave, entered, None)
        return value
    return await job()
