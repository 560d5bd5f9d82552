"""What the transactional outbox costs a web process: ``perform_later`` inside
``transaction.atomic()`` with the outbox on (INSERT in the transaction, push after the commit,
DELETE) against plain enqueue-on-commit (push after the commit), in one run, on a private
redis-server and a database of the benchmark's own.

Run from the repository root::

    python -m bench.outbox_bench                                  # SQLite file, 2,000 x 5
    python -m bench.outbox_bench --database-url postgres://postgres@127.0.0.1:5432/test
    python -m bench.outbox_bench --relay 500,50,20                # the relay, per claim size

``--relay`` measures the other end instead: how fast a worker's relay empties an outbox of
``--jobs`` rows (all past the grace) into Redis, for each claim size given (rows per claim
transaction; `djqueue.outbox.CLAIM_SIZE` is the default, 500 was the relay's single claim per
round before), the sizes taking turns per round.

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
    parser.add_argument(
        "--relay", default=None, help="claim sizes to compare, e.g. 500,50: measure the relay"
    )
    options = parser.parse_args()
    if options.database_url:
        postgres_admin(options.database_url, f"DROP DATABASE IF EXISTS {BENCH_DB}")
        postgres_admin(options.database_url, f"CREATE DATABASE {BENCH_DB}")
    try:
        with BenchRedis() as url:
            sizes = [int(n) for n in options.relay.split(",")] if options.relay else None
            run(url, database(options.database_url), options.jobs, options.rounds, sizes)
    finally:
        if options.database_url:
            postgres_admin(options.database_url, f"DROP DATABASE IF EXISTS {BENCH_DB} WITH (FORCE)")


def run(
    redis_url: str, db: dict[str, object], jobs: int, rounds: int, sizes: list[int] | None
) -> None:
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

    if sizes:
        relay(noop.job_name, jobs, rounds, sizes)
        return
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


def relay(job_name: str, rows: int, rounds: int, sizes: list[int]) -> None:
    """Rows per second a relay moves from the table to Redis, per claim size."""
    import json

    from django.db import connection

    from djqueue import outbox
    from djqueue.client import get_client
    from djqueue.contrib.django.models import OutboxJob
    from djqueue.contrib.django.outbox import DatabaseSource
    from djqueue.payload import normalize

    client = get_client()
    queue = client.settings.default_queue
    source = DatabaseSource("default")
    rates: dict[int, list[float]] = {size: [] for size in sizes}
    for _ in range(rounds):
        for size in sizes:
            payloads = [
                normalize({"class": job_name, "args": ["string", i, {"mike": "bob"}]}, queue)
                for i in range(rows)
            ]
            OutboxJob.objects.bulk_create(
                OutboxJob(jid=p["jid"], payload=json.dumps(p), created_at=0.0) for p in payloads
            )
            started = time.perf_counter()
            while outbox.relay_round(source, grace=0, claim_size=size):
                pass
            rates[size].append(rows / (time.perf_counter() - started))
            assert client.redis.llen("queue:default") == rows
            client.redis.delete("queue:default")
    print(f"database: {connection.vendor}; relay of {rows} rows x {rounds} rounds")
    for size, found in rates.items():
        print(
            f"  claims of {size:>4}: {statistics.median(found):>8,.0f} rows/s "
            f"(spread {min(found):,.0f}-{max(found):,.0f}); a crash duplicates at most {size}"
        )


if __name__ == "__main__":
    main()
