"""``python manage.py runworker``: the djqueue worker with Django set up.

Takes the same flags as ``djqueue worker`` (``-q``, ``-c``, ``-t``, ``-r``, ...), each
defaulting to the ``DJQUEUE`` setting. By the time this runs, the app is ready: settings
installed, every app's jobs module imported, the database and request context middleware
around every job.
"""

from __future__ import annotations

import argparse
from typing import Any

from django.apps import apps
from django.core.management.base import BaseCommand, CommandError

#: Options every management command has; the rest are the worker's.
DJANGO_OPTIONS = frozenset(
    ("verbosity", "settings", "pythonpath", "traceback", "no_color", "force_color", "skip_checks")
)


class Command(BaseCommand):
    help = "Run a djqueue worker (launcher, processors, poller, heartbeat) until TERM or INT."

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        from djqueue.worker.cli import add_worker_arguments

        add_worker_arguments(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        from djqueue.worker.cli import run_worker

        error = apps.get_app_config("djqueue").settings_error
        if error is not None:
            raise CommandError(f"DJQUEUE setting {error}")
        worker_options = {k: v for k, v in options.items() if k not in DJANGO_OPTIONS}
        code = run_worker(worker_options)
        if code:
            raise SystemExit(code)
