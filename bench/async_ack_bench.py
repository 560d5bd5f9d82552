"""How long finished ``async def`` jobs wait for their acknowledgement, and what sending it
costs a drain of short async jobs.

    python -m bench.async_ack_bench                 # 5 rounds of 300 jobs
    python -m bench.async_ack_bench --rounds 3 --jobs 2000

Each round starts a private redis-server and one ``djqueue worker -c 5``, pushes ``--jobs``
async jobs (`bench.jobs.asleep`, 0 to 90 ms each) and reports the drain time (from the push to
the last job's end) and the lag from the last job's end to empty working lists: the window in
which a kill -9 makes finished jobs run again. With the drain over, the processors wait in
BLMOVE (2 s) and the heartbeat is up to 5 s away, so nothing else sends the acknowledgements.
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

from bench.redis_server import BenchRedis  # noqa: E402


def one_round(jobs: int) -> tuple[float, float]:
    """(seconds to drain, seconds from the last job's end to empty working lists)."""
    with BenchRedis() as url:
        client = redis.Redis.from_url(url)
        import djqueue

        djqueue.configure(redis_url=url)
        worker = subprocess.Popen(
            [sys.executable, "-m", "djqueue.worker.cli", "worker", "-r", "bench.jobs"]
            + ["-c", "5", "--redis-url", url],
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            while not client.scard("processes"):
                time.sleep(0.01)
            args = [["done", 0.01 * (n % 10)] for n in range(jobs)]
            started = time.monotonic()
            djqueue.Client().push_bulk({"class": "bench.asleep", "args": args})
            while int(client.get("done") or 0) < jobs:
                time.sleep(0.001)
            ended = time.monotonic()
            while any(client.llen(key) for key in client.keys("working:*")):
                if time.monotonic() - ended > 60:
                    raise TimeoutError("the acknowledgements did not come in a minute")
                time.sleep(0.001)
            return ended - started, time.monotonic() - ended
        finally:
            worker.send_signal(signal.SIGTERM)
            worker.wait(60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    drains, lags = [], []
    for _ in range(args.rounds):
        drain, lag = one_round(args.jobs)
        drains.append(drain)
        lags.append(lag)
        print(f"drain {drain:6.3f} s   acknowledged {lag * 1000:7.1f} ms after the last job")
    print(
        f"median: drain {statistics.median(drains):.3f} s, "
        f"lag {statistics.median(lags) * 1000:.1f} ms"
    )


if __name__ == "__main__":
    main()
