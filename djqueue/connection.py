"""One Redis connection pool per process, shared by the client, the runtime and the API.

redis-py pools notice a fork and start afresh in the child, so a pool created before a
pre-forking web server forks is safe to keep.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar
from urllib.parse import parse_qs, unquote, urlsplit

import redis
import redis.exceptions
from redis.backoff import NoBackoff
from redis.retry import Retry
from redis.sentinel import Sentinel

from .config import Settings, get_settings
from .errors import ConfigurationError, RedisUnavailable

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


def make_redis(settings: Settings, **extra: Any) -> redis.Redis:
    """A new client with its own pool; the runtime uses this for blocking connections."""
    options: dict[str, Any] = {
        "socket_timeout": settings.socket_timeout,
        "socket_connect_timeout": settings.connect_timeout,
        "health_check_interval": 30,
        "decode_responses": False,
    }
    if settings.max_connections:
        options["max_connections"] = settings.max_connections
    options.update(extra)
    url = settings.redis_url
    scheme = urlsplit(url).scheme
    if scheme.endswith("+sentinel") or settings.sentinels:
        return _sentinel_client(settings, options)
    return redis.Redis.from_url(url, **options)


def _sentinel_client(settings: Settings, options: dict[str, Any]) -> redis.Redis:
    """Sentinel from ``redis+sentinel://[user:pass@]h1:p1,h2:p2/master[/db]`` or the settings.

    With explicit ``sentinels``, the URL (any scheme) still gives the password and db.
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
    sentinel = Sentinel(hosts, sentinel_kwargs=sentinel_kwargs, **options)
    options.pop("ssl", None)
    return sentinel.master_for(master, db=db, **auth, **options)


def _int_or_fail(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ConfigurationError("redis_url", f"database must be a number, got {text!r}") from None


def reset() -> None:
    """Drop the shared clients (after `configure`, or in tests)."""
    with _lock:
        clients = list(_clients.values())
        _clients.clear()
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
    except CONNECTION_ERRORS as exc:
        raise RedisUnavailable(settings.safe_redis_url, exc) from exc


def call(settings: Settings, fn: Callable[[], T]) -> T:
    with translate_errors(settings):
        return fn()
