"""The Dramatiq actor (``dramatiq bench.orm_project.dramatiq_actors``).

Written as a Dramatiq user without an integration package would: Django is set up when the
module is imported (in each worker process, since Dramatiq's processes import the module
themselves), and a middleware closes broken or expired connections before and after each
message, as Django does around a request, so each thread keeps its own connection.
"""

from __future__ import annotations

import os
from typing import Any

import django
import dramatiq
from dramatiq.brokers.redis import RedisBroker

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.orm_project.settings")
django.setup()

from django.db import close_old_connections  # noqa: E402

from . import work  # noqa: E402


class DatabaseConnections(dramatiq.Middleware):
    """Close old connections around each message (Django's request hooks, for a worker)."""

    def before_process_message(self, broker: Any, message: Any) -> None:
        close_old_connections()

    def after_process_message(
        self, broker: Any, message: Any, *, result: Any = None, exception: Any = None
    ) -> None:
        close_old_connections()


broker = RedisBroker(url=os.environ["BENCH_REDIS_URL"])
broker.add_middleware(DatabaseConnections())
dramatiq.set_broker(broker)


@dramatiq.actor
def touch(pk: int) -> None:
    work.touch(pk)
