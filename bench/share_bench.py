"""Sharing between two workers: how a burst and a steady flow of short jobs split between two
djqueue processes, and how long each job waited from its push to its start.

    python -m bench.share_bench                 # 10 ms jobs
    python -m bench.share_bench --job-ms 1      # 1 ms jobs

Two ``djqueue worker -c 10`` processes of this tree share one private redis-server. A job
buffered by one process while the other's processors are idle shows as a longer pickup and an
uneven split; compare trees with the same command run from each (the workers import djqueue
from the tree the bench runs in).
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

import djqueue
from djqueue import job
from djqueue.config import get_settings

ROOT = Path(__file__).resolve().parent.parent
_redis: redis.Redis | None = None


@job(name="bench.share", retry=False)
def share(pushed_at: float, seconds: float) -> None:
    """Note the process and the pickup (start less push time), then sleep ``seconds``."""
    global _redis
    started = time.time()
    if _redis is None:
        _redis = redis.Redis.from_url(get_settings().redis_url)
    time.sleep(seconds)
    _redis.rpush("bench:share", f"{os.getpid()} {started - pushed_at}")


def wait(r: redis.Redis, count: int) -> None:
    deadline = time.time() + 120
    while r.llen("bench:share") < count:
        if time.time() > deadline:
            raise SystemExit(f"timed out waiting for {count} jobs")
        time.sleep(0.01)


def report(r: redis.Redis, name: str) -> None:
    rows = [line.decode().split() for line in r.lrange("bench:share", 0, -1)]
    r.delete("bench:share")
    split = sorted({pid: sum(1 for p, _ in rows if p == pid) for pid, _ in rows}.values())
    waits = sorted(float(seconds) * 1000 for _, seconds in rows)
    p99 = waits[max(0, int(len(waits) * 0.99) - 1)]
    print(
        f"{name}: split {split}, pickup p50 {statistics.median(waits):.2f} ms, "
        f"p99 {p99:.2f} ms, max {waits[-1]:.1f} ms",
        flush=True,
    )


def flow(seconds: float, per_second: int, job_seconds: float) -> None:
    """Push ``per_second`` jobs a second, in slices every 10 ms, for ``seconds``."""
    start = time.time()
    for tick in range(int(seconds * 100)):
        share.perform_bulk([[time.time(), job_seconds]] * (per_second // 100))
        delay = start + (tick + 1) * 0.01 - time.time()
        if delay > 0:
            time.sleep(delay)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--job-ms", type=float, default=10.0, help="each job's sleep, ms")
    options = parser.parse_args()
    from bench.redis_server import BenchRedis

    job_seconds = options.job_ms / 1000
    capacity = int(2 * 10 / job_seconds)  # jobs a second two idle-free workers could run
    server = BenchRedis().start()
    djqueue.configure(redis_url=server.url)
    r = redis.Redis.from_url(server.url)
    command = [sys.executable, "-m", "djqueue.worker.cli", "worker", "-r", "bench.share_bench"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    workers = [
        subprocess.Popen(
            [*command, "-c", "10", "--redis-url", server.url],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        for _ in range(2)
    ]
    try:
        deadline = time.time() + 30
        while r.scard("processes") < 2:
            if time.time() > deadline:
                raise SystemExit("the workers did not start")
            time.sleep(0.05)
        time.sleep(1)
        burst = capacity
        share.perform_bulk([[time.time(), job_seconds]] * burst)
        wait(r, burst)
        report(r, f"{burst:,} at once")
        for share_of_capacity, seconds in ((0.75, 3.0), (0.25, 3.0)):
            rate = int(capacity * share_of_capacity)
            flow(seconds, rate, job_seconds)
            wait(r, int(seconds * 100) * (rate // 100))
            report(r, f"{rate:,}/s for {seconds:.0f} s")
    finally:
        for worker in workers:
            os.killpg(worker.pid, signal.SIGTERM)
        for worker in workers:
            worker.wait(30)
        server.close()


if __name__ == "__main__":
    main()
