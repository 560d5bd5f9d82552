"""``flask djqueue``: the worker and the reports, on the app's own command line.

``flask --app myapp djqueue worker -q critical,3 -q default -c 20`` finds the app as every
``flask`` command does (``--app``, ``FLASK_APP``, ``wsgi.py``/``app.py``), and runs djqueue's
worker with it: every job in the app's context, the app's ``DJQUEUE_*`` settings under the
flags given. The flags are djqueue's own (`djqueue.worker.cli.add_worker_arguments`, parsed by
the same argparse code as ``djqueue worker``), so they cannot drift apart, and ``--help`` shows
each flag's value in this app. ``stats``, ``queues``, ``status`` and ``periodic`` print what the
``djqueue`` commands of those names print (`djqueue.worker.cli.run_report`), for the app's
Redis and namespace.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback

import click
from flask import Flask, current_app
from flask.cli import AppGroup, ScriptInfo

from djqueue.errors import DjQueueError
from djqueue.worker.cli import (
    REPORTS,
    add_report_arguments,
    add_worker_arguments,
    run_report,
    run_worker,
)

from .config import PREFIX
from .state import AppState, state_of

group = AppGroup("djqueue", help="Run a djqueue worker for this app, or print its queues.")

# Every argument goes to djqueue's own argparse parser, --help included.
_RAW = {"ignore_unknown_options": True, "allow_extra_args": True, "help_option_names": []}


def _app(app: Flask | None = None) -> tuple[Flask, AppState]:
    """``app`` (default: the current one) and its DjQueue state."""
    if app is None:
        app = current_app._get_current_object()  # type: ignore[attr-defined]
    found = state_of(app)
    if found is None:  # the group was added by hand to an app without DjQueue
        raise click.ClickException(f"the app {app.name!r} is not set up with DjQueue")
    return app, found


@group.command("worker", context_settings=_RAW, add_help_option=False, with_appcontext=False)
@click.pass_context
def worker(ctx: click.Context) -> None:
    """Run jobs from the queues until TERM or INT (flags: --help).

    The command loads the app itself: with ``--reload``, an app that fails to import (a syntax
    error saved in a job module it imports) must not end the reloader, or nobody would be
    watching when the file is fixed. The error is then raised in the reloader's worker thread,
    which reports it, and the next change restarts the process, as ``flask run`` does."""
    info = ctx.ensure_object(ScriptInfo)
    broken: list[str] = []  # the files of a failed import, for the reloader to watch
    try:
        app, found = _app(info.load_app())
    except Exception as exc:
        if "--reload" not in ctx.args:
            raise
        app, found = None, None  # loaded again, and reported, in the reloader's thread
        broken = _files_of(exc)
    parser = argparse.ArgumentParser(
        prog="flask djqueue worker",
        description="Run this app's jobs from the queues until TERM or INT, each in the app's "
        "context. TSTP: stop fetching (quiet); TTIN: log every thread's stack.",
    )
    add_worker_arguments(
        parser, found.settings if found else None, lambda name: PREFIX + name.upper()
    )
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
            try:
                target = app if app is not None else _app(info.load_app())[0]
            except Exception:
                sys.stderr.write(
                    "djqueue: the app failed to load (below); the worker starts once the file "
                    "is fixed\n"
                )
                raise
            run_worker(options, app=target, parent=os.getppid())

        # Files given with -r may lie outside sys.path, which Werkzeug's watchdog-based
        # reloader watches (its polling one reads every imported module's file): name them.
        given = [name for name in options.get("require") or () if name.endswith(".py")]
        run_with_reloader(run, extra_files=[*(os.path.abspath(name) for name in given), *broken])
        return
    try:
        code = run_worker(options, app=app)
    except DjQueueError as exc:
        raise click.ClickException(str(exc)) from None
    ctx.exit(code)


def _files_of(exc: BaseException) -> list[str]:
    """The files an import error passed through, and the file a SyntaxError is in: Werkzeug's
    watchdog reloader watches the folders of imported modules only, and these failed to be."""
    files = [frame.filename for frame in traceback.extract_tb(exc.__traceback__)]
    if isinstance(exc, SyntaxError) and exc.filename:
        files.append(exc.filename)
    return [os.path.abspath(name) for name in dict.fromkeys(files) if os.path.isfile(name)]


def _report(command: str, args: list[str]) -> None:
    """``flask djqueue stats`` (queues, status, periodic): djqueue's one implementation
    (`djqueue.worker.cli.run_report`) with this app's settings, and its database's outbox."""
    app, found = _app()
    parser = argparse.ArgumentParser(
        prog=f"flask djqueue {command}", description=REPORTS[command] + " (this app's Redis)"
    )
    add_report_arguments(parser, command)
    try:
        options = vars(parser.parse_args(args))
        outbox = None
        if command == "stats" and found.options.relays_outbox:
            from .outbox import stats

            outbox = stats(app)  # from the database: this command has the app
        answer = run_report(command, options, found.settings, outbox, prog="flask djqueue")
    except DjQueueError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(answer.text, err=answer.error)
    click.echo(answer.source, err=True)
    click.get_current_context().exit(answer.code)


def _add_report(command: str) -> None:
    @click.pass_context
    def run(ctx: click.Context) -> None:
        _report(command, ctx.args)

    run.__doc__ = REPORTS[command][0].upper() + REPORTS[command][1:] + " (flags: --help)."
    group.command(command, context_settings=_RAW, add_help_option=False)(run)


for _command in REPORTS:
    _add_report(_command)
