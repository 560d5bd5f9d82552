"""``flask djqueue``: the worker and the reports, on the app's own command line.

``flask --app myapp djqueue worker -q critical,3 -q default -c 20`` finds the app as every
``flask`` command does (``--app``, ``FLASK_APP``, ``wsgi.py``/``app.py``), and runs djqueue's
worker with it: every job in the app's context, the app's ``DJQUEUE_*`` settings under the
flags given. The flags are djqueue's own (`djqueue.worker.cli.add_worker_arguments`, parsed by
the same argparse code as ``djqueue worker``), so they cannot drift apart, and ``--help`` shows
each flag's value in this app. ``stats``, ``queues`` and ``periodic`` print what the ``djqueue``
commands of those names print, for the app's Redis and namespace.
"""

from __future__ import annotations

import argparse
import os

import click
from flask import Flask, current_app
from flask.cli import AppGroup

from djqueue.errors import DjQueueError
from djqueue.worker.cli import (
    REPORTS,
    add_periodic_arguments,
    add_report_arguments,
    add_worker_arguments,
    effective_settings,
    periodic_command,
    report,
    run_worker,
)

from .config import PREFIX
from .state import AppState, state_of

group = AppGroup("djqueue", help="Run a djqueue worker for this app, or print its queues.")

# Every argument goes to djqueue's own argparse parser, --help included.
_RAW = {"ignore_unknown_options": True, "allow_extra_args": True, "help_option_names": []}


def _app() -> tuple[Flask, AppState]:
    app: Flask = current_app._get_current_object()  # type: ignore[attr-defined]
    found = state_of(app)
    if found is None:  # the group was added by hand to an app without DjQueue
        raise click.ClickException(f"the app {app.name!r} is not set up with DjQueue")
    return app, found


@group.command("worker", context_settings=_RAW, add_help_option=False)
@click.pass_context
def worker(ctx: click.Context) -> None:
    """Run jobs from the queues until TERM or INT (flags: --help)."""
    app, found = _app()
    parser = argparse.ArgumentParser(
        prog="flask djqueue worker",
        description="Run this app's jobs from the queues until TERM or INT, each in the app's "
        "context. TSTP: stop fetching (quiet); TTIN: log every thread's stack.",
    )
    add_worker_arguments(parser, found.settings, lambda name: PREFIX + name.upper())
    parser.add_argument(
        "--reload",
        action="store_true",
        help="restart the worker when a Python file changes (Werkzeug's reloader, as `flask "
        "run --reload` uses it); for development: running jobs get --timeout to finish",
    )
    options = vars(parser.parse_args(ctx.args))
    if options.pop("reload"):
        if options.get("processes") not in (None, 1):
            raise click.ClickException("--reload runs one worker process: leave out --processes")
        from werkzeug._reloader import run_with_reloader

        def run() -> None:  # stops with the reloader's process if that one is killed
            run_worker(options, app=app, parent=os.getppid())

        # Files given with -r may lie outside sys.path, which Werkzeug's watchdog-based
        # reloader watches (its polling one reads every imported module's file): name them.
        given = [name for name in options.get("require") or () if name.endswith(".py")]
        run_with_reloader(run, extra_files=[os.path.abspath(name) for name in given])
        return
    try:
        code = run_worker(options, app=app)
    except DjQueueError as exc:
        raise click.ClickException(str(exc)) from None
    ctx.exit(code)


def _report(command: str, args: list[str]) -> None:
    app, found = _app()
    parser = argparse.ArgumentParser(
        prog=f"flask djqueue {command}", description=REPORTS[command] + " (this app's Redis)"
    )
    add_report_arguments(parser)
    try:
        options = vars(parser.parse_args(args))
        outbox = None
        if command == "stats" and found.options.relays_outbox:
            from .outbox import stats

            outbox = stats(app)  # from the database: this command has the app
        click.echo(report(command, options, found.settings, outbox))
    except DjQueueError as exc:
        raise click.ClickException(str(exc)) from None


@group.command("stats", context_settings=_RAW, add_help_option=False)
@click.pass_context
def stats(ctx: click.Context) -> None:
    """Print processed/failed counts and set sizes."""
    _report("stats", ctx.args)


@group.command("queues", context_settings=_RAW, add_help_option=False)
@click.pass_context
def queues(ctx: click.Context) -> None:
    """Print each queue's size and latency."""
    _report("queues", ctx.args)


@group.command("periodic", context_settings=_RAW, add_help_option=False)
@click.pass_context
def periodic(ctx: click.Context) -> None:
    """List periodic jobs, or enable, disable, run or delete one (flags: --help)."""
    _, found = _app()
    parser = argparse.ArgumentParser(
        prog="flask djqueue periodic", description=REPORTS["periodic"] + " (this app's Redis)"
    )
    add_report_arguments(parser)
    add_periodic_arguments(parser)
    options = vars(parser.parse_args(ctx.args))
    action, name = options.pop("action"), options.pop("name")
    try:
        settings = effective_settings(options, found.settings)
        code, text = periodic_command(action, name, settings, parser.prog)
    except DjQueueError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(text, err=code != 0)
    ctx.exit(code)
