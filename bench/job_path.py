"""What a no-op job costs a processor thread between the fetch and the acknowledgement, in
this process, without Redis: the payload's decoding, the worker's real step list
(`Manager.steps`, built by a `Launcher` from default settings), the job's call, and the two
INFO log lines through the worker's own handler and writer thread (`djqueue.worker.log.setup`,
writing to /dev/null as the benchmarks' workers do). Older revisions are measured in the
same command, in turns, each in a fresh process importing djqueue from its own tree:

    python -m bench.job_path 6b6037b                # that commit against the working tree
    python -m bench.job_path HEAD~2 HEAD --rounds 7
    python -m bench.job_path 6b6037b --instructions    # instructions, under callgrind

Two figures per tree and log level: the CPU time of the whole process per job (every thread:
the processor's work and the log writer's, `time.process_time`, with the writer's queue
drained before the clock stops) and the wall time per job. One thread runs the jobs, so the
figures leave out what ten processors pay in thread switches and GIL hand-overs; the drain
benchmarks (`bench.compare_revisions`, `bench.worker_bench`) show those. "info" is the
worker's default log level, "off" the ``djqueue.worker`` logger at WARNING (`bench.log_off`).
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from bench.callgrind import python_instructions
from bench.compare_revisions import check_out, remove, run_in

#: The worker's default log level, and its job lines off (`bench.log_off`).
LEVELS = ("info", "off")

#: Run in the tree under test: prints ``{"info": [cpu_us, wall_us], "off": [...]}`` as JSON.
MEASURE = """
import json, logging, os, sys, time, traceback
out = sys.stdout
try:
    import djqueue
    from djqueue.worker import log
    from djqueue.worker.fetch import Unit
    from djqueue.worker.launcher import Launcher
    from djqueue.worker.processor import Processor

    jobs, levels = int(sys.argv[1]), sys.argv[2].split(",")
    djqueue.configure(redis_url="redis://127.0.0.1:9/0")  # never reached by a no-op job

    @djqueue.job(name="bench.path.noop", retry=False)
    def noop(index):
        pass

    launcher = Launcher()
    processor = Processor(launcher.manager.runtime, 1, lambda unit, payload: False, None)
    raws = [
        json.dumps(
            {"class": "bench.path.noop", "args": [i], "jid": f"{i:024x}", "queue": "default",
             "retry": False, "created_at": 1.7e9, "enqueued_at": 1.7e9},
            separators=(",", ":"),
        ).encode()
        for i in range(jobs)
    ]
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)  # the worker's log goes to stderr: to /dev/null here
    figures = {}
    for level in levels:
        handler = log.setup()
        logging.getLogger("djqueue.worker").setLevel(
            logging.WARNING if level == "off" else logging.NOTSET
        )
        units = [Unit("default", raw, "working") for raw in raws]
        cpu, wall = time.process_time(), time.perf_counter()
        for unit in units:
            processor.process(unit)
        wall = time.perf_counter() - wall
        log.flush()  # the writer's queue drained: its work counts
        cpu = time.process_time() - cpu
        log.teardown(handler)
        figures[level] = [cpu / jobs * 1e6, wall / jobs * 1e6]
    figures["module"] = djqueue.__file__
    out.write(json.dumps(figures))
except BaseException:
    out.write(json.dumps({"error": traceback.format_exc()}))
"""


def measure(tree: Path, jobs: int) -> dict[str, list[float]]:
    """One fresh process of ``tree``: its figures for ``jobs`` no-op jobs at each level."""
    return run_in(tree, MEASURE, str(jobs), ",".join(LEVELS))


def instructions(tree: Path, level: str, small: int, large: int) -> float:
    """Instructions per no-op job at ``level`` under callgrind (`bench.callgrind`): a run of
    ``large`` jobs less one of ``small``, so start-up cancels out. Unlike time, the count
    hardly moves with the machine's load."""
    counts = [python_instructions(MEASURE, (str(jobs), level), tree) for jobs in (small, large)]
    return (counts[1] - counts[0]) / (large - small)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("revision", help="the older revision")
    parser.add_argument("newer", nargs="?", help="the newer revision (default: the working tree)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="count instructions under callgrind instead (one round: 2,000 and 12,000 jobs)",
    )
    options = parser.parse_args()
    trees = check_out(options.revision, options.newer)
    runs: dict[str, list[dict[str, list[float]]]] = {name: [] for name in trees}
    try:
        if options.instructions:
            counted = {
                name: {level: instructions(tree, level, 2_000, 12_000) for level in LEVELS}
                for name, tree in trees.items()
            }
            before, after = list(trees)
            print(f"instructions per no-op job{'':10}{before:>14}{after:>14}{'after/before':>14}")
            for level in LEVELS:
                old, new = counted[before][level], counted[after][level]
                print(f"{'log ' + level:36}{old:>14,.0f}{new:>14,.0f}{new / old:>14.3f}")
            return
        for round_no in range(options.rounds):
            order = list(trees) if round_no % 2 == 0 else list(reversed(trees))
            for name in order:
                figures = measure(trees[name], options.jobs)
                runs[name].append(figures)
                print(
                    f"round {round_no + 1} {name:>14}: "
                    + ", ".join(
                        f"{level} {cpu:.1f} us CPU / {wall:.1f} us wall"
                        for level, (cpu, wall) in figures.items()
                    ),
                    flush=True,
                )
    finally:
        remove(trees)
    before, after = list(trees)
    print(f"\nmedians per no-op job{'':15}{before:>14}{after:>14}{'after/before':>14}")
    for level in LEVELS:
        for index, what in enumerate(("CPU", "wall")):
            old = statistics.median(run[level][index] for run in runs[before])
            new = statistics.median(run[level][index] for run in runs[after])
            label = f"log {level}, {what} us"
            print(f"{label:36}{old:>14.1f}{new:>14.1f}{new / old:>14.2f}")


if __name__ == "__main__":
    main()
