"""``python manage.py runworker``: the djqueue worker with Django set up.

Takes the same flags as ``djqueue worker`` (``-q``, ``-c``, ``-t``, ``-r``, ...), each
defaulting to the ``DJQUEUE`` setting. By the time this runs, the app is ready: settings
installed, every app's jobs module imported, the database and request context middleware
around every job.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any, cast

from django.apps import apps
from django.core.management.base import BaseCommand, CommandError

#: Options every management command has; the rest are the worker's.
DJANGO_OPTIONS = frozenset(
    ("verbosity", "settings", "pythonpath", "traceback", "no_color", "force_color", "skip_checks")
)


class _SkipTaken:
    """Adds arguments minus option strings Django already uses: ``-v`` stays ``--verbosity``,
    the worker's ``--verbose`` keeps its long form."""

    def __init__(self, parser: argparse.ArgumentParser) -> None:
        self.parser = parser

    def add_argument(self, *names: str, **kwargs: Any) -> argparse.Action:
        taken = {s for action in self.parser._actions for s in action.option_strings}
        return self.parser.add_argument(*[n for n in names if n not in taken], **kwargs)


class Command(BaseCommand):
    help = "Run a djqueue worker (launcher, processors, poller, heartbeat) until TERM or INT."

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        from djqueue.worker.cli import add_worker_arguments

        add_worker_arguments(
            cast(argparse.ArgumentParser, _SkipTaken(parser)),
            setting_name=lambda name: f"DJQUEUE[{name.upper()!r}]",
        )
        parser.add_argument(
            "--reload",
            action="store_true",
            help="restart the worker when a Python file changes (Django's autoreloader, as "
            "runserver uses it); for development: running jobs get --timeout to finish",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        from djqueue import signals
        from djqueue.worker.cli import run_worker

        from ...task_priority import listened

        error = apps.get_app_config("djqueue").settings_error
        if error is not None:
            raise CommandError(f"DJQUEUE setting {error}")
        worker_options = {k: v for k, v in options.items() if k not in DJANGO_OPTIONS}
        worker_options["queue"] = listened(worker_options.get("queue"))
        if worker_options.pop("reload", False):
            from django.utils import autoreload

            if worker_options.get("processes") not in (None, 1):
                raise CommandError("--reload runs one worker process: leave out --processes")

            def run() -> None:
                # An error a jobs module raised at start-up (`discovery`) is raised here, in
                # the reloader's worker thread: reported, and the reloader watches on.
                try:
                    autoreload.raise_last_exception()
                except Exception:
                    sys.stderr.write(
                        "djqueue: a jobs module failed to import (below); the worker starts "
                        "once the file is fixed\n"
                    )
                    raise
                # The worker stops with the reloader's process if that one is killed.
                run_worker(worker_options, parent=os.getppid())

            autoreload.run_with_reloader(run)
            return
        signals.worker_forking.connect(close_connections)
        try:
            code = run_worker(worker_options)
        finally:
            signals.worker_forking.disconnect(close_connections)
        if code:
            raise SystemExit(code)


def close_connections(_sender: Any) -> None:
    """Before ``--processes`` forks a worker: no database connection crosses the fork, each
    worker process opens its own."""
    from django.db import connections

    connections.close_all()
