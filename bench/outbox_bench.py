"""What the transactional outbox costs a web process: ``perform_later`` inside
``transaction.atomic()`` with the outbox on (INSERT in the transaction, push after the commit,
DELETE) against plain enqueue-on-commit (push after the commit), in one run, on a private
redis-server and a database of the benchmark's own.

Run from the repository root::

    python -m bench.outbox_bench                                  # SQLite file, 2,000 x 5
    python -m bench.outbox_bench --database-url postgres://postgres@127.0.0.1:5432/test

With a PostgreSQL URL, a database ``djqueue_bench_outbox`` is created next to the one named and
dropped at the end. Each transaction holds one push and nothing else, so the figure is the
outbox's whole cost, not diluted by the view's own writes. The two loops take turns in slices
of 200 transactions; the ratio (outbox time / on-commit time) is computed per round and the
median is printed with the spread.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from urllib.parse import urlsplit

if __package__ in (None, ""):  # run as a file: make the repository importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.redis_server import BenchRedis

BENCH_DB = "djqueue_bench_outbox"


def database(url: str | None) -> dict[str, object]:
    if not url:
        path = os.path.join(tempfile.mkdtemp(prefix="djqueue-bench-"), "bench.sqlite3")
        return {"ENGINE": "django.db.backends.sqlite3", "NAME": path}
    parts = urlsplit(url)
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": BENCH_DB,
        "USER": parts.username or "postgres",
        "PASSWORD": parts.password or "",
        "HOST": parts.hostname or "127.0.0.1",
        "PORT": str(parts.port or 5432),
    }


def postgres_admin(url: str, sql: str) -> None:
    import psycopg

    with psycopg.connect(url.replace("postgres://", "postgresql://", 1), autocommit=True) as conn:
        conn.execute(sql)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=2000, help="transactions per loop and round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--database-url", default=None, help="PostgreSQL (default: SQLite)")
    options = parser.parse_args()
    if options.database_url:
        postgres_admin(options.database_url, f"DROP DATABASE IF EXISTS {BENCH_DB}")
        postgres_admin(options.database_url, f"CREATE DATABASE {BENCH_DB}")
    try:
        with BenchRedis() as url:
            run(url, database(options.database_url), options.jobs, options.rounds)
    finally:
        if options.database_url:
            postgres_admin(options.database_url, f"DROP DATABASE IF EXISTS {BENCH_DB} WITH (FORCE)")


def run(redis_url: str, db: dict[str, object], jobs: int, rounds: int) -> None:
    import django
    from django.conf import settings

    settings.configure(
        INSTALLED_APPS=["django.contrib.contenttypes", "django.contrib.auth", "djqueue"],
        DATABASES={"default": db},
        DJQUEUE={"REDIS_URL": redis_url, "DISCOVER": []},
        USE_TZ=True,
    )
    django.setup()
    from django.core.management import call_command
    from django.db import connection, transaction

    import djqueue
    from djqueue.contrib.django.models import OutboxJob

    call_command("migrate", verbosity=0)

    @djqueue.job(name="bench.outbox.noop")
    def noop(text: str, index: int, extra: dict) -> None:
        pass

    outboxed = noop.set(outbox=True)

    def on_commit(n: int) -> None:
        for i in range(n):
            with transaction.atomic():
                noop.perform_later("string", i, {"mike": "bob"})

    def with_outbox(n: int) -> None:
        for i in range(n):
            with transaction.atomic():
                outboxed.perform_later("string", i, {"mike": "bob"})

    slice_size = 200
    ratios, rates = [], {"on_commit": [], "outbox": []}
    with_outbox(200)  # warm up both paths
    on_commit(200)
    for _ in range(rounds):
        spent = {"on_commit": 0.0, "outbox": 0.0}
        for _ in range(0, jobs, slice_size):
            for name, loop in (("on_commit", on_commit), ("outbox", with_outbox)):
                started = time.perf_counter()
                loop(slice_size)
                spent[name] += time.perf_counter() - started
        ratios.append(spent["outbox"] / spent["on_commit"])
        for name in spent:
            rates[name].append(jobs / spent[name])
    assert not OutboxJob.objects.exists(), "every row should be pushed and deleted"
    print(f"database: {connection.vendor} {connection.settings_dict['NAME']}")
    print(f"{jobs} transactions x {rounds} rounds, one perform_later each")
    for name, found in rates.items():
        per = 1e6 / statistics.median(found)
        print(f"  {name:<9} {statistics.median(found):>8,.0f} tx/s  ({per:,.0f} us per tx)")
    print(
        f"  outbox / on-commit time: median {statistics.median(ratios):.2f}x "
        f"(spread {min(ratios):.2f}-{max(ratios):.2f})"
    )


if __name__ == "__main__":
    main()
