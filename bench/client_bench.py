"""What a push costs: ``perform_later`` one by one and ``perform_bulk``, against a bare redis-py
LPUSH loop of the same JSON size, in one process, on a private redis-server.

Run from the repository root::

    python -m bench.client_bench               # 20,000 jobs, 5 rounds
    python -m bench.client_bench --jobs 50000 --rounds 3

The bare loop and ``perform_later`` take turns in slices of 1,000 jobs, so load from elsewhere
on a busy machine slows them alike; the ratios are computed per round and the median is reported
with the spread. Client CPU per job (process time) is printed too: unlike wall time, it hardly
depends on what else the machine is doing. The bare loop is the floor: a
prebuilt JSON string and one LPUSH per job, with no id, no timestamps, no checks, no ``queues``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable

import redis

if __package__ in (None, ""):  # run as a file: make the repository importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import djqueue
from bench.redis_server import BenchRedis

ARGS = ("string", 0, {"mike": "bob"})  # the arguments of Sidekiq's own load test


@djqueue.job(name="bench.client.noop")
def noop(text: str, index: int, extra: dict) -> None:
    pass


def bare_lpush(client: redis.Redis, n: int, blob: str) -> None:
    for _ in range(n):
        client.lpush("queue:bare", blob)


def one_by_one(n: int) -> None:
    for i in range(n):
        noop.perform_later("string", i, {"mike": "bob"})


def bulk(n: int) -> None:
    noop.perform_bulk([("string", i, {"mike": "bob"}) for i in range(n)])


class Meter:
    """Wall and CPU time of one loop, summed over the slices it ran in."""

    def __init__(self) -> None:
        self.wall = 0.0
        self.cpu = 0.0
        self.jobs = 0

    def run(self, n: int, fn: Callable[[], None]) -> None:
        wall, cpu = time.perf_counter(), time.process_time()
        fn()
        self.wall += time.perf_counter() - wall
        self.cpu += time.process_time() - cpu
        self.jobs += n

    @property
    def rate(self) -> float:
        return self.jobs / self.wall

    @property
    def cpu_us(self) -> float:
        return 1e6 * self.cpu / self.jobs


def spread(values: list[float]) -> str:
    return (
        f"median {statistics.median(values):>9,.0f}   "
        f"min {min(values):>9,.0f}   max {max(values):>9,.0f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=20_000, help="a multiple of 1,000")
    parser.add_argument("--rounds", type=int, default=5)
    options = parser.parse_args()
    n = options.jobs

    server = BenchRedis().start()
    try:
        djqueue.configure(redis_url=server.url)
        bare = redis.Redis.from_url(server.url)
        noop.perform_later(*ARGS)  # warm up: pool, script load
        sample = bare.lpop("queue:default")
        assert sample is not None
        blob = sample.decode()
        print(f"redis-py {redis.__version__}, {n:,} jobs per loop, {options.rounds} rounds")
        print(f"job JSON: {len(blob)} bytes, e.g. {json.loads(blob)['args']}\n")

        results: dict[str, list[float]] = {"bare": [], "later": [], "bulk": []}
        cpu: dict[str, list[float]] = {"bare": [], "later": [], "bulk": []}
        step = 1000
        for _ in range(options.rounds):
            bare.flushall()
            meters = {name: Meter() for name in results}
            # Slices of 1,000 in turn, so that load from elsewhere hits every loop alike.
            for _ in range(n // step):
                meters["bare"].run(step, lambda: bare_lpush(bare, step, blob))
                meters["later"].run(step, lambda: one_by_one(step))
            meters["bulk"].run(n, lambda: bulk(n))
            assert bare.llen("queue:default") == 2 * (n // step) * step
            for name, meter in meters.items():
                results[name].append(meter.rate)
                cpu[name].append(meter.cpu_us)

        ratio_later = [b / x for b, x in zip(results["bare"], results["later"], strict=True)]
        ratio_bulk = [x / b for b, x in zip(results["bare"], results["bulk"], strict=True)]
        for name, label in (
            ("bare", "bare LPUSH loop"),
            ("later", "perform_later"),
            ("bulk", "perform_bulk"),
        ):
            print(
                f"{label:16s} jobs/s  {spread(results[name])}   "
                f"client CPU {statistics.median(cpu[name]):5.1f} us/job"
            )
        print()
        print(
            f"perform_later is {statistics.median(ratio_later):.2f}x slower than the bare loop "
            f"(per round: {', '.join(f'{x:.2f}' for x in ratio_later)}; target <= 1.5)"
        )
        print(
            f"perform_bulk is {statistics.median(ratio_bulk):.1f}x faster than the bare loop "
            f"(median {statistics.median(results['bulk']):,.0f} jobs/s; target > 100,000)"
        )
        bare.close()
    finally:
        server.close()


if __name__ == "__main__":
    main()
