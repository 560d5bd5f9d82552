"""Every setting djqueue takes, declared once: its name, its check, its help and, where it has
them, its worker flag and its environment variable.

Everything else is derived from this table: `djqueue.config.Settings` checks its fields with
`check`; the worker's flags (`djqueue.worker.cli`) are built from the settings that have
``flags``; the Django app and the Flask extension refuse a key the table does not list and check
their own options (the `INTEGRATION` settings) with `check_integration`; the configuration
reference in the docs is checked against the table (``tests/test_docs_config.py``).

A core setting's default is its `djqueue.config.Settings` field's; an integration setting's is
here. This module reads no settings, so `djqueue.config` stays a leaf of the core: its checks
import the job options and the periodic entries' parser, never what pushes a job.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from . import setting_checks as c
from .errors import ConfigurationError
from .job_options import _payload_options, check_options
from .periodic_declaration import from_settings

#: The frameworks an integration setting can belong to.
DJANGO, FLASK = "django", "flask"


@dataclass(frozen=True)
class Setting:
    """One setting. ``name`` is the `djqueue.configure` keyword for a core setting and the
    upper-case key for an integration one (``frameworks`` names who reads it)."""

    name: str
    check: c.Check
    help: str
    #: The worker's flags for it (``("-c", "--concurrency")``); none: no flag.
    flags: tuple[str, ...] = ()
    metavar: str | None = None
    #: What the flag's text becomes.
    arg_type: Callable[[str], Any] = str
    #: Environment variables read for it, first found wins.
    env: tuple[str, ...] = ()
    #: Who reads an integration setting; empty for a core setting (every framework).
    frameworks: tuple[str, ...] = ()
    #: An integration setting's default (a core one's is its `Settings` field's).
    default: Any = None

    @property
    def key(self) -> str:
        """The key in Django's ``DJQUEUE`` dict (Flask adds ``DJQUEUE_``)."""
        return self.name.upper()

    def validate(self, value: Any, spelt: str | None = None) -> Any:
        """``value`` in its normal form; a bad one raises `ConfigurationError` naming the
        setting as ``spelt`` (default: its name)."""
        try:
            return self.check(value)
        except (TypeError, ValueError) as exc:
            raise ConfigurationError(spelt or self.name, str(exc)) from None


def _periodic(value: Any) -> Mapping[str, Any]:
    from_settings(c.mapping(value))
    return value


def _job_options(value: Any) -> Mapping[str, Any]:
    return check_options(_payload_options(dict(c.mapping(value))))


CORE: tuple[Setting, ...] = (
    Setting(
        "redis_url",
        c.redis_url,
        "the Redis to use: a `redis://`, `rediss://` (TLS), `unix://`, `redis+sentinel://` or "
        "`rediss+sentinel://` URL. A password given as a flag shows in ps: prefer the "
        "environment or `--redis-url-file`",
        ("--redis-url",),
        "URL",
        env=("DJQUEUE_REDIS_URL", "REDIS_URL"),
    ),
    Setting(
        "namespace",
        c.namespace,
        "prefix of every Redis key (`NS:queue:default`), to share one Redis between apps",
        ("--namespace",),
        env=("DJQUEUE_NAMESPACE",),
    ),
    Setting("default_queue", c.text(empty=False), "where a job with no `queue` option goes"),
    Setting(
        "queues",
        c.queues,
        "the queues a worker serves: names alone in strict order, `(name, weight)` for a "
        "weighted random order",
    ),
    Setting(
        "concurrency",
        c.integer(1),
        "jobs one worker process runs at once (threads)",
        ("-c", "--concurrency"),
        "N",
        int,
    ),
    Setting(
        "async_concurrency",
        c.integer(0),
        "`async def` jobs one worker process runs at once on its event loop",
        ("--async-concurrency",),
        "N",
        int,
    ),
    Setting(
        "processes",
        c.integer(0),
        "worker processes forked from one parent that imports the app once; `0`: one per core",
        ("-p", "--processes"),
        "N",
        int,
    ),
    Setting(
        "max_memory",
        c.integer(0),
        "replace a worker process whose resident memory grows over this many MB, once its "
        "running jobs are done; `0`: no limit",
        ("--max-memory",),
        "MB",
        int,
    ),
    Setting(
        "max_jobs",
        c.integer(0),
        "replace a worker process after this many jobs; `0`: no limit",
        ("--max-jobs",),
        "N",
        int,
    ),
    Setting(
        "timeout",
        c.seconds(),
        "seconds running jobs get to finish on shutdown (TERM, INT) before they are pushed "
        "back to their queues; under `--processes`, also how long past its `time_limit` a job "
        "may run before its process is replaced",
        ("-t", "--timeout"),
        "SECONDS",
        float,
    ),
    Setting("max_retries", c.integer(0), "what `retry=True` means"),
    Setting(
        "dead_max_jobs", c.integer(0), "how many jobs the dead set keeps (the oldest go first)"
    ),
    Setting("dead_timeout", c.seconds(), "seconds the dead set keeps a job (180 days)"),
    Setting(
        "batch_retention",
        c.seconds(),
        "seconds a batch's state (`djqueue.Batch`) is kept after its last change (7 days)",
    ),
    Setting(
        "heartbeat_interval",
        c.seconds(),
        "seconds between a worker's heartbeats; a worker silent for three intervals loses its "
        "jobs to the others",
    ),
    Setting(
        "poll_interval",
        c.seconds(),
        "seconds between looks for due scheduled jobs and retries, for the whole cluster",
    ),
    Setting(
        "sentinels",
        c.sentinels,
        'Redis Sentinel addresses, `[(host, port), ...]` or `["host:port", ...]`, with '
        "`sentinel_master`",
    ),
    Setting("sentinel_master", c.text(), "the master the sentinels name"),
    Setting(
        "socket_timeout",
        c.seconds(),
        "seconds a command may wait for Redis's answer before it counts as a failure",
    ),
    Setting("connect_timeout", c.seconds(), "seconds opening a connection to Redis may take"),
    Setting(
        "max_connections",
        c.pool_size,
        "connections of each process's pool for commands (and as many again for `result` "
        "waits); when all are in use, a command waits for one (`pool_timeout`)",
    ),
    Setting(
        "pool_timeout",
        c.seconds(),
        "seconds a command waits for a free connection before raising `djqueue.PoolExhausted`",
    ),
    Setting(
        "tag",
        c.text(),
        "shown next to the process in dashboards; empty: the current directory's name",
        ("--tag",),
    ),
    Setting(
        "labels",
        c.names("strings"),
        "text labels shown next to the process in dashboards (Sidekiq's labels)",
    ),
    Setting(
        "max_payload_bytes",
        c.integer(0),
        "the largest job JSON a push accepts, 16 MiB (`djqueue.PayloadTooLarge` beyond it)",
    ),
    Setting(
        "web_show_args",
        c.boolean,
        "`False` hides job arguments in the admin and the dashboard (they may hold personal data)",
    ),
    Setting(
        "metrics",
        c.boolean,
        "workers count per-job metrics (processed, failed, time, latency per job class and "
        "queue) and write them with each heartbeat, in Sidekiq 8's layout; `False` (`--metrics "
        "off`): not counted",
        ("--metrics",),
        "on|off",
        c.on_off,
    ),
    Setting(
        "periodic",
        _periodic,
        'periodic jobs declared in settings: name -> `{"cron", "class", "args", ...}` '
        "([Periodic jobs](periodic.md#declaring))",
    ),
    Setting(
        "default_job_options",
        _job_options,
        "options every job gets unless its decorator (or `.set()`) says otherwise, e.g. "
        '`{"retry": 5, "retention": 3600, "backtrace": 20}` (Sidekiq\'s '
        "`default_job_options`); the keys are the job options ([Jobs](jobs.md#options))",
    ),
)

INTEGRATION: tuple[Setting, ...] = (
    Setting(
        "ENQUEUE_ON_COMMIT",
        c.choice(True, False, "outbox"),
        "pushes made in a database transaction wait for its commit (Django: the outermost "
        "`transaction.atomic()`; Flask: a SQLAlchemy session in a transaction); "
        '`False`: written at once; `"outbox"`: written to the outbox table in the transaction',
        frameworks=(DJANGO, FLASK),
        default=True,
    ),
    Setting(
        "OUTBOX_RELAY",
        c.choice(True, False, None),
        "workers relay the outbox; `None`: when `ENQUEUE_ON_COMMIT` is `True` or "
        '`"outbox"` (a push that meets Redis down at commit is kept in the outbox table)',
        frameworks=(DJANGO, FLASK),
    ),
    Setting(
        "OUTBOX_GRACE",
        c.seconds(zero=True),
        "seconds a new outbox row is left to the process that wrote it before a relay takes it",
        frameworks=(DJANGO, FLASK),
        default=10.0,
    ),
    Setting(
        "REQUEST_ID_HEADER",
        c.text(empty=False),
        "the header a request id is read from and echoed to",
        frameworks=(DJANGO, FLASK),
        default="X-Request-ID",
    ),
    Setting(
        "METRICS_TOKEN",
        lambda value: None if value is None else c.text(empty=False)(value),
        "the bearer token a Prometheus scrape sends (`Authorization: Bearer ...`; Django: "
        "`djqueue/metrics`, Flask: the blueprint's `prometheus`); `None`: only a user allowed "
        "to view the dashboard "
        "reads it ([Deployment](deployment.md#prometheus))",
        frameworks=(DJANGO, FLASK),
    ),
    Setting(
        "DISCOVER",
        c.names("module names", "['jobs']"),
        "modules imported from every installed app at start-up",
        frameworks=(DJANGO,),
        default=("jobs",),
    ),
    Setting(
        "CONTEXT_KEYS",
        c.names("key names", "['tenant']"),
        "context keys that travel with jobs besides the request id, user id and language",
        frameworks=(DJANGO, FLASK),
        default=(),
    ),
    Setting(
        "TIME_ZONE",
        c.time_zone,
        'the time zone the dashboard shows times in (an IANA name, `"Europe/Paris"`); the '
        "exact UTC time shows on hover. Django's admin uses `TIME_ZONE` instead",
        frameworks=(FLASK,),
        default="UTC",
    ),
    Setting(
        "TESTING",
        lambda value: c.choice("fake", "inline", None)(value or None),
        '`"fake"` records this app\'s pushes, `"inline"` runs them '
        "([Testing](testing.md#flask)); `None` writes to Redis",
        frameworks=(FLASK,),
    ),
)


def keys(framework: str) -> dict[str, Setting]:
    """The keys ``framework`` takes (``DJQUEUE`` dict keys, or Flask's without the prefix)."""
    return {
        s.key: s for s in (*CORE, *INTEGRATION) if not s.frameworks or framework in s.frameworks
    }


def check_keys(values: Mapping[Any, Any], framework: str, prefix: str = "") -> None:
    """Refuse a key ``framework`` does not take (a misspelt ``CONCURRENCY`` would otherwise run
    with the default, silently), naming it as written (``prefix`` + key) with the likely fix."""
    known = keys(framework)
    for key in values:
        if isinstance(key, str) and key in known:
            continue
        name = f"{prefix}{key}"
        if isinstance(key, str) and key.upper() in known:
            raise ConfigurationError(
                name,
                f"keys are upper case, as the framework's settings are: write "
                f"{prefix + key.upper()!r}",
            )
        near = difflib.get_close_matches(str(key), known, n=1)
        hint = (
            f"did you mean {prefix}{near[0]}?"
            if near
            else f"known: {', '.join(prefix + k for k in known)}"
        )
        raise ConfigurationError(name, f"unknown djqueue setting ({hint})")


def check_integration(
    values: Mapping[str, Any], framework: str, prefix: str = ""
) -> dict[str, Any]:
    """``framework``'s own options from ``values`` (its keys, upper case, without ``prefix``),
    checked, with their defaults: ``{"ENQUEUE_ON_COMMIT": True, ...}``. A bad one raises
    `ConfigurationError` naming the key as the user wrote it (``prefix`` + key)."""
    return {
        s.name: s.validate(values[s.name], prefix + s.name) if s.name in values else s.default
        for s in INTEGRATION
        if framework in s.frameworks
    }
