"""What per-job metrics cost the worker: the no-op drain with ``--metrics on`` and
``--metrics off``, in turns, in one run, against one private redis-server.

    python -m bench.metrics_bench                     # 5 rounds of 20,000 jobs each way
    python -m bench.metrics_bench --rounds 6 --jobs 30000

"on" (the default) counts every job per class and queue in memory and writes the counts with
each heartbeat (`djqueue.worker.metrics`); "off" counts nothing. Both use this tree's code and
``djqueue worker -c 10``, as ``bench.compare_revisions`` measures it. The goal: on/off at 0.95
or more. Last, the tally's step alone is timed in this process with metrics off and on
(`step_cost`): the CPU metrics add per job. The rounds' on/off ratios are printed with their
median and spread.

    python -m bench.metrics_bench --callgrind         # instructions, not time

counts instructions instead (`bench.callgrind`, valgrind): the worker's per no-op job, off and
on, and the tally's step alone; a busy machine changes time, not instruction counts.
"""

from __future__ import annotations

import statistics
import time

import redis

from bench.callgrind import per_job, python_instructions
from bench.compare_revisions import ROOT, drain_rate
from bench.on_off import Rounds, arguments
from bench.redis_server import BenchRedis
from djqueue.pipeline import run
from djqueue.worker.fetch import Unit
from djqueue.worker.metrics import MetricsTally
from djqueue.worker.tally import Tally

MODES: dict[str, tuple[str, ...]] = {"off": ("--metrics", "off"), "on": ("--metrics", "on")}


def run_steps(mode: str, jobs: int) -> None:
    """Run the tally's step ``jobs`` times, metrics ``mode`` ("off" or "on"): what
    `step_instructions` counts under callgrind."""
    payload = {"class": "bench.noop", "args": [1], "queue": "default", "enqueued_at": time.time()}
    unit = Unit("default", b"{}", "working")
    steps = [Tally(MetricsTally() if mode == "on" else None)]
    for _ in range(jobs):
        run(steps, (unit, payload), int)


def step_instructions(small: int = 2_000, large: int = 22_000) -> dict[str, float]:
    """Instructions per job of the tally's step, metrics off and on (callgrind: a run of
    ``large`` jobs less one of ``small``, so the interpreter's start-up cancels out)."""
    found = {}
    for mode in MODES:
        counts = [
            python_instructions(
                f"from bench.metrics_bench import run_steps; run_steps({mode!r}, {n})"
            )
            for n in (small, large)
        ]
        found[mode] = (counts[1] - counts[0]) / (large - small)
    return found


def step_cost(jobs: int = 50_000, repeats: int = 7) -> dict[str, float]:
    """Microseconds per job of the tally's step alone, metrics off and on, run in this process
    in turns (best of ``repeats``): the worker's added CPU per job, which a loaded machine
    blurs far less than it blurs a drain's wall time."""
    payload = {"class": "bench.noop", "args": [1], "queue": "default", "enqueued_at": time.time()}
    unit = Unit("default", b"{}", "working")
    best = {"off": float("inf"), "on": float("inf")}
    for _ in range(repeats):
        for mode, tally in (("off", Tally()), ("on", Tally(MetricsTally()))):
            steps = [tally]
            started = time.perf_counter()
            for _ in range(jobs):
                run(steps, (unit, payload), int)
            best[mode] = min(best[mode], (time.perf_counter() - started) / jobs * 1e6)
    return best


def main() -> None:
    parser = arguments(__doc__)
    parser.add_argument(
        "--callgrind",
        action="store_true",
        help="count instructions instead of timing (valgrind; minutes per run on a busy machine)",
    )
    options = parser.parse_args()
    if options.callgrind:
        instructions()
        return
    rounds = Rounds(MODES, options.rounds, "metrics")
    with BenchRedis() as url:
        for number, mode in rounds:
            rate, us = drain_rate(ROOT, url, options.jobs, worker_args=MODES[mode])
            r = redis.Redis.from_url(url)
            written = len(r.keys("j|*"))
            r.close()
            rounds.add("no-op drain, jobs/s", mode, rate)
            rounds.add("worker CPU us per job", mode, us)
            rounds.say(
                number,
                mode,
                f"no-op drain {rate:,.0f}/s, worker CPU {us:.1f} us/job, {written} metrics hashes",
            )
    rounds.summary({"no-op drain, jobs/s": ",.0f"})
    ratios = rounds.ratios("no-op drain, jobs/s")
    print(
        f"on/off per round: median {statistics.median(ratios):.2f}, "
        f"spread {ratios[0]:.2f} to {ratios[-1]:.2f} over {len(ratios)} rounds"
    )
    cost = step_cost()
    print(
        f"the tally's step alone, in process: {cost['off']:.2f} us/job off, "
        f"{cost['on']:.2f} us/job on (+{cost['on'] - cost['off']:.2f} us/job)"
    )


def instructions(small: int = 300, large: int = 2_300) -> None:
    """The load-independent comparison: instructions per no-op job of the whole worker process
    (`bench.callgrind.per_job`), metrics off and on, and of the tally's step alone."""
    with BenchRedis() as url:
        worker = {mode: per_job(url, small, large, MODES[mode]) for mode in MODES}
    print(
        f"worker instructions per no-op job: {worker['off']:,.0f} off, {worker['on']:,.0f} on: "
        f"on/off throughput at equal instructions {worker['off'] / worker['on']:.3f}"
    )
    step = step_instructions()
    print(
        f"the tally's step alone: {step['off']:,.0f} off, {step['on']:,.0f} on "
        f"(+{step['on'] - step['off']:,.0f} instructions per job)"
    )


if __name__ == "__main__":
    main()
