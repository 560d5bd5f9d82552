"""Did a change cost anything? The client's push and the worker's no-op drain, measured on an
older revision and on the working tree in turn, in one command.

    python -m bench.compare_revisions c80087a              # against the working tree, 5 rounds
    python -m bench.compare_revisions c80087a HEAD         # two commits
    python -m bench.compare_revisions HEAD~3 --rounds 3 --jobs 10000

Revisions are checked out into temporary git worktrees. Each round measures both
trees, in alternating order, each in fresh processes that import djqueue from their own tree,
against one private redis-server; so load from elsewhere on a busy machine hits both alike, and
the ratios (working tree / older revision) are what to quote.

- **push**: ``perform_later`` one job at a time, in slices of 1,000 taking turns with a bare
  redis-py LPUSH loop of the same JSON; reported as the cost relative to the bare loop.
- **no-op drain**: a pre-filled queue of no-op jobs drained by ``djqueue worker -c 10``, from
  the first job's start until the queue and the working lists are empty.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import redis

from bench.redis_server import BenchRedis

ROOT = Path(__file__).resolve().parent.parent

#: Run in the tree under test (its djqueue first on sys.path): prints the push figures as JSON.
PUSH = """
import json, sys, time
import redis
import djqueue

url, n = sys.argv[1], int(sys.argv[2])
djqueue.configure(redis_url=url)

@djqueue.job(name="bench.compare.noop")
def noop(text, index, extra):
    pass

bare = redis.Redis.from_url(url)
noop.perform_later("string", 0, {"mike": "bob"})
blob = bare.lpop("queue:default").decode()
later = plain = 0.0
for _ in range(n // 1000):
    started = time.perf_counter()
    for _ in range(1000):
        bare.lpush("queue:default", blob)
    plain += time.perf_counter() - started
    started = time.perf_counter()
    for _ in range(1000):
        noop.perform_later("string", 0, {"mike": "bob"})
    later += time.perf_counter() - started
bare.flushall()
print(json.dumps({"ratio": later / plain, "per_s": n / later, "module": djqueue.__file__}))
"""


def run_in(tree: Path, code: str, *args: str) -> dict[str, Any]:
    """The JSON object a fresh ``python -c CODE ARGS...`` of ``tree`` prints: its figures,
    with ``module`` (where it imported djqueue from, checked to be ``tree``) taken out. The
    object may instead hold an ``error`` (a traceback), which ends the run."""
    out = subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=tree,
        env={**os.environ, "PYTHONPATH": str(tree)},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    figures = json.loads(out)
    if "error" in figures:
        raise SystemExit(f"the run in {tree} failed:\n{figures['error']}")
    if not str(figures.pop("module")).startswith(str(tree)):
        raise SystemExit(f"the run in {tree} imported djqueue from elsewhere")
    return figures


def push_figures(tree: Path, url: str, jobs: int) -> dict[str, float]:
    return run_in(tree, PUSH, url, str(jobs))


def bench_job(
    name: str, args: list[object], n: int, now: float, fields: dict[str, object] | None = None
) -> str:
    """The JSON of the ``n``-th job of a bench run in ``default``, as the client writes it
    (no retries: a bench job that fails is a bench bug, not a figure)."""
    return json.dumps(
        {
            "class": name,
            "args": args,
            "jid": f"{n:024x}",
            "queue": "default",
            "retry": False,
            "created_at": now,
            "enqueued_at": now,
            **(fields or {}),
        },
        separators=(",", ":"),
    )


def fill_queue(r: redis.Redis, jobs: int, fields: dict[str, object] | None = None) -> None:
    """Empty Redis, then queue a ``bench.mark`` job (it sets ``bench:start`` when it runs) and
    ``jobs`` no-op jobs behind it, with ``fields`` added to each no-op payload."""
    r.flushall()
    now = time.time()

    def job(name: str, args: list[object], n: int) -> str:
        return bench_job(name, args, n, now, fields)

    pipe = r.pipeline(transaction=False)
    pipe.sadd("queues", "default")
    pipe.lpush("queue:default", job("bench.mark", ["bench:start"], 0))
    for start in range(0, jobs, 1000):
        pipe.lpush(
            "queue:default",
            *[job("bench.noop", [i], i + 1) for i in range(start, min(jobs, start + 1000))],
        )
    pipe.execute()


def start_worker(
    tree: Path, url: str, worker_args: tuple[str, ...] = (), prefix: tuple[str, ...] = ()
) -> subprocess.Popen[bytes]:
    """``djqueue worker -c 10`` of ``tree`` running the no-op jobs, its output discarded;
    ``prefix`` goes before the interpreter (``bench.callgrind`` puts valgrind there)."""
    return subprocess.Popen(
        [
            *prefix,
            sys.executable,
            "-m",
            "djqueue.worker.cli",
            "worker",
            "-r",
            "bench.jobs",
            "-c",
            "10",
            "--redis-url",
            url,
            *worker_args,
        ],
        cwd=tree,
        env={**os.environ, "PYTHONPATH": str(tree)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def wait_drained(
    r: redis.Redis, worker: subprocess.Popen[bytes], what: str, timeout: float = 300
) -> float:
    """Wait until the queue `fill_queue` filled and every working list are empty; the time
    then. ``what`` (the worker) names the failure when it exits or takes over ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while True:
        if time.monotonic() > deadline or worker.poll() is not None:
            raise SystemExit(f"{what} did not drain the queue")
        if r.llen("queue:default") == 0 and r.exists("bench:start"):
            working = r.keys("*working:*")  # either layout: the trees compared may predate it
            if not any(r.llen(key) for key in working):
                return time.time()
        time.sleep(0.002)


def drain_rate(
    tree: Path,
    url: str,
    jobs: int,
    fields: dict[str, object] | None = None,
    worker_args: tuple[str, ...] = (),
) -> tuple[float, float]:
    """No-op jobs per second, from the first job's start until nothing is left; and the CPU
    the worker process used per job (user + system, start-up included), which depends far
    less than wall time on what else the machine is doing. ``fields`` are added to every
    no-op job's payload (``bench.retention_bench`` adds ``retention``); ``worker_args`` to the
    worker's command line (``bench.metrics_bench`` adds ``--metrics off``)."""
    r = redis.Redis.from_url(url)
    fill_queue(r, jobs, fields)
    worker = start_worker(tree, url, worker_args)
    try:
        finished = wait_drained(r, worker, f"the worker of {tree}")
        started = float(r.get("bench:start") or 0)
        cpu = _cpu_seconds(worker.pid)
    finally:
        worker.terminate()
        worker.wait(30)
        r.close()
    return jobs / (finished - started), cpu / jobs * 1e6


def _cpu_seconds(pid: int) -> float:
    """utime + stime of a running process, from /proc (0 where there is no /proc)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def check_out(older: str, newer: str | None) -> dict[str, Path]:
    """The two trees to compare, by name: each revision checked out in a temporary git
    worktree, and this working tree where ``newer`` is None. `remove` takes them away."""
    scratch = Path(tempfile.mkdtemp(prefix="djqueue-compare-"))
    trees: dict[str, Path] = {}
    for name in (older, newer):
        if name is None:
            trees["working tree"] = ROOT
            continue
        trees[name] = scratch / f"tree{len(trees)}"
        subprocess.run(
            ["git", "worktree", "add", "--detach", "--quiet", str(trees[name]), name],
            cwd=ROOT,
            check=True,
        )
    return trees


def remove(trees: dict[str, Path]) -> None:
    """Remove the worktrees `check_out` added."""
    for tree in trees.values():
        if tree != ROOT:
            subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("revision", help="the older revision, e.g. a commit before the change")
    parser.add_argument("newer", nargs="?", help="the newer revision (default: the working tree)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=20_000, help="a multiple of 1,000")
    options = parser.parse_args()
    trees = check_out(options.revision, options.newer)
    push: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
    drain: dict[str, list[float]] = {name: [] for name in trees}
    cpu: dict[str, list[float]] = {name: [] for name in trees}
    try:
        with BenchRedis() as url:
            for round_no in range(options.rounds):
                order = list(trees) if round_no % 2 == 0 else list(reversed(trees))
                for name in order:
                    push[name].append(push_figures(trees[name], url, options.jobs))
                    rate, us = drain_rate(trees[name], url, options.jobs)
                    drain[name].append(rate)
                    cpu[name].append(us)
                    print(
                        f"round {round_no + 1} {name:>14}: perform_later "
                        f"{push[name][-1]['ratio']:.2f}x the bare loop, "
                        f"{push[name][-1]['per_s']:,.0f}/s; no-op drain {rate:,.0f}/s, "
                        f"worker CPU {us:.1f} us/job",
                        flush=True,
                    )
    finally:
        remove(trees)
    before, after = list(trees)
    ratio = {n: statistics.median(p["ratio"] for p in push[n]) for n in trees}
    rate = {n: statistics.median(drain[n]) for n in trees}
    print()
    print(f"{'':28}{before:>14}{after:>14}{'after/before':>14}")
    print(
        f"{'perform_later / bare LPUSH':28}{ratio[before]:>14.2f}{ratio[after]:>14.2f}"
        f"{ratio[after] / ratio[before]:>14.2f}"
    )
    print(
        f"{'no-op drain, jobs/s':28}{rate[before]:>14,.0f}{rate[after]:>14,.0f}"
        f"{rate[after] / rate[before]:>14.2f}"
    )
    busy = {n: statistics.median(cpu[n]) for n in trees}
    print(
        f"{'worker CPU us per no-op job':28}{busy[before]:>14.1f}{busy[after]:>14.1f}"
        f"{busy[after] / busy[before]:>14.2f}"
    )
    per_round = [a / b for a, b in zip(drain[after], drain[before], strict=True)]
    print(f"no-op drain after/before per round: {', '.join(f'{x:.2f}' for x in per_round)}")


if __name__ == "__main__":
    main()
