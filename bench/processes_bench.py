"""CPU-bound jobs on every core: ``--processes 2`` against ``--processes 1``, in one run.

    python -m bench.processes_bench                 # 3 rounds of 2,000 jobs each way
    python -m bench.processes_bench --jobs 500 --rounds 1

Each job does about 5 ms of pure-Python work (`bench.jobs.burn`), holding the GIL, so one
process runs one job at a time whatever its thread count. Each round starts a private
redis-server, fills the queue, starts ``djqueue worker -r bench.jobs -c 2 -p N`` and times from
the first job's start to the last job's end; the two settings alternate, and the figure is the
ratio of the medians.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

import redis

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.jobs import burn  # noqa: E402
from bench.redis_server import BenchRedis  # noqa: E402


def one_run(processes: int, jobs: int) -> float:
    """Jobs per second with ``--processes processes``."""
    with BenchRedis() as url:
        client = redis.Redis.from_url(url)
        import djqueue

        djqueue.configure(redis_url=url)
        from bench.jobs import cpu

        cpu.perform_bulk([["done"]] * jobs)
        worker = subprocess.Popen(
            [sys.executable, "-m", "djqueue.worker.cli", "worker", "-r", "bench.jobs"]
            + ["-c", "2", "-p", str(processes), "--redis-url", url],
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + 600
            while int(client.get("done") or 0) < jobs:
                if time.monotonic() > deadline:
                    raise TimeoutError("the run did not finish in 10 minutes")
                time.sleep(0.01)
            end = time.time()
            start = float(client.get("done:start") or end)
        finally:
            worker.send_signal(signal.SIGTERM)
            worker.wait(60)
        return jobs / (end - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    started = time.perf_counter()
    for _ in range(50):
        burn()
    per_job = (time.perf_counter() - started) / 50 * 1000
    print(f"one job's work here: {per_job:.1f} ms ({os.cpu_count()} cores)")
    rates: dict[int, list[float]] = {1: [], 2: []}
    for round_number in range(args.rounds):
        for processes in (1, 2):
            rate = one_run(processes, args.jobs)
            rates[processes].append(rate)
            print(f"round {round_number + 1}: --processes {processes}: {rate:,.0f} jobs/s")
    one, two = (statistics.median(rates[p]) for p in (1, 2))
    print(f"median --processes 1: {one:,.0f} jobs/s; --processes 2: {two:,.0f} jobs/s")
    print(f"ratio: {two / one:.2f}x")


if __name__ == "__main__":
    main()
