"""The Celery app (``celery -A bench.orm_project.celery_app worker``).

As Celery's Django guide has it: ``DJANGO_SETTINGS_MODULE`` set before the app is made, so
Celery's Django fix-up sets Django up, closes the connections each prefork child inherits and
closes the database connections before and after each task. Everything else is Celery's
default (early acknowledgement, prefetch multiplier 4, no result backend).

That fix-up closes the connections around every task whatever ``CONN_MAX_AGE`` says, so each
task opens a new PostgreSQL connection, unless ``CELERY_DB_REUSE_MAX`` is set (then it closes
them every that many tasks). ``BENCH_CELERY_DB_REUSE_MAX`` sets it, for the benchmark's second
Celery setting: the job's cost without the connection set-up.
"""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.orm_project.settings")

app = Celery("orm_bench", broker=os.environ["BENCH_REDIS_URL"])
app.conf.broker_connection_retry_on_startup = True
if os.environ.get("BENCH_CELERY_DB_REUSE_MAX"):
    app.conf["CELERY_DB_REUSE_MAX"] = int(os.environ["BENCH_CELERY_DB_REUSE_MAX"])


@app.task(name="orm.touch")
def touch(pk: int) -> None:
    # Imported on first use: the fix-up sets Django up when the worker starts, after this
    # module is imported.
    from . import work

    work.touch(pk)
