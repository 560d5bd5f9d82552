"""The job API: ``@job`` on a function or class, ``djqueue.Job``, and the push methods.

A decorated function stays callable as before; it gains ``perform_later`` and friends, which
build a payload and hand it to the client. A class job subclasses `Job` (or is decorated) and
implements ``perform``. Either way the job is registered under its name, which is what the
payload's ``class`` field carries; the worker looks the name up in the registry (the allow-list).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import inspect
import math
from collections.abc import Callable, Iterable, Sequence
from types import CoroutineType
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar, overload

from . import registry, unique
from .job_options import _payload_options, check_options
from .lifecycle import JobRef
from .limits import ADMISSION_FIELD, Limiter, admission, job_limiters

if TYPE_CHECKING:
    from .batch import Signature

F = TypeVar("F", bound=Callable[..., Any])
C = TypeVar("C", bound=type)


def _refuse_kwargs(name: str, method: str, kwargs: dict[str, Any]) -> None:
    if kwargs:
        raise TypeError(
            f"{name}.{method}() got keyword arguments ({', '.join(kwargs)}); job arguments "
            f"travel as a JSON list, as in Sidekiq: pass them positionally (or one dict)"
        )


def _epoch(when: dt.datetime | float | int) -> float:
    """Epoch seconds. A number of 10^11 or more is taken as milliseconds (10^11 s is the year
    5138), the form Sidekiq 8 writes, as `djqueue.payload.to_seconds` reads it."""
    if isinstance(when, dt.datetime):
        return when.timestamp()
    if isinstance(when, (int, float)) and not isinstance(when, bool):
        if not math.isfinite(when):
            raise ValueError(f"perform_at needs a finite time, got {when!r}")
        return when / 1000.0 if when >= 100_000_000_000 else float(when)
    raise TypeError(f"expected a datetime or epoch seconds, got {type(when).__name__}")


def _seconds(interval: dt.timedelta | float | int) -> float:
    if isinstance(interval, dt.timedelta):
        return interval.total_seconds()
    if isinstance(interval, (int, float)) and not isinstance(interval, bool):
        if not math.isfinite(interval):
            raise ValueError(f"perform_in needs a finite number of seconds, got {interval!r}")
        return float(interval)
    raise TypeError(f"expected seconds or a timedelta, got {type(interval).__name__}")


def _ref(jid: str | None) -> JobRef | None:
    return None if jid is None else JobRef(jid)


#: Push methods of other job libraries, and what djqueue calls them.
OTHER_HABITS = {
    "delay": "Celery's delay()",
    "apply_async": "Celery's apply_async()",
    "send": "Dramatiq's send()",
}


class _OtherHabit:
    """An attribute another library's users reach for (``send_welcome.delay(1)``): reading it
    raises the AttributeError it would anyway, but naming djqueue's method, so the habit costs
    one glance at the message rather than a search through the docs."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, instance: Any, owner: type) -> Any:
        job = getattr(instance if instance is not None else owner, "job_name", "") or "the job"
        raise AttributeError(
            f"{job} has no {self.name}() ({OTHER_HABITS[self.name]}): djqueue pushes with "
            f"perform_later(*args) (alias perform_async), perform_in(seconds, *args) or "
            f"perform_at(when, *args)"
        )


class JobHandle:
    """A registered job with option overrides; ``job.set(queue="low")`` returns one.

    Every ``perform_*`` method returns the pushed job's jid (or None when a client
    middleware stopped the push).
    """

    def __init__(self, definition: Any, overrides: dict[str, Any] | None = None) -> None:
        self.definition = definition
        self.overrides = overrides or {}
        self.job_name: str = definition.job_name

    def set(self, **options: Any) -> JobHandle:
        """A handle with these options on top; any option Sidekiq's ``set`` takes works."""
        declared = [name for name in ("concurrency", "limits") if name in options]
        if declared:
            raise TypeError(
                f"{self.job_name}.set(): {', '.join(declared)} belongs to the job's declaration "
                f"(@job({declared[0]}=...)), which every worker applies, not to one push"
            )
        return JobHandle(self.definition, {**self.overrides, **check_options(options)})

    def _item(self, args: Sequence[Any]) -> dict[str, Any]:
        item = {
            **self.definition.job_options,
            **self.overrides,
            "class": self.definition.job_name,
            "args": list(args),
        }
        if self.definition.job_limits:
            parking = admission(self.definition.job_limits)
            if parking:
                item[ADMISSION_FIELD] = parking
        return item  # a falsy retention stays: it wins over a default (`Client.normalize`)

    def s(self, *args: Any, **options: Any) -> Signature:
        """A signature: this job with these arguments (and options, as `set` takes them), to
        push later: a batch's callback, a chain's step (`djqueue.batch`)."""
        from .batch import Signature

        handle = self.set(**options) if options else self
        return Signature(handle._item(args))

    def perform_later(self, *args: Any, **kwargs: Any) -> JobRef | None:
        """Push the job to its queue; it runs as soon as a worker takes it. Returns the jid
        (a `djqueue.lifecycle.JobRef`: a str with ``status()``, ``result()``, ``cancel()``)."""
        _refuse_kwargs(self.job_name, "perform_later", kwargs)
        from .client import get_client

        return _ref(get_client().push(self._item(args)))

    perform_async = perform_later

    async def aperform_later(self, *args: Any, **kwargs: Any) -> JobRef | None:
        """`perform_later` from async code: the same push (the client middleware, the size
        limit, the encoding), its write awaited on an asyncio connection, holding no thread
        (`djqueue.client.Client.apush`)."""
        _refuse_kwargs(self.job_name, "aperform_later", kwargs)
        from .client import get_client

        return _ref(await get_client().apush(self._item(args)))

    delay = _OtherHabit()
    apply_async = _OtherHabit()
    send = _OtherHabit()

    def perform_in(
        self, interval: dt.timedelta | float, *args: Any, **kwargs: Any
    ) -> JobRef | None:
        """Run after ``interval`` (seconds or timedelta); zero or negative pushes at once."""
        _refuse_kwargs(self.job_name, "perform_in", kwargs)
        from .client import get_client
        from .payload import now

        item = self._item(args)
        item["at"] = now() + _seconds(interval)
        return _ref(get_client().push(item))

    def perform_at(self, when: dt.datetime | float, *args: Any, **kwargs: Any) -> JobRef | None:
        """Run at ``when`` (an aware or local datetime, or epoch seconds)."""
        _refuse_kwargs(self.job_name, "perform_at", kwargs)
        from .client import get_client

        item = self._item(args)
        item["at"] = _epoch(when)
        return _ref(get_client().push(item))

    def perform_bulk(self, args_list: Iterable[Sequence[Any]], batch_size: int = 1000) -> list[str]:
        """Push one job per argument list, one Redis round trip per ``batch_size`` jobs."""
        from .client import get_client

        item = self._item(())
        item["args"] = [list(args) for args in args_list]
        return get_client().push_bulk(item, batch_size=batch_size)

    def perform_now(self, *args: Any, **kwargs: Any) -> Any:
        """Run the job here and now, through the server middleware; returns its result."""
        _refuse_kwargs(self.job_name, "perform_now", kwargs)
        from .executor import execute_now

        return execute_now(self._item(args))

    #: The jobs recorded for this job in fake mode (a live list); `djqueue.testing` installs
    #: this property when it is imported, so the core knows nothing of testing.
    jobs: Any


class FunctionJob(JobHandle):
    """What ``@job`` returns for a function: the function itself, plus the push methods."""

    def __init__(
        self,
        func: Callable[..., Any],
        name: str,
        options: dict[str, Any],
        retry_in: Callable[[int, BaseException], Any] | None,
        retries_exhausted: Callable[[dict[str, Any], BaseException], Any] | None,
        unique_args: Callable[[list[Any]], Any] | None = None,
    ) -> None:
        self.target = func
        #: What counts for a unique job's lock (`djqueue.unique`); None: all its arguments.
        self.unique_args = unique_args
        self.job_name = name
        self.job_options = options
        super().__init__(self)
        self._retry_in = retry_in
        self._retries_exhausted = retries_exhausted
        #: The limiters the job enters before it runs (`djqueue.limits`).
        self.job_limits: tuple[Limiter, ...] = ()
        #: An ``async def`` job: the worker runs it on its event loop (`djqueue.worker.aio`).
        self.job_is_async = inspect.iscoroutinefunction(func)
        self.__name__ = getattr(func, "__name__", name)
        self.__qualname__ = getattr(func, "__qualname__", name)
        self.__module__ = getattr(func, "__module__", __name__)
        self.__doc__ = func.__doc__
        self.__wrapped__ = func

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.target(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<job {self.job_name}>"

    # -- the protocol the executor and the runtime use --------------------------------------

    def instantiate(self, payload: dict[str, Any]) -> Any:
        return self

    def execute(self, instance: Any, args: list[Any]) -> Any:
        return _finish(self.target(*args))

    async def aexecute(self, instance: Any, args: list[Any]) -> Any:
        return await self.target(*args)

    def retry_in(self, count: int, exc: BaseException) -> Any:
        return self._retry_in(count, exc) if self._retry_in else None

    def retries_exhausted(self, payload: dict[str, Any], exc: BaseException) -> None:
        if self._retries_exhausted:
            self._retries_exhausted(payload, exc)


def _finish(result: Any) -> Any:
    """Run a coroutine returned by an ``async def`` job to completion on a fresh loop."""
    if isinstance(result, CoroutineType):  # inspect.iscoroutine, without the extra call
        return asyncio.run(result)
    return result


class ClassHandle:
    """Class-level access to the push methods: ``SendWelcome.perform_later(1)``."""

    def __init__(self, method: str) -> None:
        self.method = method

    def __get__(self, instance: Any, owner: type) -> Any:
        return getattr(JobHandle(owner), self.method)


class Job:
    """Base class for class-based jobs::

        class SendWelcome(djqueue.Job, queue="mailers", retry=5):
            def perform(self, user_id):
                ...

    While ``perform`` runs, ``self.jid`` and ``self.payload`` describe the job. Override the
    class methods ``retry_in(count, exc)`` (seconds until the next try; None for the default
    backoff) and ``retries_exhausted(payload, exc)`` (called once before the job goes dead).
    Pass ``abstract=True`` for a base class that should not be registered.
    """

    job_name: ClassVar[str] = ""
    job_options: ClassVar[dict[str, Any]] = {}
    #: ``perform`` is ``async def``: the worker runs it on its event loop.
    job_is_async: ClassVar[bool] = False
    #: The limiters the job enters before it runs (`djqueue.limits`).
    job_limits: ClassVar[tuple[Limiter, ...]] = ()
    jid: str | None = None
    payload: dict[str, Any] | None = None
    #: What counts for a unique job's lock (`djqueue.unique`): a callable given the argument
    #: list (``unique_args=`` in the class statement); None: all the arguments.
    unique_args: ClassVar[Callable[[list[Any]], Any] | None] = None

    perform_later = ClassHandle("perform_later")
    perform_async = ClassHandle("perform_async")
    aperform_later = ClassHandle("aperform_later")
    perform_in = ClassHandle("perform_in")
    perform_at = ClassHandle("perform_at")
    perform_bulk = ClassHandle("perform_bulk")
    perform_now = ClassHandle("perform_now")
    set = ClassHandle("set")
    s = ClassHandle("s")
    delay = _OtherHabit()
    apply_async = _OtherHabit()
    send = _OtherHabit()
    #: ``SendWelcome.jobs``: installed by `djqueue.testing`, as on `JobHandle`.
    jobs: Any

    def __init_subclass__(
        cls,
        abstract: bool = False,
        name: str | None = None,
        cron: str | None = None,
        unique_args: Callable[[list[Any]], Any] | None = None,
        concurrency: int | None = None,
        limits: Sequence[Limiter] | None = None,
        **options: Any,
    ) -> None:
        super().__init_subclass__()
        chooser = unique.check_unique_args(unique_args)
        if chooser is not None:
            cls.unique_args = staticmethod(chooser)
        cls.job_options = {**cls.job_options, **check_options(_payload_options(options))}
        cls.job_is_async = inspect.iscoroutinefunction(cls.perform)
        if abstract or cls.perform is Job.perform:
            return
        cls.job_name = name or f"{cls.__module__}.{cls.__qualname__}"
        if concurrency is not None or limits is not None:
            cls.job_limits = job_limiters(cls.job_name, concurrency, limits)
        registry.register(cls.job_name, cls)
        if cron is not None:
            _declare_periodic(cron, cls)

    def perform(self, *args: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must implement perform()")

    @classmethod
    def instantiate(cls, payload: dict[str, Any]) -> Job:
        instance = cls()
        instance.jid = payload.get("jid")
        instance.payload = payload
        return instance

    @classmethod
    def execute(cls, instance: Job, args: list[Any]) -> Any:
        return _finish(instance.perform(*args))

    @classmethod
    async def aexecute(cls, instance: Job, args: list[Any]) -> Any:
        return await instance.perform(*args)

    @classmethod
    def retry_in(cls, count: int, exc: BaseException) -> Any:
        return None

    @classmethod
    def retries_exhausted(cls, payload: dict[str, Any], exc: BaseException) -> None:
        return None


@overload
def job(target: F, /) -> FunctionJob: ...
@overload
def job(
    target: None = None, /, *, name: str | None = None, **options: Any
) -> Callable[[Any], Any]: ...


def job(target: Any = None, /, *, name: str | None = None, **options: Any) -> Any:
    """Register a function or class as a job: ``@job`` or ``@job(queue="mailers", retry=5)``.

    Options: ``queue``, ``retry`` (True = 25 tries, False, or a number), ``retention``
    (seconds or a timedelta to keep the finished job's status and return value: see
    `djqueue.lifecycle`; off by default), ``name`` (the
    registered name, written as the payload's ``class``; default the dotted path),
    ``retry_for`` (seconds from the first failure during which it is retried), ``retry_queue``,
    ``backtrace``, ``dead``, ``tags``, ``time_limit`` (seconds the job may run before it is
    interrupted with `djqueue.errors.TimeLimitExceeded`: see `djqueue.worker.time_limit`);
    ``unique_for`` (seconds or a timedelta: while a job with the same class, queue and
    arguments waits or runs, another push of it is skipped; see `djqueue.unique`),
    ``unique_until`` (``"success"`` or ``"start"``) and ``unique_args`` (a callable choosing
    the arguments that count); ``concurrency`` (at most this many run at once across every
    worker) and ``limits`` (limiters of `djqueue.limits` the job enters before it runs);
    ``cron`` (a cron expression, optionally ending with a time zone:
    ``"0 9 * * 1-5 Europe/Paris"``) also runs the job on that schedule, with no arguments
    (see `djqueue.periodic_declaration`); for functions also ``retry_in`` and
    ``retries_exhausted`` hooks (classes define them as class methods).
    """
    retry_in = options.pop("retry_in", None)
    retries_exhausted = options.pop("retries_exhausted", None)
    cron = options.pop("cron", None)
    unique_args = unique.check_unique_args(options.pop("unique_args", None))
    concurrency = options.pop("concurrency", None)
    limits = options.pop("limits", None)
    payload_options = check_options(_payload_options(options))

    def decorate(obj: Any) -> Any:
        if isinstance(obj, type):
            if retry_in or retries_exhausted:
                raise TypeError("class jobs define retry_in/retries_exhausted as class methods")
            cls: Any = _class_job(obj, name, payload_options)
            if unique_args is not None:
                cls.unique_args = staticmethod(unique_args)
            if concurrency is not None or limits is not None:
                cls.job_limits = job_limiters(cls.job_name, concurrency, limits)
            if cron is not None:
                _declare_periodic(cron, cls)
            return cls
        if not callable(obj):
            raise TypeError(f"@job needs a function or a class, got {obj!r}")
        job_name = name or f"{obj.__module__}.{obj.__qualname__}"
        handle = FunctionJob(
            obj, job_name, payload_options, retry_in, retries_exhausted, unique_args
        )
        handle.job_limits = job_limiters(job_name, concurrency, limits)
        registry.register(job_name, handle)
        if cron is not None:
            _declare_periodic(cron, handle)
        return handle

    return decorate(target) if target is not None else decorate


def _declare_periodic(cron: str, definition: Any) -> None:
    """``cron=`` on a job: a periodic job named after it, with no arguments
    (`djqueue.periodic_declaration.periodic` declares anything richer)."""
    from .periodic_declaration import periodic

    periodic(cron, definition)


def _class_job(cls: type, name: str | None, options: dict[str, Any]) -> type:
    if issubclass(cls, Job):
        cls.job_options = {**cls.job_options, **options}
        if name and name != cls.job_name:
            registry.unregister(cls.job_name)
            cls.job_name = name
            registry.register(name, cls)
        return cls
    namespace = {
        "__module__": cls.__module__,
        "__qualname__": cls.__qualname__,
        "__doc__": cls.__doc__,
    }
    return type(cls.__name__, (cls, Job), namespace, name=name, **options)
