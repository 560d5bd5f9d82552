"""One settings object per process, built from layers.

Precedence, highest first: keyword arguments to :func:`configure`, framework settings (the
``DJQUEUE`` dict in Django), the environment (``DJQUEUE_REDIS_URL``, then ``REDIS_URL``;
``DJQUEUE_NAMESPACE``), then defaults. Every value is checked when the object is built, so a bad
setting fails at start-up with its name rather than on the first job.

Two things may stand above these process-wide settings. A *resolver* (`add_resolver`) answers
for the current context: a framework with several apps in one process keeps settings per app
(flask_djqueue answers with ``current_app``'s, built from its ``DJQUEUE_*`` keys), so a push
from one app goes to that app's Redis. And a worker *pins* the settings it runs with (`pin`):
its command-line flags on top of what its modules configured, the one answer for every push
made in that process, whichever app is current.

A *fallback* resolver (``add_resolver(..., fallback=True)``) is asked only when nobody has
configured the process: no resolver answered and `configure` was never called, so what is left
is the environment and the defaults (``redis://localhost:6379/0``). That is right for a plain
Python program, and wrong when a framework integration is in use but not wired (a Flask push
outside any app, a Django project without the app): the fallback answers for the one setup it
can see, or raises `ConfigurationError` saying what to do, so that no push goes silently to a
Redis nobody configured.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from . import setting_table, unwired
from .errors import ConfigurationError
from .setting_checks import URL_SCHEMES as URL_SCHEMES  # where they were before the table
from .setting_checks import parse_queues as parse_queues

DEFAULT_REDIS_URL = "redis://localhost:6379/0"


@dataclass(frozen=True)
class Settings:
    """Everything djqueue can be told. Field names are the keyword arguments of `configure`."""

    redis_url: str = DEFAULT_REDIS_URL
    namespace: str = ""
    default_queue: str = "default"
    queues: tuple[tuple[str, int], ...] = (("default", 0),)
    concurrency: int = 10
    #: ``async def`` jobs one process runs at once on its event loop (`djqueue.worker.aio`).
    async_concurrency: int = 100
    #: Worker processes forked from one parent (`djqueue.worker.swarm`); 0: one per core.
    processes: int = 1
    #: A worker process using more memory than this (MB, resident) is replaced; 0: no limit.
    max_memory: int = 0
    #: A worker process that has run this many jobs is replaced; 0: no limit.
    max_jobs: int = 0
    timeout: float = 25.0
    max_retries: int = 25
    dead_max_jobs: int = 10_000
    dead_timeout: float = 180 * 24 * 3600.0
    #: Seconds a batch's keys live after their last change (`djqueue.batch`).
    batch_retention: float = 7 * 24 * 3600.0
    heartbeat_interval: float = 5.0
    poll_interval: float = 1.0
    sentinels: tuple[tuple[str, int], ...] = ()
    sentinel_master: str = ""
    socket_timeout: float = 5.0
    connect_timeout: float = 2.0
    #: Connections of each process's pool for commands (and as many again for `result`
    #: waits); when all are in use, a command waits for one (`pool_timeout`).
    max_connections: int = 50
    #: Seconds a command waits for a free connection before raising `PoolExhausted`.
    pool_timeout: float = 10.0
    tag: str = ""
    labels: tuple[str, ...] = ()
    max_payload_bytes: int = 16 * 1024 * 1024
    #: Show job arguments in the admin and the dashboard; False hides them (personal data).
    web_show_args: bool = True
    #: Count per-job metrics (Sidekiq 8's layout, `djqueue.store.metrics`) in the workers.
    metrics: bool = True
    #: Periodic jobs declared in settings: name -> {"cron", "class", "args", "queue",
    #: "timezone", ...} (`djqueue.periodic_declaration.from_settings`), for jobs of other
    #: codebases too.
    periodic: Mapping[str, Any] = field(default_factory=dict, hash=False, compare=False)
    #: Options every job gets unless its own say otherwise (Sidekiq's default_job_options).
    default_job_options: Mapping[str, Any] = field(default_factory=dict, hash=False)
    extra: Mapping[str, Any] = field(default_factory=dict, hash=False, compare=False)

    def __post_init__(self) -> None:
        """Check every field with its `djqueue.setting_table` entry and keep its normal form
        (a list of labels becomes a tuple)."""
        for setting in setting_table.CORE:
            value = setting.validate(getattr(self, setting.name))
            object.__setattr__(self, setting.name, value)
        if self.sentinels and not self.sentinel_master:
            raise ConfigurationError("sentinel_master", "is required when sentinels are given")
        # Settings show up in tracebacks' locals (Django's DEBUG page, error reporters), in
        # logs and in dataclasses.asdict(): the URL prints with its password as ***.
        if redact_url(self.redis_url) != self.redis_url:
            object.__setattr__(self, "redis_url", SecretURL(self.redis_url))

    @classmethod
    def build(
        cls,
        framework: Mapping[str, Any] | None = None,
        environ: Mapping[str, str] | None = None,
        **overrides: Any,
    ) -> Settings:
        """Merge the layers. ``framework`` keys may be upper case (``REDIS_URL``)."""
        values: dict[str, Any] = {}
        env = os.environ if environ is None else environ
        for setting in setting_table.CORE:
            found = next((env[var] for var in setting.env if env.get(var)), None)
            if found is not None:
                values[setting.name] = found
        names = {f.name for f in dataclasses.fields(cls)}
        for layer, label in ((framework or {}, "framework settings"), (overrides, "configure()")):
            for key, value in layer.items():
                name = key.lower()
                if name not in names:
                    if layer is overrides:
                        raise ConfigurationError(key, f"unknown setting passed to {label}")
                    values.setdefault("extra", {})[key] = value
                    continue
                values[name] = value
        return cls(**values)

    def replace(self, **changes: Any) -> Settings:
        return dataclasses.replace(self, **changes)

    @property
    def safe_redis_url(self) -> str:
        """The Redis URL with any password replaced by ``***``, for messages and logs."""
        return redact_url(self.redis_url)


#: Query parameters redis-py reads a password from.
_SECRET_PARAMETERS = ("password", "sentinel_password")


def redact_url(url: str) -> str:
    """``url`` with every password replaced by ``***`` (in the user info and in a
    ``?password=`` parameter), for messages and logs."""
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return "(a URL that cannot be read; not shown, as it may hold a password)"
    netloc = parts.netloc
    if password is not None:
        userinfo = f"{parts.username}:***" if parts.username else ":***"
        netloc = f"{userinfo}@{netloc.rpartition('@')[2]}"
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        if any(key.lower() in _SECRET_PARAMETERS for key, _ in pairs):
            query = urlencode(
                [(k, "***" if k.lower() in _SECRET_PARAMETERS else v) for k, v in pairs],
                safe="*",
            )
    return parts._replace(netloc=netloc, query=query).geturl()


class SecretURL(str):
    """A Redis URL whose repr hides its password: the string itself is unchanged (it connects,
    compares and hashes as the URL), but a settings dict holding it shows ``***`` wherever it
    is printed with ``repr`` or ``pprint`` (Django's DEBUG page and error reporters list every
    setting; their filter hides keys named like ``PASSWORD``, not ``REDIS_URL``)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return repr(redact_url(self))


def hide_password(values: dict[str, Any], key: str) -> None:
    """Make ``values[key]``, a Redis URL holding a password, a `SecretURL` in place."""
    url = values.get(key)
    if isinstance(url, str) and not isinstance(url, SecretURL) and redact_url(url) != url:
        values[key] = SecretURL(url)


_settings: Settings | None = None
_framework: Mapping[str, Any] | None = None
#: Callables asked, in order, for the settings of the current context (None: no opinion).
_resolvers: tuple[Callable[[], Settings | None], ...] = ()
_pinned: Settings | None = None
#: Resolvers asked when nothing else configured the process (see the module's docstring).
_fallbacks: tuple[Callable[[], Settings | None], ...] = ()
#: Whether `configure` was called: the program, or a framework that is wired, chose settings.
_configured = False


def configure(framework: Mapping[str, Any] | None = None, **overrides: Any) -> Settings:
    """Build and install the process-wide settings; the connection pool is rebuilt on next use.

    Framework integrations pass their settings dict as ``framework``; applications pass keyword
    arguments, which win over everything else.
    """
    global _settings, _framework, _configured
    layer = dict(framework) if framework is not None else _framework
    _settings = Settings.build(framework=layer, **overrides)
    _framework = layer
    _configured = True
    # The pools built for the old settings go; without the connection module imported there
    # are none (looked up, not imported, so that config imports nothing that imports it).
    connection = sys.modules.get(f"{__package__}.connection")
    if connection is not None:
        connection.reset()
    return _settings


def get_settings() -> Settings:
    """The settings in force here: the pinned ones, else a resolver's answer for the current
    context, else the process-wide settings when `configure` was called, else a fallback's
    answer (which may be `ConfigurationError`), else the environment and the defaults."""
    global _settings
    if _pinned is not None:
        return _pinned
    for resolve in _resolvers if _configured else (*_resolvers, *_fallbacks, unwired.django):
        found = resolve()
        if found is not None:
            return found
    if _settings is None:
        _settings = Settings.build(framework=_framework)
    return _settings


def add_resolver(resolver: Callable[[], Settings | None], *, fallback: bool = False) -> None:
    """Let ``resolver`` pick the settings for the current context before the process-wide ones
    apply; it returns None when it has no opinion (outside any app of its framework). Adding
    the same resolver twice keeps one. ``fallback=True``: asked only when `configure` was
    never called, after the other resolvers; it may raise `ConfigurationError`."""
    global _resolvers, _fallbacks
    if fallback and resolver not in _fallbacks:
        _fallbacks = (*_fallbacks, resolver)
    elif not fallback and resolver not in _resolvers:
        _resolvers = (*_resolvers, resolver)


def remove_resolver(resolver: Callable[[], Settings | None]) -> None:
    global _resolvers, _fallbacks
    _resolvers = tuple(r for r in _resolvers if r is not resolver)
    _fallbacks = tuple(r for r in _fallbacks if r is not resolver)


def pin(settings: Settings | None) -> None:
    """Make ``settings`` what `get_settings` returns everywhere in this process, resolvers
    included (None lifts the pin). A worker pins the settings it started with, so that its
    flags win over whatever its modules or apps configure, and a job that pushes a job writes
    to the Redis the worker reads."""
    global _pinned
    _pinned = settings


def pinned() -> Settings | None:
    """The pinned settings (a running worker's), or None."""
    return _pinned
