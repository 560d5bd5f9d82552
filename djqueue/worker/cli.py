"""The ``djqueue`` command: ``worker`` runs the runtime; ``stats``, ``queues``, ``status`` and
``periodic`` print what the inspection API sees (`djqueue.api.report`), through `run_report`,
which ``manage.py djqueue`` and ``flask djqueue`` run too.

    djqueue worker -r myapp.jobs -q critical,3 -q default -c 10
    djqueue worker --app myapp:create_app -q default      # a Flask app (flask_djqueue)

The Django ``runworker`` and Flask ``flask djqueue worker`` commands add the same flags with
`add_worker_arguments` and call `run_worker`, so every way of starting a worker shares this path,
and the flags mean the same everywhere: given on the command line, they win over whatever the
settings, the imported modules and the app configure.
"""

from __future__ import annotations

import argparse
import atexit
import dataclasses
import functools
import importlib
import importlib.util
import inspect
import os
import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import __version__, config, setting_table, signals
from ..config import Settings
from ..errors import ConfigurationError, DjQueueError

#: The settings that have a worker flag (`djqueue.setting_table`), by argparse dest.
_FLAGGED = tuple(setting for setting in setting_table.CORE if setting.flags)

if TYPE_CHECKING:
    from ..outbox import OutboxStats


def add_worker_arguments(
    parser: argparse.ArgumentParser,
    settings: Settings | None = None,
    setting_name: Callable[[str], str] = lambda name: f"the setting {name!r}",
) -> None:
    """Add the worker flags; every default is None ("not given"), so the settings decide.

    The help shows what applies when a flag is not given: the setting's name as the caller
    spells it (Django: ``DJQUEUE['CONCURRENCY']``) and its value in ``settings`` (default:
    the process-wide settings), not the library's defaults.
    """
    try:
        now = settings or config.get_settings()
    except ConfigurationError:  # a bad setting: --help still works, showing the defaults
        now = Settings()

    def default(name: str, value: Any) -> str:
        return f"default: {setting_name(name)}, now {value}"

    queues = " ".join(f"{n},{w}" if w else n for n, w in now.queues)
    parser.add_argument(
        "-r",
        "--require",
        action="append",
        metavar="MODULE",
        default=None,
        help="import MODULE (dotted name, or a path to a .py file) before starting, so its "
        "jobs are registered; repeatable. Only registered jobs run",
    )
    parser.add_argument(
        "-q",
        "--queue",
        action="append",
        metavar="NAME[,WEIGHT]",
        default=None,
        help="a queue to work on, optionally with a weight; repeatable. Without weights the "
        "queues are tried in the order given (strict); with weights each fetch picks a "
        f"weighted random order ({default('queues', queues)})",
    )
    for setting in _FLAGGED:
        parser.add_argument(
            *setting.flags,
            type=setting.arg_type,
            default=None,
            metavar=setting.metavar,
            help=_flag_help(setting, default(setting.name, _shown(now, setting.name))),
        )
    parser.add_argument(
        "--redis-url-file",
        default=None,
        metavar="PATH",
        help="read the Redis URL from the first line of PATH (e.g. a mounted secret), so the "
        "password stays out of ps and shell history",
    )
    parser.add_argument(
        "--burst",
        action="store_true",
        default=None,
        help="run until the queues are empty and no job runs, then exit 0 (jobs scheduled "
        "for later, and retries, stay for the next worker); one worker process",
    )
    parser.add_argument(
        "--health-file",
        default=None,
        metavar="PATH",
        help="write PATH at every heartbeat (even while Redis is away), for djqueue health "
        "--health-file PATH in a liveness probe",
    )
    parser.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        default=None,
        help="log at DEBUG level",
    )
    parser.add_argument(
        "-L",
        "--logfile",
        default=None,
        metavar="PATH",
        help="append the log to PATH instead of stderr (reopened when rotated)",
    )
    parser.add_argument(
        "--json-logs",
        action="store_true",
        default=None,
        help="one JSON object per log line",
    )


def _shown(settings: Settings, name: str) -> str:
    """A setting's value as the worker's help shows it (a URL without its password)."""
    if name == "redis_url":
        return settings.safe_redis_url
    value = getattr(settings, name)
    if isinstance(value, float):
        return f"{value:g}"
    return str(value) if value != "" else "none"


def _flag_help(setting: setting_table.Setting, default: str) -> str:
    """The flag's help: the setting's, then what applies without the flag."""
    env = f"; {' or '.join(setting.env)} in the environment" if setting.env else ""
    return f"{setting.help.replace('`', '')} ({default}{env})".replace("%", "%%")


def effective_settings(options: dict[str, Any], settings: Settings) -> Settings:
    """``settings`` with the given options on top; a bad value fails with its setting's name."""
    changes: dict[str, Any] = {
        s.name: options[s.name] for s in _FLAGGED if options.get(s.name) is not None
    }
    if options.get("redis_url_file"):
        if options.get("redis_url"):
            raise ConfigurationError("redis_url_file", "give --redis-url or --redis-url-file")
        changes["redis_url"] = read_url_file(options["redis_url_file"])
    if options.get("queue"):
        changes["queues"] = config.parse_queues(options["queue"])
    return settings.replace(**changes) if changes else settings


def read_url_file(path: str) -> str:
    """The first line of ``path``, stripped; the file is named in errors, its content never."""
    try:
        with open(path, encoding="utf-8") as file:
            url = file.readline().strip()
    except OSError as exc:
        raise ConfigurationError("redis_url_file", f"cannot read {path}: {exc.strerror}") from None
    if not url:
        raise ConfigurationError("redis_url_file", f"{path} holds no URL on its first line")
    return url


def install(settings: Settings) -> None:
    """Make ``settings`` the process-wide ones and pin them (`djqueue.config.pin`), so jobs
    that push jobs use the worker's Redis and namespace, whichever app's context they run in."""
    fields = {
        f.name: getattr(settings, f.name) for f in dataclasses.fields(Settings) if f.name != "extra"
    }
    config.pin(config.configure(**fields))


def require(modules: list[str]) -> None:
    """Import the modules that register jobs, from the current directory like ``python -m``."""
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    for name in modules:
        if name.endswith(".py") or os.sep in name:
            path = Path(name).resolve()
            if not path.is_file():
                raise ConfigurationError("require", f"no such file: {name}")
            spec = importlib.util.spec_from_file_location(path.stem, path)
            if spec is None or spec.loader is None:
                raise ConfigurationError("require", f"cannot import {name}")
            module = importlib.util.module_from_spec(spec)
            sys.modules[path.stem] = module
            spec.loader.exec_module(module)
        else:
            importlib.import_module(name)


def load_app(spec: str) -> Any:
    """The app named by ``MODULE:NAME`` (``--app``): NAME is an app object, or a function
    that returns one (an app factory, called with no arguments; ``NAME()`` works too).
    Without ``:NAME``, the module's ``app``, else its ``create_app``."""
    module_name, _, name = spec.partition(":")
    if not module_name or spec.count(":") > 1:
        raise ConfigurationError(
            "app", f"expected MODULE:NAME (e.g. myapp:create_app), got {spec!r}"
        )
    require([module_name])
    module = sys.modules[module_name]
    call = name.endswith("()")
    name = name.removesuffix("()")
    candidates = [name] if name else ["app", "create_app"]
    found = next((getattr(module, n) for n in candidates if hasattr(module, n)), None)
    if found is None:
        raise ConfigurationError(
            "app", f"module {module_name!r} has no {' or '.join(repr(n) for n in candidates)}"
        )
    if call or inspect.isfunction(found):
        found = found()
    return found


def prepare(app: Any = None) -> None:
    """Send `djqueue.signals.worker_preparing`; an ``app`` no integration takes is an error."""
    answers = signals.worker_preparing.send(app)
    if app is not None and not any(value for _, value in answers):
        raise ConfigurationError(
            "app",
            f"no djqueue integration takes {type(app).__name__} objects as the worker's app "
            "(for Flask: call DjQueue(app), or init_app(app) in the factory)",
        )


def run_worker(
    options: dict[str, Any],
    settings: Settings | None = None,
    app: Any = None,
    parent: int | None = None,
) -> int:
    """Run the full runtime until TERM/INT; returns the exit code.

    ``parent``: the pid of a process this one must not outlive (a reloader's), checked at
    every heartbeat.

    ``options`` are the argparse dests of `add_worker_arguments` (None = not given), plus
    ``app`` (``--app MODULE:NAME``). The modules of ``-r`` are imported and the app loaded
    (or ``app`` taken as given by a framework's command) first, then `prepare` lets the
    framework set the app up; only then are the settings read (``settings``, else those in
    force: the app's, the process's), so the options given always win over what imports
    configured. Signal handlers are installed when called from the main thread.
    """
    from . import log
    from .swarm import Swarm, process_count

    handler = log.setup(
        verbose=bool(options.get("verbose")),
        logfile=options.get("logfile"),
        json_logs=bool(options.get("json_logs")),
    )
    stuck: list[threading.Thread] = []
    try:
        require(list(options.get("require") or ()))
        if options.get("app"):
            app = load_app(options["app"])
        prepare(app)
        install(effective_settings(options, settings or config.get_settings()))
        try:
            s = config.get_settings()
            burst = bool(options.get("burst"))
            if burst and s.processes != 1:
                raise ConfigurationError("burst", "--burst runs one worker process: -p 1")
            health_file = options.get("health_file")
            if burst or (s.processes == 1 and not (s.max_memory or s.max_jobs)):
                code = run_launcher(parent, burst, health_file)
            else:
                if threading.current_thread() is not threading.main_thread():
                    raise ConfigurationError("processes", "a swarm runs in the main thread only")
                child = functools.partial(run_launcher, health_file=health_file)
                code = Swarm(process_count(s.processes), child).run()
        finally:
            config.pin(None)
        if threading.current_thread() is threading.main_thread():
            stuck = [
                t
                for t in threading.enumerate()
                if not t.daemon and t is not threading.main_thread() and t.is_alive()
            ]
        if stuck:
            log.logger.warning(
                "exiting although a job left %d thread(s) running: %s",
                len(stuck),
                ", ".join(t.name for t in stuck),
            )
    finally:
        log.teardown(handler)
    if stuck:
        # Jobs are settled and the log is flushed; a thread a job started (not a daemon)
        # would keep the process alive forever after "bye", so the process leaves anyway.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code


def run_launcher(
    parent: int | None = None, burst: bool = False, health_file: str | None = None
) -> int:
    """One worker process, with the settings in force, until TERM/INT (or its recycling, or,
    with ``burst``, until the queues are empty); ``parent`` is the pid of the process it stops
    without (a swarm's parent, a reloader); ``health_file``: written at every beat. In a
    swarm every child writes it: it holds the latest beat of any (the parent replaces a child
    that dies)."""
    from .launcher import Launcher

    launcher = Launcher(config.get_settings())
    launcher.parent = parent
    launcher.burst = burst
    launcher.heartbeat.health_file = health_file
    restore = _install_signal_handlers(launcher.signal)
    if threading.current_thread() is threading.main_thread():
        # A swarm's worker process starts with them blocked (`djqueue.worker.swarm`).
        signal.pthread_sigmask(signal.SIG_UNBLOCK, HANDLED_SIGNALS)
    in_main = threading.current_thread() is threading.main_thread()
    if not in_main:
        # Run from a thread (a framework's autoreloader): leave like on TERM when the
        # interpreter exits (a reload), instead of being cut off with jobs running.
        atexit.register(_stop_at_exit, launcher)
    try:
        return launcher.run()
    finally:
        restore()
        if not in_main:
            atexit.unregister(_stop_at_exit)


def _stop_at_exit(launcher: Any) -> None:
    if not launcher.stopped.is_set():
        launcher.signal("TERM")
        launcher.stopped.wait(launcher.settings.timeout + 5)


#: The signals a worker process acts on.
HANDLED_SIGNALS = {signal.SIGTERM, signal.SIGINT, signal.SIGTSTP, signal.SIGTTIN}


def _install_signal_handlers(notify: Callable[[str], None]) -> Callable[[], None]:
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    previous: dict[int, Any] = {}
    for name in ("TERM", "INT", "TSTP", "TTIN"):
        signum = getattr(signal, f"SIG{name}", None)
        if signum is None:
            continue

        def handler(_signum: int, _frame: Any, name: str = name) -> None:
            notify(name)

        previous[signum] = signal.signal(signum, handler)

    def restore() -> None:
        for signum, old in previous.items():
            signal.signal(signum, old)

    return restore


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="djqueue", description="Background jobs on Redis, in Sidekiq's wire format."
    )
    parser.add_argument("--version", action="version", version=f"djqueue {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    worker = commands.add_parser(
        "worker",
        help="run a worker process",
        description="Run jobs from the queues until TERM or INT. TSTP: stop fetching "
        "(quiet); TTIN: log every thread's stack.",
    )
    add_worker_arguments(worker)
    worker.add_argument(
        "--app",
        default=None,
        metavar="MODULE:FACTORY",
        help="run every job in this app's context, with its settings (a Flask app set up "
        "with flask_djqueue): an app object or a factory called with no arguments, e.g. "
        "myapp:create_app. The flags above still win over the app's settings",
    )
    for name, text in REPORTS.items():
        add_report_arguments(commands.add_parser(name, help=text, description=text), name)
    return parser


#: What ``djqueue periodic`` can do.
PERIODIC_ACTIONS = ("list", "enable", "disable", "run", "delete")


def add_action_arguments(
    parser: argparse.ArgumentParser, actions: tuple[str, ...], what: str, named: str
) -> None:
    """``[ACTION [NAME]]`` of a report command that can also act on one thing (``periodic``,
    ``queues``), for every command of that name (the frameworks' too, so their help says
    the same): ``list`` by default, else one of ``actions`` (``what`` says each) on NAME."""
    parser.add_argument("action", nargs="?", default="list", choices=actions, help=what)
    parser.add_argument("name", nargs="?", help=named)


def periodic_command(
    action: str, name: str | None, settings: Settings, prog: str = "djqueue periodic"
) -> tuple[int, str]:
    """``djqueue periodic [ACTION NAME]``: (exit code, what to print). ``prog``: the command
    as the user typed it (``flask djqueue periodic``), which the messages name."""
    from .. import report as reports
    from ..api.periodic import PeriodicSet

    if action == "list":
        return 0, reports.periodic(settings)
    if not name:
        return 2, f"{prog} {action} needs the job's name"
    entry = PeriodicSet(settings=settings).find(name)
    if entry is None:
        return 1, f"no periodic job named {name!r} ({prog} lists them)"
    if action in ("enable", "disable"):
        done = entry.enable() if action == "enable" else entry.disable()
        if not done:
            return 1, f"{name}: not {action}d: {entry.error or 'it is gone'}"
        return 0, f"{name}: {action}d"
    if action == "run":
        jid = entry.run_now()
        if jid:
            return 0, f"{name}: pushed {jid}"
        return 1, f"{name}: not pushed" + (f": {entry.error}" if entry.error else "")
    entry.delete()
    note = " (declared in code: it comes back at the next worker start)" if entry.declared else ""
    return 0, f"{name}: deleted{note}"


#: What ``djqueue queues`` can do.
QUEUES_ACTIONS = ("list", "pause", "resume")


#: The report commands that also act on one thing: their actions, what each does, and what
#: NAME names (`add_action_arguments`).
ACTION_ARGUMENTS: dict[str, tuple[tuple[str, ...], str, str]] = {
    "periodic": (
        PERIODIC_ACTIONS,
        "list (the default), or act on the job NAME: enable, disable, run (push "
        "it now), delete (a job declared in code comes back at the next worker start)",
        "the periodic job's name",
    ),
    "queues": (
        QUEUES_ACTIONS,
        "list (the default), or pause NAME (every worker stops taking its jobs within "
        "a heartbeat; they stay, pushes still land) or resume NAME",
        "the queue's name",
    ),
}


def queues_command(
    action: str, name: str | None, settings: Settings, prog: str = "djqueue queues"
) -> tuple[int, str]:
    """``djqueue queues [pause|resume NAME]``: (exit code, what to print)."""
    from .. import report as reports
    from ..api import Queue

    if action == "list":
        return 0, reports.queues(settings)
    if not name:
        return 2, f"{prog} {action} needs the queue's name"
    try:
        queue = Queue(name, settings=settings)
        changed = queue.pause() if action == "pause" else queue.resume()
    except ValueError as exc:
        return 2, f"{prog} {action}: {exc}"
    beat = f"{settings.heartbeat_interval:g} s"
    if action == "pause":
        already = "" if changed else " (it was paused already)"
        return 0, f"{name}: paused{already}; workers take no job from it within {beat}"
    if not changed:
        return 0, f"{name}: was not paused"
    return 0, f"{name}: resumed; workers take its jobs again within {beat}"


#: The report commands and what they print.
REPORTS = {
    "stats": "print processed/failed counts and set sizes",
    "queues": "print each queue's size and latency, or pause or resume one",
    "status": "print a tracked job's state, times, attempts, error and result",
    "periodic": "list periodic jobs (last and next run), or enable, disable, run or delete one",
    "metrics": "print the figures in Prometheus' text exposition format (needs the "
    "prometheus extra): for a textfile collector or a sidecar",
    "limits": "print each limiter's kind, limit, use now and refusals",
    "health": "exit 0 when the worker on this host beat recently and is not stuck, else 1 "
    "with the reason (a probe's command)",
}


def add_report_arguments(parser: argparse.ArgumentParser, command: str = "stats") -> None:
    """The flags of a report command (`REPORTS`): which Redis to read, and the command's own
    arguments (``status JID``, ``periodic [ACTION NAME]``, ``queues [ACTION NAME]``)."""
    parser.add_argument("--redis-url", default=None, metavar="URL", help="Redis to read")
    parser.add_argument(
        "--redis-url-file", default=None, metavar="PATH", help="read the URL from PATH"
    )
    parser.add_argument("--namespace", default=None, help="prefix of every Redis key")
    if command == "status":
        parser.add_argument("jid", help="the job's id")
    if command in ACTION_ARGUMENTS:
        add_action_arguments(parser, *ACTION_ARGUMENTS[command])
    if command == "health":
        add_health_arguments(parser)


def add_health_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of ``health`` (`djqueue.health`)."""
    parser.add_argument(
        "--health-file",
        default=None,
        metavar="PATH",
        help="read the beat from PATH, which the worker writes (its --health-file), not from "
        "Redis: for a liveness probe that a Redis outage does not fail",
    )
    parser.add_argument(
        "--max-age",
        type=float,
        default=None,
        metavar="SECONDS",
        help="a beat older than this is stale (default: 3 heartbeat intervals)",
    )
    parser.add_argument(
        "--max-job-seconds",
        type=float,
        default=None,
        metavar="SECONDS",
        help="a job running longer than this makes the worker stuck (default: no limit)",
    )
    parser.add_argument(
        "--ready",
        action="store_true",
        help="also fail when the worker is quiet (takes no new job): for a readiness probe",
    )


@dataclasses.dataclass(frozen=True)
class Report:
    """What a report command answers: its exit code, its text (for stdout, or for stderr when
    it is an ``error``) and ``source``, the Redis it read (password hidden), which every front
    end prints after it on stderr, so that stdout stays the figures alone."""

    code: int
    text: str
    source: str
    error: bool = False


def run_report(
    command: str,
    options: dict[str, Any],
    settings: Settings,
    outbox: OutboxStats | None = None,
    prog: str = "djqueue",
) -> Report:
    """Run the report command ``command`` (`REPORTS`) with the parsed ``options`` of
    `add_report_arguments` on top of ``settings``: the one implementation behind ``djqueue
    stats``, ``manage.py djqueue stats`` and ``flask djqueue stats`` (and queues, status,
    periodic). ``outbox``: the outbox's figures, when a framework command could read its
    database. ``prog``: the command as the user types it (``flask djqueue``), which messages
    name."""
    from .. import report as reports

    effective = effective_settings(options, settings)
    namespace = f" (namespace {effective.namespace})" if effective.namespace else ""
    source = f"(read from Redis at {effective.safe_redis_url}{namespace})"
    if command == "periodic":
        code, text = periodic_command(
            options["action"], options["name"], effective, f"{prog} periodic"
        )
        return Report(code, text, source, error=code != 0)
    if command == "status":
        jid = options["jid"]
        text = reports.job_status(jid, effective)
        return Report(1 if text.startswith(f"job {jid}: unknown") else 0, text, source)
    if command == "health":
        from ..health import check

        code, text = check(
            effective,
            options.get("health_file"),
            options.get("max_age"),
            options.get("max_job_seconds"),
            bool(options.get("ready")),
        )
        if options.get("health_file"):
            source = f"(read from {options['health_file']})"
        return Report(code, text, source, error=code != 0)
    if command == "stats":
        return Report(0, reports.stats(effective, outbox), source)
    if command == "limits":
        return Report(0, reports.limits(effective), source)
    if command == "queues":
        code, text = queues_command(
            options.get("action") or "list", options.get("name"), effective, f"{prog} queues"
        )
        return Report(code, text, source, error=code != 0)
    if command == "metrics":
        from ..contrib.prometheus import exposition

        return Report(0, exposition(effective).rstrip("\n"), source)
    return Report(0, reports.queues(effective), source)


def main(argv: list[str] | None = None) -> int:
    """Console script ``djqueue``: ``worker``, and the reports of `REPORTS`."""
    parser = build_parser()
    args = parser.parse_args(argv)
    options = vars(args)
    command = options.pop("command")
    try:
        if command == "worker":
            return run_worker(options)
        found = run_report(command, options, config.get_settings())
    except DjQueueError as exc:
        print(f"djqueue: {exc}", file=sys.stderr)
        return 1
    hint = ""
    if os.environ.get("DJANGO_SETTINGS_MODULE") and not (
        options.get("redis_url") or options.get("redis_url_file")
    ):
        hint = f" (not Django's DJQUEUE setting: python manage.py djqueue {command} reads it)"
    print(found.text, file=sys.stderr if found.error else sys.stdout, flush=True)
    print(found.source + hint, file=sys.stderr)
    return found.code


if __name__ == "__main__":
    sys.exit(main())
