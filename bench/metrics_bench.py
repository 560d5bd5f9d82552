"""What per-job metrics cost the worker: the no-op drain with ``--metrics on`` and
``--metrics off``, in turns, in one run, against one private redis-server.

    python -m bench.metrics_bench                     # 5 rounds of 20,000 jobs each way
    python -m bench.metrics_bench --rounds 6 --jobs 30000

"on" (the default) counts every job per class and queue in memory and writes the counts with
each heartbeat (`djqueue.worker.metrics`); "off" counts nothing. Both use this tree's code
and ``djqueue worker -c 10``, as ``bench.compare_revisions`` measures it. The goal: on/off
at 0.95 or more.
"""

from __future__ import annotations

import argparse

import redis

from bench.compare_revisions import ROOT, drain_rate
from bench.redis_server import BenchRedis
from bench.retention_bench import summary

MODES: dict[str, tuple[str, ...]] = {"off": ("--metrics", "off"), "on": ("--metrics", "on")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=20_000, help="a multiple of 1,000")
    options = parser.parse_args()
    drain: dict[str, list[float]] = {mode: [] for mode in MODES}
    cpu: dict[str, list[float]] = {mode: [] for mode in MODES}
    with BenchRedis() as url:
        for round_no in range(options.rounds):
            order = list(MODES) if round_no % 2 == 0 else list(reversed(MODES))
            for mode in order:
                rate, us = drain_rate(ROOT, url, options.jobs, worker_args=MODES[mode])
                r = redis.Redis.from_url(url)
                written = len(r.keys("j|*"))
                r.close()
                drain[mode].append(rate)
                cpu[mode].append(us)
                print(
                    f"round {round_no + 1} metrics {mode:>3}: no-op drain {rate:,.0f}/s, "
                    f"worker CPU {us:.1f} us/job, {written} metrics hashes",
                    flush=True,
                )
    summary([("no-op drain, jobs/s", drain, ",.0f"), ("worker CPU us per job", cpu, ".1f")])


if __name__ == "__main__":
    main()
