"""``python manage.py djqueue stats|queues|status|periodic``: djqueue's reports for the Redis
the project's ``DJQUEUE`` setting names.

The plain ``djqueue`` command knows nothing of Django's settings (it reads the environment or
its flags); this one runs the same code (`djqueue.worker.cli.run_report`) with the project's
settings under the same flags, adds the outbox's figures from the database, and says which
Redis it read.
"""

from __future__ import annotations

import argparse
from typing import Any

from django.apps import apps
from django.core.management.base import BaseCommand, CommandError

from .runworker import DJANGO_OPTIONS


class Command(BaseCommand):
    help = "Print djqueue's stats, queues, a job's status or the periodic jobs (DJQUEUE's Redis)."

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        from djqueue.worker.cli import REPORTS, add_report_arguments

        commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
        for name, text in REPORTS.items():
            add_report_arguments(commands.add_parser(name, help=text, description=text), name)

    def handle(self, *args: Any, **options: Any) -> None:
        from djqueue import get_settings
        from djqueue.errors import DjQueueError
        from djqueue.worker.cli import run_report

        error = apps.get_app_config("djqueue").settings_error
        if error is not None:
            raise CommandError(f"DJQUEUE setting {error}")
        command = options.pop("command")
        report_options = {k: v for k, v in options.items() if k not in DJANGO_OPTIONS}
        try:
            outbox = _outbox() if command == "stats" else None
            answer = run_report(
                command, report_options, get_settings(), outbox, prog="python manage.py djqueue"
            )
        except DjQueueError as exc:
            raise CommandError(str(exc)) from None
        (self.stderr if answer.error else self.stdout).write(answer.text)
        self.stderr.write(answer.source, style_func=lambda text: text)
        if answer.code:
            raise SystemExit(answer.code)


def _outbox() -> Any:
    """The outbox's figures from the database when the outbox is in use."""
    from ...outbox import relay_enabled, stats

    return stats() if relay_enabled() else None
