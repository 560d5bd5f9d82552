"""1,000 jobs each waiting a second on I/O: ``async def`` on the event loop against plain jobs on
threads, in one run.

    python -m bench.async_bench                  # 1,000 jobs
    python -m bench.async_bench --jobs 200

Each case starts a private redis-server, fills the queue, starts one ``djqueue worker`` and
reports the time from the worker's start to the last job's end, the process's peak resident
memory (VmHWM) and its peak thread count:

- ``async def`` jobs (`bench.jobs.asleep`, ``await asyncio.sleep(1)``) with
  ``--async-concurrency 1000`` and with the default 100;
- plain jobs (`bench.jobs.tsleep`, ``time.sleep(1)``) with ``-c 100`` threads.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import redis

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.redis_server import BenchRedis  # noqa: E402


def status(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def one_case(job: str, flags: list[str], jobs: int) -> tuple[float, int, int]:
    """(seconds to drain, peak RSS in MB, peak threads) for ``jobs`` jobs of ``job``."""
    with BenchRedis() as url:
        client = redis.Redis.from_url(url)
        import djqueue

        djqueue.configure(redis_url=url)
        djqueue.Client().push_bulk({"class": job, "args": [["done", 1]] * jobs})
        started = time.monotonic()
        worker = subprocess.Popen(
            [sys.executable, "-m", "djqueue.worker.cli", "worker", "-r", "bench.jobs"]
            + [*flags, "--redis-url", url],
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        threads = 0
        try:
            while int(client.get("done") or 0) < jobs:
                if time.monotonic() - started > 600:
                    raise TimeoutError("the run did not finish in 10 minutes")
                threads = max(threads, status(worker.pid, "Threads"))
                time.sleep(0.02)
            elapsed = time.monotonic() - started
            peak_mb = status(worker.pid, "VmHWM") // 1024
        finally:
            worker.send_signal(signal.SIGTERM)
            worker.wait(60)
        return elapsed, peak_mb, threads


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=1000)
    args = parser.parse_args()
    cases = [
        ("async def, --async-concurrency 1000", "bench.asleep", ["--async-concurrency", "1000"]),
        ("async def, --async-concurrency 100 (default)", "bench.asleep", []),
        ("plain jobs, -c 100 threads", "bench.tsleep", ["-c", "100"]),
    ]
    print(f"{args.jobs} jobs each waiting 1 s; time from the worker's start to the last job")
    for label, job, flags in cases:
        elapsed, peak_mb, threads = one_case(job, flags, args.jobs)
        print(f"{label:<46} {elapsed:6.1f} s  {peak_mb:4d} MB peak RSS  {threads:4d} threads")


if __name__ == "__main__":
    main()
