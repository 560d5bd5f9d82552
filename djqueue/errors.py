"""The exceptions djqueue raises on purpose.

Each one is documented so that application code can catch exactly what it means: a job that
could not be pushed because Redis is unreachable is a different problem from a job that was
never registered.
"""

from __future__ import annotations

import threading
from typing import ClassVar


class DjQueueError(Exception):
    """Base class of every exception djqueue raises itself."""


class ConfigurationError(DjQueueError, ValueError):
    """A setting has a bad value. The message always starts with the setting's name."""

    def __init__(self, setting: str, message: str) -> None:
        self.setting = setting
        super().__init__(f"{setting}: {message}")


class RedisUnavailable(DjQueueError, ConnectionError):
    """Redis could not be reached (refused, timed out, authentication failed, ...).

    Raised by every push when the command did not reach Redis. The message carries the Redis
    URL with the password removed, so it is safe to log.
    """

    def __init__(self, url: str, cause: BaseException, hint: str = "") -> None:
        self.url = url
        self.cause = cause
        self.hint = hint
        super().__init__(f"Redis at {url} is unavailable: {cause}" + (f"; {hint}" if hint else ""))


class PoolExhausted(RedisUnavailable):
    """Every connection of the process's pool (the ``max_connections`` setting) stayed in use
    for ``pool_timeout`` seconds. Redis may be healthy: the process asks more of it at once
    than the pool allows. A `RedisUnavailable`, so whatever handles Redis being down (the
    outbox, a retry) handles this too."""

    def __init__(
        self, url: str, max_connections: int, timeout: float, cause: BaseException
    ) -> None:
        DjQueueError.__init__(
            self,
            f"no free connection to Redis at {url} within {timeout} s: all {max_connections} "
            "connections of the pool are in use; raise the max_connections setting (or "
            "pool_timeout), or do fewer things with Redis at once",
        )
        self.url = url
        self.cause = cause
        self.max_connections = max_connections


class BadKey(DjQueueError):
    """A Redis key djqueue reads holds the wrong type (a string where a list belongs) or a
    value it cannot read (a counter that is not a number). The workers skip or repair such a
    key and go on; a page that must read it shows this message instead of failing."""

    def __init__(self, key: str, problem: str, held: str = "") -> None:
        self.key = key
        self.problem = problem
        #: The Redis type the key holds (as ``TYPE`` names it), or "" when not read: a page
        #: names the redis-cli read that shows it.
        self.held = held
        super().__init__(f"{key} {problem}: delete or fix the key")


class DuplicateJobName(DjQueueError):
    """Two different jobs were registered under one name."""


class UnknownJob(DjQueueError, LookupError):
    """A payload names a job that is not registered in this process (the allow-list)."""


class MalformedJob(DjQueueError, ValueError):
    """An entry found in a queue or a set is not a job: not JSON, or not an object with a string
    ``class`` and a list ``args``. The worker buries such entries in ``dead`` and goes on."""


class PayloadTooLarge(DjQueueError, ValueError):
    """A job's JSON is larger than the ``max_payload_bytes`` setting (16 MiB by default).

    Redis refuses a value over 512 MB by dropping the connection, which would read as Redis
    being down; and a job that large is better passed by reference (a row id, a file name).
    """

    def __init__(self, job: str, size: int, limit: int) -> None:
        self.size = size
        self.limit = limit
        super().__init__(
            f"{job}: the job's JSON is {size:,} bytes, over the max_payload_bytes setting "
            f"({limit:,}); pass a reference (a row id, a file path) instead of the data"
        )


class ProcessDied(DjQueueError):
    """Recorded on a job buried because the worker process died while running it, again and
    again (a segfault, ``os._exit``, the kernel's OOM killer): a poison job."""


class EmbeddedProcess(DjQueueError, ValueError):
    """Quiet or stop asked of an embedded Sidekiq 7+ process (``info["embedded"]``): it runs
    inside another application (a Puma server), which starts and stops it, and ignores them.
    Sidekiq's own API refuses them too, and its Busy page offers neither."""

    def __init__(self, identity: str, action: str) -> None:
        super().__init__(
            f"Process {identity} is an embedded Sidekiq process: it ignores {action}; "
            "the application it runs in starts and stops it"
        )


class JobFailed(DjQueueError):
    """`djqueue.result` of a job that ended without a value: it died (its retries used up, or
    ``retry: false``), was cancelled, or expired (taken after its ``expires_at``, not run).
    Carries the job's own error class name and message as the worker recorded them (the
    exception itself lived in another process)."""

    def __init__(self, jid: str, state: str, error_class: str, error_message: str) -> None:
        self.jid = jid
        self.state = state
        self.error_class = error_class
        self.error_message = error_message
        detail = f"{error_class}: {error_message}" if error_class else state
        super().__init__(f"job {jid} ended {state}: {detail}")


class JobCancelled(JobFailed):
    """`djqueue.result` of a job that was cancelled."""


class ResultTimeout(DjQueueError, TimeoutError):
    """`djqueue.result` waited its timeout and the job had not finished."""


class JobNotTracked(DjQueueError, LookupError):
    """`djqueue.result` of a jid with no status: pushed without ``retention``, expired after
    its retention, or never pushed."""


class TimeLimitExceeded(DjQueueError):
    """Raised inside a job that ran past its ``time_limit``: in a thread-run job's thread, at
    the next line of Python it runs; in an ``async def`` job, in place of the cancellation of
    its task. The job failed, and is retried like any failed job. A job may catch it to clean
    up; one that catches it and goes on is reported as over its limit (log, Busy page), and
    under ``--processes`` its process is replaced once it is ``timeout`` seconds over."""

    #: Thread id -> the message of the interruption on its way to that thread. CPython raises
    #: an asynchronous exception from its class, with no arguments, in the target thread; the
    #: watchdog leaves the message here first, so the job sees which limit it ran past.
    pending: ClassVar[dict[int, str]] = {}

    def __init__(self, *args: object) -> None:
        if not args:
            message = self.pending.pop(threading.get_ident(), None)
            args = () if message is None else (message,)
        super().__init__(*args)


class OverLimit(DjQueueError):
    """A limiter (`djqueue.limits`) refused: its concurrency slots are taken, its window or
    its bucket is spent. Raised by ``with djqueue.limits.concurrent(...)`` when it is full;
    in a worker the job is then parked until a slot is given back (a concurrency limiter) or
    put back for the moment the limiter opens (not a failure, no retry counted), so it does
    not hold a processor thread while it waits. ``retry_after`` is the suggested wait in
    seconds (when a window or a bucket opens; a guess for a concurrency limiter); ``parked``
    is true when the worker's check parked the job already; ``limit`` is the limiter's."""

    def __init__(
        self, name: str, kind: str, retry_after: float, parked: bool = False, limit: int = 0
    ) -> None:
        self.name = name
        self.kind = kind
        self.retry_after = retry_after
        self.parked = parked
        self.limit = limit
        super().__init__(f"limiter {name!r} ({kind}) is full; try again in {retry_after:.1f}s")


class BatchClosed(DjQueueError):
    """A job was pushed into a batch (`djqueue.Batch`) that no longer takes jobs: it is
    unknown or expired, was cancelled, or has succeeded. Nothing of the push was written."""
