"""A Django ORM job on PostgreSQL: djqueue against Dramatiq and Celery, in one run.

    python -m bench.orm_bench                        # 5,000 jobs per system, every system
    python -m bench.orm_bench --jobs 2000 --systems djqueue-p1,dramatiq-p1

Each job reads one row by primary key and updates it (``bench/orm_project/work.py``), the same
function under every worker (``bench/orm_project``). All systems use one PostgreSQL database that
the run creates and drops (``djqueue_bench_orm`` by default) and one private redis-server.

For each system the table is made anew with one row per job, the queue is filled, then the
worker starts. The rate runs from the first job's update to the last one's, both read from
PostgreSQL's clock (``touched_at``), so start-up and the polling for the end are left out;
afterwards every row must have been updated exactly once. Concurrency is 10 threads per
process for djqueue (``-c 10``) and Dramatiq (``-t 10``); Celery's prefork pool runs one job at a
time per child process, so ``-c 2`` is two processes, each running one job at a time. Celery's
Django fix-up reconnects to PostgreSQL for every task by default; ``celery-c2-reuse`` turns that
off (``CELERY_DB_REUSE_MAX``) to show the job's cost without it. ``BENCH_CONN_MAX_AGE=0`` runs
every system with Django's default of no persistent connections.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.redis_server import BenchRedis  # noqa: E402

CONCURRENCY = 10
DEFAULT_SERVER = "postgres://postgres@127.0.0.1:5432"
DEFAULT_DATABASE = "djqueue_bench_orm"


@dataclass(frozen=True)
class System:
    """One worker setting under test: its command line and how its jobs are pushed."""

    key: str
    label: str
    kind: str  # djqueue, dramatiq or celery
    processes: int
    env: tuple[tuple[str, str], ...] = ()

    def command(self) -> list[str]:
        if self.kind == "djqueue":
            return [sys.executable, "-m", "django", "runworker"] + [
                "-c",
                str(CONCURRENCY),
                "-p",
                str(self.processes),
            ]
        if self.kind == "dramatiq":
            return [sys.executable, "-m", "dramatiq", "bench.orm_project.dramatiq_actors"] + [
                "-p",
                str(self.processes),
                "-t",
                str(CONCURRENCY),
            ]
        return [sys.executable, "-m", "celery", "-A", "bench.orm_project.celery_app"] + [
            "worker",
            "-P",
            "prefork",
            "-c",
            str(self.processes),
            "--loglevel",
            "WARNING",
        ]


SYSTEMS = {
    s.key: s
    for s in (
        System("djqueue-p1", "djqueue -p 1 -c 10", "djqueue", 1),
        System("dramatiq-p1", "dramatiq -p 1 -t 10", "dramatiq", 1),
        System("djqueue-p2", "djqueue -p 2 -c 10", "djqueue", 2),
        System("dramatiq-p2", "dramatiq -p 2 -t 10", "dramatiq", 2),
        System("celery-c2", "celery prefork -c 2", "celery", 2),
        System("celery-c1", "celery prefork -c 1", "celery", 1),
        # Celery's Django fix-up reconnects for every task by default; this one reuses.
        System(
            "celery-c2-reuse",
            "celery -c 2, DB reuse",
            "celery",
            2,
            (("BENCH_CELERY_DB_REUSE_MAX", "1000"),),
        ),
    )
}


def admin_sql(server: str, statement: str) -> None:
    """Run CREATE/DROP DATABASE on the server's ``postgres`` database (outside a transaction,
    as PostgreSQL requires)."""
    import psycopg

    parts = urlsplit(server)
    with psycopg.connect(
        host=parts.hostname or "127.0.0.1",
        port=parts.port or 5432,
        user=parts.username or "postgres",
        password=parts.password or None,
        dbname="postgres",
        autocommit=True,
    ) as conn:
        conn.execute(statement)  # type: ignore[arg-type]


def fresh_table(jobs: int) -> None:
    """The table made anew with one row per job, so no system inherits another's dead rows."""
    from django.db import connection

    from bench.orm_project.models import Counter

    with connection.cursor() as cursor:
        cursor.execute(f"DROP TABLE IF EXISTS {Counter._meta.db_table}")
    with connection.schema_editor() as editor:
        editor.create_model(Counter)
    Counter.objects.bulk_create([Counter(pk=pk) for pk in range(1, jobs + 1)], batch_size=5000)
    with connection.cursor() as cursor:
        cursor.execute(f"VACUUM ANALYZE {Counter._meta.db_table}")
    connection.close()


def push(system: System, jobs: int) -> None:
    """The queue filled with one job per row, each system through its own client."""
    pks = list(range(1, jobs + 1))
    if system.kind == "djqueue":
        from bench.orm_project import jobs as djqueue_jobs

        djqueue_jobs.touch.perform_bulk([[pk] for pk in pks])
    elif system.kind == "dramatiq":
        from bench.orm_project import dramatiq_actors

        for pk in pks:
            dramatiq_actors.touch.send(pk)
    else:
        from bench.orm_project import celery_app

        for pk in pks:
            celery_app.touch.delay(pk)


def tree_cpu_seconds(session: int) -> float:
    """User + system CPU of every process in the worker's session (parents and children)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError, IndexError):
            continue
        # After the command name: state, ppid, pgrp, session, ... utime (12), stime (13).
        if int(fields[3]) == session:
            total += int(fields[11]) + int(fields[12])
    return total / tick


def stop(process: subprocess.Popen[bytes]) -> None:
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(60)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def one_run(system: System, jobs: int, redis_url: str, log_dir: Path) -> dict[str, float]:
    """Fill, drain, check: jobs per second and the worker's CPU for one system."""
    import redis
    from django.db import connection
    from django.db.models import Count, Max, Min, Q, Sum

    from bench.orm_project.models import Counter

    redis.Redis.from_url(redis_url).flushall()
    fresh_table(jobs)
    push(system, jobs)
    log = (log_dir / f"{system.key}.log").open("wb")
    process = subprocess.Popen(
        system.command(),
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), **dict(system.env)},
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 900
        while Counter.objects.filter(hits__gt=0).count() < jobs:
            if process.poll() is not None:
                raise SystemExit(f"{system.label} exited early: see {log.name}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"{system.label} did not finish in 15 minutes")
            connection.close()  # no idle connection held open between polls
            time.sleep(0.25)
        cpu = tree_cpu_seconds(process.pid)
    finally:
        stop(process)
        log.close()
    done = Counter.objects.aggregate(
        total=Sum("hits"),
        once=Count("pk", filter=Q(hits=1)),
        first=Min("touched_at"),
        last=Max("touched_at"),
    )
    connection.close()
    if done["total"] != jobs or done["once"] != jobs:
        raise SystemExit(
            f"{system.label}: sum of hits {done['total']}, rows updated once {done['once']}, "
            f"expected {jobs} each"
        )
    seconds = (done["last"] - done["first"]).total_seconds()
    # N updates span N - 1 gaps between the first and the last.
    return {"jobs_per_s": (jobs - 1) / seconds, "seconds": seconds, "worker_cpu_s": cpu}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=5000, help="jobs (and rows) per system")
    parser.add_argument(
        "--systems",
        default=",".join(k for k in SYSTEMS),
        help=f"comma-separated subset of {','.join(SYSTEMS)}",
    )
    parser.add_argument(
        "--server",
        default=DEFAULT_SERVER,
        help="PostgreSQL server URL (no database); the run creates and drops its own database",
    )
    parser.add_argument("--database", default=DEFAULT_DATABASE, help="name of that database")
    options = parser.parse_args()
    wanted = [SYSTEMS[k] for k in options.systems.split(",")]

    redis_server = BenchRedis().start()
    parts = urlsplit(options.server)
    database_url = urlunsplit(parts._replace(path="/" + options.database))
    os.environ["BENCH_REDIS_URL"] = redis_server.url
    os.environ["BENCH_DATABASE_URL"] = database_url
    os.environ["DJANGO_SETTINGS_MODULE"] = "bench.orm_project.settings"
    admin_sql(options.server, f'DROP DATABASE IF EXISTS "{options.database}"')
    admin_sql(options.server, f'CREATE DATABASE "{options.database}"')
    log_dir = Path(tempfile.mkdtemp(prefix="djqueue-orm-bench-"))  # kept: the workers' logs
    results: dict[str, dict[str, float]] = {}
    try:
        import django

        django.setup()
        from django.db import connection

        with connection.cursor() as cursor:
            cursor.execute("SHOW server_version")
            pg_version = cursor.fetchone()[0]
        print(
            f"{options.jobs:,} jobs per system; PostgreSQL {pg_version}; "
            f"{os.cpu_count()} cores; load average {os.getloadavg()[0]:.2f} at start; "
            f"worker logs in {log_dir}",
            flush=True,
        )
        for system in wanted:
            res = one_run(system, options.jobs, redis_server.url, log_dir)
            results[system.key] = res
            print(
                f"{system.label:24} {res['jobs_per_s']:>8,.0f} jobs/s  "
                f"({res['seconds']:.2f} s; worker CPU {res['worker_cpu_s']:.1f} s, "
                f"start-up included; load {os.getloadavg()[0]:.2f})",
                flush=True,
            )
    finally:
        from django.db import connections

        connections.close_all()
        admin_sql(options.server, f'DROP DATABASE IF EXISTS "{options.database}"')
        redis_server.close()
    report(results)


def report(results: dict[str, dict[str, float]]) -> None:
    """The ratios the goal is stated in: djqueue over Dramatiq at equal processes, and djqueue
    ``-p 2`` over Celery prefork ``-c 2``."""
    pairs = [
        ("djqueue-p1", "dramatiq-p1"),
        ("djqueue-p2", "dramatiq-p2"),
        ("djqueue-p2", "celery-c2"),
        ("djqueue-p2", "celery-c2-reuse"),
        ("djqueue-p1", "celery-c1"),
    ]
    print()
    for a, b in pairs:
        if a in results and b in results:
            ratio = results[a]["jobs_per_s"] / results[b]["jobs_per_s"]
            print(f"{SYSTEMS[a].label} / {SYSTEMS[b].label}: {ratio:.2f}x")
    out = ROOT / "bench" / "results"
    out.mkdir(exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    (out / f"orm-{stamp}.json").write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
