"""What time limits cost the worker: the no-op drain with ``time_limit`` off and on, in turns,
in one run, against one private redis-server.

    python -m bench.time_limit_bench                     # 5 rounds of 20,000 jobs each way
    python -m bench.time_limit_bench --rounds 6 --jobs 30000

"off" jobs are plain payloads; "on" jobs carry ``"time_limit": 30``, so each one is armed with
the watchdog when it starts and disarmed when it ends (`djqueue.worker.time_limit`: a lock, a
dict entry, and the watchdog woken when the new deadline is its earliest). Both runs use this
tree's code and ``djqueue worker -c 10``, as ``bench.compare_revisions`` measures it.
"""

from __future__ import annotations

import argparse

from bench.compare_revisions import ROOT, drain_rate
from bench.redis_server import BenchRedis
from bench.retention_bench import summary

MODES: dict[str, dict[str, object] | None] = {"off": None, "on": {"time_limit": 30}}


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
                rate, us = drain_rate(ROOT, url, options.jobs, MODES[mode])
                drain[mode].append(rate)
                cpu[mode].append(us)
                print(
                    f"round {round_no + 1} time_limit {mode:>3}: no-op drain {rate:,.0f}/s, "
                    f"worker CPU {us:.1f} us/job",
                    flush=True,
                )
    summary([("no-op drain, jobs/s", drain, ",.0f"), ("worker CPU us per job", cpu, ".1f")])


if __name__ == "__main__":
    main()
