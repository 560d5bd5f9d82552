"""What ``unique_for`` costs a push: ``perform_later`` of a unique job (each one new, so each
takes a lock), of a duplicate (skipped: the lock is held), and ``perform_bulk`` of unique
jobs, each against the same push without ``unique_for``, in one process, on a private
redis-server.

Run from the repository root::

    python -m bench.unique_bench               # 10,000 jobs per loop, 5 rounds
    python -m bench.unique_bench --jobs 20000 --rounds 3

The loops take turns in slices of 1,000 jobs, so load from elsewhere on a busy machine slows
them alike; each round gives one ratio per pair, and the median and spread are printed.
Client CPU per job (process time) is printed too. What a unique push adds: the digest (a
SHA-1 of the class, queue and arguments as JSON) and the two payload fields in Python, and in
the push's script a decode of the job, a TYPE, a GET and a SET of the lock.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

if __package__ in (None, ""):  # run as a file: make the repository importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import redis

import djqueue
from bench.client_bench import Meter
from bench.redis_server import BenchRedis
from djqueue.job import JobHandle


@djqueue.job(name="bench.unique.plain")
def plain(text: str, index: int, extra: dict) -> None:
    pass


@djqueue.job(name="bench.unique.once", unique_for=3600)
def once(text: str, index: int, extra: dict) -> None:
    pass


def one_by_one(job: JobHandle, start: int, n: int) -> None:
    for i in range(start, start + n):
        job.perform_later("string", i, {"mike": "bob"})


def bulk_push(job: JobHandle, args: list[tuple[str, int, dict]]) -> None:
    job.perform_bulk(args)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=10_000, help="a multiple of 1,000")
    parser.add_argument("--rounds", type=int, default=5)
    options = parser.parse_args()
    n, step = options.jobs, 1000

    server = BenchRedis().start()
    try:
        djqueue.configure(redis_url=server.url)
        direct = redis.Redis.from_url(server.url)
        plain.perform_later("warm", 0, {})  # pool, scripts loaded
        once.perform_later("warm", 0, {})
        print(f"{n:,} jobs per loop, {options.rounds} rounds\n")
        names = ("plain", "unique", "duplicate", "plain bulk", "unique bulk")
        per_job: dict[str, list[float]] = {name: [] for name in names}
        cpu: dict[str, list[float]] = {name: [] for name in names}
        for round_number in range(options.rounds):
            direct.flushall()
            base = round_number * 10 * n
            meters = {name: Meter() for name in names}
            for s in range(base, base + n, step):
                meters["plain"].run(step, lambda s=s: one_by_one(plain, s, step))
                meters["unique"].run(step, lambda s=s: one_by_one(once, s, step))
                # The same jobs again: every push finds its lock held and is skipped.
                meters["duplicate"].run(step, lambda s=s: one_by_one(once, s, step))
            bulk = [("string", base + n + i, {"mike": "bob"}) for i in range(n)]
            meters["plain bulk"].run(n, lambda bulk=bulk: bulk_push(plain, bulk))
            meters["unique bulk"].run(n, lambda bulk=bulk: bulk_push(once, bulk))
            for name, meter in meters.items():
                per_job[name].append(1e6 / meter.rate)
                cpu[name].append(meter.cpu_us)

        for name in names:
            values = per_job[name]
            print(
                f"{name:12s} {statistics.median(values):7.1f} us/push "
                f"(min {min(values):6.1f}, max {max(values):6.1f})   "
                f"client CPU {statistics.median(cpu[name]):5.1f} us/push"
            )
        print()
        for label, a, b in (
            ("perform_later, unique_for against plain", "unique", "plain"),
            ("perform_later, a skipped duplicate against plain", "duplicate", "plain"),
            ("perform_bulk, unique_for against plain", "unique bulk", "plain bulk"),
        ):
            ratios = [x / y for x, y in zip(per_job[a], per_job[b], strict=True)]
            print(
                f"{label}: {statistics.median(ratios):.2f}x "
                f"(per round: {', '.join(f'{x:.2f}' for x in ratios)})"
            )
    finally:
        server.close()


if __name__ == "__main__":
    main()
