"""One Redis connection pool per process, shared by the client, the runtime and the API.

The pool holds at most ``max_connections`` connections; a command that finds them all in use
waits for one (up to ``pool_timeout`` seconds, then `PoolExhausted`) instead of failing at
once, as redis-py's default pool does (it raises at 100 connections in redis-py 8). Blocking
waits for a job's result get connections of their own (`Waits`), so they never hold up pushes.

redis-py pools notice a fork and start afresh in the child, so a pool created before a
pre-forking web server forks is safe to keep.
"""

from __future__ import annotations

import asyncio
import os
import queue
import threading
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar
from urllib.parse import parse_qs, unquote, urlsplit

import redis
import redis.asyncio as aredis
import redis.exceptions
from redis.backoff import NoBackoff
from redis.retry import Retry
from redis.sentinel import Sentinel, SentinelConnectionPool

from .config import Settings, get_settings
from .errors import ConfigurationError, DjQueueError, PoolExhausted, RedisUnavailable

T = TypeVar("T")

_lock = threading.Lock()
_clients: dict[Settings, redis.Redis] = {}

#: Exceptions that mean "the command did not get through", as opposed to a Redis error reply.
CONNECTION_ERRORS: tuple[type[BaseException], ...] = (
    redis.exceptions.ConnectionError,
    redis.exceptions.TimeoutError,
    redis.exceptions.AuthenticationError,
    OSError,
)


def get_redis(settings: Settings | None = None) -> redis.Redis:
    """The shared client for ``settings`` (the process-wide settings by default)."""
    settings = settings or get_settings()
    client = _clients.get(settings)
    if client is None:
        with _lock:
            client = _clients.get(settings)
            if client is None:
                client = _clients[settings] = make_redis(settings)
    return client


class Waits:
    """Connections for a `result` wait, which holds one in a blocking BLMOVE until the job
    ends or the wait's slice passes. Waits have their own ``max_connections`` connections: a
    thousand waiters sharing the command pool would hold every connection for seconds, and
    pushes would queue behind them. A waiter that finds every one in use waits for one within
    its own deadline (`slot`), then looks at the job's status again."""

    def __init__(self, settings: Settings) -> None:
        self.redis = make_redis(settings)
        self.pid = os.getpid()
        self._slots = threading.BoundedSemaphore(settings.max_connections)

    @contextmanager
    def slot(self, timeout: float) -> Iterator[bool]:
        """A connection is ours while this lasts (True), or none freed up within ``timeout``."""
        free = self._slots.acquire(timeout=max(timeout, 0.0))
        try:
            yield free
        finally:
            if free:
                self._slots.release()


_waits: dict[Settings, Waits] = {}


def get_waits(settings: Settings) -> Waits:
    """The process's `Waits` for ``settings`` (made afresh in a forked child, whose copy of
    the slots may count waits of threads that did not follow it)."""
    waits = _waits.get(settings)
    if waits is None or waits.pid != os.getpid():
        with _lock:
            waits = _waits.get(settings)
            if waits is None or waits.pid != os.getpid():
                waits = _waits[settings] = Waits(settings)
    return waits


def make_redis(settings: Settings, **extra: Any) -> redis.Redis:
    """A new client with its own blocking pool of ``max_connections`` (``extra`` may size it
    otherwise); the runtime uses this for blocking connections."""
    options = _options(settings, extra)
    options["queue_class"] = _pool_queue(settings.safe_redis_url, options["max_connections"])
    if _is_sentinel(settings):
        return _sentinel_client(settings, options)
    pool = redis.BlockingConnectionPool.from_url(settings.redis_url, **options)
    return redis.Redis(connection_pool=pool)


def _options(settings: Settings, extra: dict[str, Any]) -> dict[str, Any]:
    """The pool's and connections' options from ``settings``: the one source for the sync
    clients (`make_redis`) and the asyncio ones (`make_aredis`)."""
    options: dict[str, Any] = {
        "socket_timeout": settings.socket_timeout,
        "socket_connect_timeout": settings.connect_timeout,
        "health_check_interval": 30,
        "decode_responses": False,
        "max_connections": settings.max_connections,
        "timeout": settings.pool_timeout,
    }
    options.update(extra)
    return options


def _is_sentinel(settings: Settings) -> bool:
    return urlsplit(settings.redis_url).scheme.endswith("+sentinel") or bool(settings.sentinels)


#: The asyncio clients: per event loop (an asyncio connection belongs to the loop that opened
#: it), then per distinct settings, as `_clients`; a closed loop's are dropped in `get_aredis`.
_aclients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[Settings, aredis.Redis]] = (
    weakref.WeakKeyDictionary()
)


def get_aredis(settings: Settings) -> aredis.Redis:
    """The asyncio client for ``settings`` on the running event loop: one pool per loop,
    configured as the sync one (`make_aredis`). It connects at its first command, so getting
    it does no I/O."""
    loop = asyncio.get_running_loop()
    per_loop = _aclients.get(loop)
    if per_loop is None:
        with _lock:
            # A client's connections hold its loop, so a finished loop stays in the weak
            # dictionary until its entry is dropped: here, when a new loop comes (a process
            # calling asyncio.run per request would otherwise keep every loop's pool).
            for closed in [other for other in _aclients if other.is_closed()]:
                del _aclients[closed]
            per_loop = _aclients.setdefault(loop, {})
    client = per_loop.get(settings)
    if client is None:
        client = per_loop[settings] = make_aredis(settings)
    return client


def make_aredis(settings: Settings) -> aredis.Redis:
    """A new `redis.asyncio.Redis` with the settings `make_redis` reads: the URL (a sentinel
    one too), a blocking pool of ``max_connections`` waiting up to ``pool_timeout`` (then
    `PoolExhausted`), the socket timeouts."""
    options = _options(settings, {})
    if _is_sentinel(settings):
        return _sentinel_client(settings, options, asyncio_client=True)  # type: ignore[return-value]
    pool = _AsyncBlockingPool.from_url(settings.redis_url, **options)
    pool.safe_url = settings.safe_redis_url
    return aredis.Redis(connection_pool=pool)


class _AsyncExhaustion:
    """An asyncio blocking pool raising `PoolExhausted` where redis-py raises a bare
    ``ConnectionError("No connection available.")`` (its wait timed out), as the sync pools'
    `_pool_queue` does."""

    safe_url = ""
    max_connections: int
    timeout: float | None

    async def get_connection(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return await super().get_connection(*args, **kwargs)  # type: ignore[misc]
        except redis.exceptions.ConnectionError as exc:
            if not isinstance(exc.__cause__, asyncio.TimeoutError):
                raise
            raise PoolExhausted(
                self.safe_url, self.max_connections, self.timeout or 0.0, exc
            ) from None


class _AsyncBlockingPool(_AsyncExhaustion, aredis.BlockingConnectionPool):
    """The asyncio client's pool."""


class _AsyncBlockingSentinelPool(
    _AsyncExhaustion, aredis.SentinelConnectionPool, aredis.BlockingConnectionPool
):
    """A sentinel-managed asyncio pool that waits for a free connection like the plain one."""


def _pool_queue(url: str, size: int) -> type[queue.LifoQueue[Any]]:
    """The queue of free connections of a `redis.BlockingConnectionPool`, raising
    `PoolExhausted` (which names the setting to raise) where redis-py would raise a bare
    ``ConnectionError("No connection available.")``, indistinguishable from Redis down."""

    class PoolQueue(queue.LifoQueue[Any]):
        def get(self, block: bool = True, timeout: float | None = None) -> Any:
            try:
                return super().get(block, timeout)
            except queue.Empty as exc:
                raise PoolExhausted(url, size, timeout or 0.0, exc) from None

    return PoolQueue


class _BlockingSentinelPool(SentinelConnectionPool, redis.BlockingConnectionPool):
    """A sentinel-managed pool that waits for a free connection like the plain one."""


def _sentinel_client(
    settings: Settings, options: dict[str, Any], asyncio_client: bool = False
) -> redis.Redis:
    """Sentinel from ``redis+sentinel://[user:pass@]h1:p1,h2:p2/master[/db]`` or the settings.

    With explicit ``sentinels``, the URL (any scheme) still gives the password and db. With
    ``asyncio_client``, the same sentinels and master through `redis.asyncio`'s classes.
    """
    parts = urlsplit(settings.redis_url)
    hosts = list(settings.sentinels)
    path = [p for p in parts.path.split("/") if p]
    master = settings.sentinel_master
    db = 0
    if parts.scheme.endswith("+sentinel"):
        hostlist = parts.netloc.rpartition("@")[2]
        for item in hostlist.split(","):
            host, _, port = item.rpartition(":")
            if not host:
                host, port = port, "26379"
            try:
                hosts.append((host, int(port)))
            except ValueError:
                raise ConfigurationError("redis_url", f"bad sentinel address {item!r}") from None
        if not path and not master:
            raise ConfigurationError("redis_url", "a sentinel URL needs the master name: /mymaster")
        if path:
            master = path[0]
        if len(path) > 1:
            db = _int_or_fail(path[1])
    elif path:
        db = _int_or_fail(path[0])
    query = parse_qs(parts.query)
    if "db" in query:
        db = _int_or_fail(query["db"][0])
    auth = {
        "username": unquote(parts.username) if parts.username else None,
        "password": unquote(parts.password) if parts.password else None,
    }
    # Sentinels get the socket timeouts too: an empty dict here would leave them with none.
    # They get no retries: redis-py already moves on to the next sentinel, and its default
    # backoff made each dead sentinel cost seconds on every master lookup.
    sentinel_kwargs: dict[str, Any] = {k: v for k, v in options.items() if k.startswith("socket_")}
    sentinel_kwargs["retry"] = Retry(NoBackoff(), 0)
    if "sentinel_auth" in query:
        sentinel_kwargs.update({k: v for k, v in auth.items() if v})
    if parts.scheme.startswith("rediss"):
        options["ssl"] = True
    pool_options = {
        k: options.pop(k) for k in ("max_connections", "timeout", "queue_class") if k in options
    }
    sentinel_class: Any = aredis.Sentinel if asyncio_client else Sentinel
    sentinel = sentinel_class(hosts, sentinel_kwargs=sentinel_kwargs, **options)
    options.pop("ssl", None)
    pool_class = _AsyncBlockingSentinelPool if asyncio_client else _BlockingSentinelPool
    client = sentinel.master_for(
        master,
        connection_pool_class=pool_class,
        db=db,
        **auth,
        **options,
        **pool_options,
    )
    if asyncio_client:
        client.connection_pool.safe_url = settings.safe_redis_url
    return client


def _int_or_fail(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ConfigurationError("redis_url", f"database must be a number, got {text!r}") from None


def reset() -> None:
    """Drop the shared clients (after `configure`, or in tests). The asyncio ones are only
    forgotten: closing them needs their own loop, and their connections close with them."""
    with _lock:
        clients = list(_clients.values()) + [waits.redis for waits in _waits.values()]
        _clients.clear()
        _waits.clear()
        _aclients.clear()
    for client in clients:
        try:
            client.close()
        except Exception:  # noqa: BLE001 - closing is best effort
            pass


@contextmanager
def translate_errors(settings: Settings) -> Iterator[None]:
    """Turn redis-py's connection failures into the one documented `RedisUnavailable`."""
    try:
        yield
    except DjQueueError:  # ours already (some are OSErrors too: ResultTimeout, PoolExhausted)
        raise
    except CONNECTION_ERRORS as exc:
        raise RedisUnavailable(settings.safe_redis_url, exc) from exc


def call(settings: Settings, fn: Callable[[], T]) -> T:
    with translate_errors(settings):
        return fn()
