"""Settings of the ORM benchmark's Django project.

The database and Redis come from the environment the benchmark sets for every worker it starts
(``BENCH_DATABASE_URL``, ``BENCH_REDIS_URL``), so all systems share one PostgreSQL database and
one private redis-server.

``CONN_MAX_AGE`` is 60 s, as a production app that runs jobs would set it: with Django's default
of 0, each system's per-job connection care (djqueue's middleware, Celery's Django fix-up, the
Dramatiq middleware here) would close the connection after every job, and the figures would be
PostgreSQL's connection start-up rather than the job. ``BENCH_CONN_MAX_AGE`` overrides it.
"""

from __future__ import annotations

import os
from urllib.parse import unquote, urlsplit

SECRET_KEY = "orm-bench-only"
DEBUG = False  # DEBUG keeps every query in memory: never in a worker
USE_TZ = True
TIME_ZONE = "UTC"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

INSTALLED_APPS = ["djqueue", "bench.orm_project"]

_db = urlsplit(
    os.environ.get("BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/djqueue_bench_orm")
)
DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": _db.path.lstrip("/"),
        "USER": unquote(_db.username or "postgres"),
        "PASSWORD": unquote(_db.password or ""),
        "HOST": _db.hostname or "127.0.0.1",
        "PORT": str(_db.port or 5432),
        "CONN_MAX_AGE": int(os.environ.get("BENCH_CONN_MAX_AGE", "60")),
    }
}

DJQUEUE = {
    "REDIS_URL": os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/0"),
    "QUEUES": ["default"],
}
