"""Periodic jobs: how late each tick is pushed with several workers, and what a tick costs Redis.

    python -m bench.periodic_bench                       # 3 workers then 1, 60 s each
    python -m bench.periodic_bench --seconds 120 --workers 3 --compare 1 2

Every worker runs a periodic poller, so with 3 workers each tick is tried 3 times: one poller's
claim wins and pushes, the others find the tick claimed. That is why the Redis cost is measured
for 3 workers and again for 1.

Each run starts the workers (``djqueue worker -r tests.periodic_jobs``, whose ``p.tick`` job
fires every second) on a private redis-server, lets them settle, and measures a window of
``--seconds``. The workers serve another queue, so the pushed ticks stay in ``queue:default``:
what is measured is the periodic machinery (the claim and the push), not running the job, whose
cost is any job's (see ``bench.worker_bench``).

- **Lateness** of a tick: the payload's ``enqueued_at`` (set just before the claim-and-push
  script runs) minus the tick's own time, which is the claimed tick in
  ``cron_job:p.tick:enqueued`` (the latest claim at or before the push).
- **Missed** ticks: whole seconds of the window without a push; **doubled**: a tick pushed more
  than once. Both must be 0.
- **Redis cost**, two ways. Time: every command is logged with its duration (the slow log
  with a threshold of 0 for the window), so the claim-and-push script's calls are told apart
  from the workers' other scripts by their keys, and each tick's first call (the winner, which
  pushes) from the later ones (claims lost). Calls: ``INFO commandstats`` over the window,
  minus the same workers' idle rate (a run with a schedule that never fires: heartbeats,
  fetches and the schedule reads every 10 s), per tick pushed; the commands a script calls are
  counted there on their own lines (their time is in the script's).
"""

from __future__ import annotations

import argparse
import bisect
import json
import math
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import redis

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.redis_server import BenchRedis  # noqa: E402

EVERY_SECOND = "* * * * * *"
#: The idle runs' schedule: declared and read like the real one, never due during a run.
NEVER = "0 0 1 1 *"
ENTRY = "p.tick"
#: Seconds between the workers' first heartbeats and the window: start-up reads and catch-up.
SETTLE = 3.0
#: Commands the claim-and-push script (lua/periodic_fire.lua) calls: counted inside EVALSHA's time.
IN_SCRIPT = frozenset("exists hget zadd zremrangebyscore type lpush sadd hset ltrim".split())


def percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, math.ceil(pct / 100 * len(ordered)) - 1))
    return ordered[index]


def commandstats(r: redis.Redis) -> dict[str, tuple[int, int]]:
    """command -> (calls, usec) since the last CONFIG RESETSTAT."""
    stats: dict[str, dict[str, float]] = r.info("commandstats")  # type: ignore[assignment]
    return {
        name.removeprefix("cmdstat_"): (int(entry["calls"]), int(entry["usec"]))
        for name, entry in stats.items()
        if not name.startswith("cmdstat_config")
    }


@dataclass
class Run:
    """One window: the workers' pushes, the claims, and Redis's commands per second."""

    workers: int
    cron: str
    seconds: float
    pushes: list[tuple[float, float]] = field(default_factory=list)  # (tick, enqueued_at)
    expected: list[int] = field(default_factory=list)
    rates: dict[str, tuple[float, float]] = field(default_factory=dict)  # calls/s, usec/s
    #: Durations (us) of the claim-and-push script's calls: the winner of each tick, the rest.
    won: list[int] = field(default_factory=list)
    lost: list[int] = field(default_factory=list)
    #: Durations (us) of the schedule reads (SMEMBERS and HGETALL).
    reads: list[int] = field(default_factory=list)
    #: Pushes per worker over the whole run (settling included), from their logs.
    per_worker: list[int] = field(default_factory=list)
    load: tuple[float, float] = (0.0, 0.0)

    @property
    def lateness_ms(self) -> list[float]:
        return [(at - tick) * 1000 for tick, at in self.pushes]

    @property
    def missed(self) -> int:
        return len(set(self.expected) - {int(tick) for tick, _ in self.pushes})

    @property
    def doubled(self) -> int:
        return len(self.pushes) - len({tick for tick, _ in self.pushes})


def start_workers(url: str, count: int, cron: str, logs: Path) -> list[subprocess.Popen[bytes]]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "DJQ_TEST_CRON": cron}
    workers = []
    for n in range(count):
        log = open(logs / f"worker{n}.log", "wb")  # noqa: SIM115 - the child keeps it
        workers.append(
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "djqueue.worker.cli",
                    "worker",
                    "-r",
                    "tests.periodic_jobs",
                    "--redis-url",
                    url,
                    "-q",
                    "elsewhere",
                    "-c",
                    "2",
                ],
                cwd=ROOT,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        )
        log.close()
    return workers


def stop_workers(workers: list[subprocess.Popen[bytes]]) -> None:
    for worker in workers:
        worker.send_signal(signal.SIGTERM)
    for worker in workers:
        try:
            worker.wait(30)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait()


def measure(url: str, workers: int, cron: str, seconds: float) -> Run:
    r = redis.Redis.from_url(url, decode_responses=True)
    r.flushall()
    run = Run(workers, cron, seconds)
    with tempfile.TemporaryDirectory(prefix="djqueue-periodic-bench-") as logs:
        started = start_workers(url, workers, cron, Path(logs))
        try:
            deadline = time.monotonic() + 60
            while r.scard("processes") < workers or not r.exists(f"cron_job:{ENTRY}"):
                if time.monotonic() > deadline:
                    tail = (Path(logs) / "worker0.log").read_text(errors="replace")[-2000:]
                    raise SystemExit(f"the workers did not start within 60 s; worker0:\n{tail}")
                time.sleep(0.05)
            time.sleep(SETTLE)
            load_before = os.getloadavg()[0]
            r.config_set("slowlog-max-len", 1_000_000)
            r.config_set("slowlog-log-slower-than", 0)
            r.slowlog_reset()
            r.config_resetstat()
            t0 = time.time()
            time.sleep(seconds)
            stats = commandstats(r)
            t1 = time.time()
            r.config_set("slowlog-log-slower-than", -1)
            timed(run, r.execute_command("SLOWLOG", "GET", "-1"))
            run.load = (load_before, os.getloadavg()[0])
        finally:
            stop_workers(started)
        run.per_worker = [
            (Path(logs) / f"worker{n}.log")
            .read_text(errors="replace")
            .count(f"periodic {ENTRY}: pushed")
            for n in range(workers)
        ]
    elapsed = t1 - t0
    run.rates = {name: (calls / elapsed, usec / elapsed) for name, (calls, usec) in stats.items()}
    claimed = sorted(
        score for _, score in r.zrange(f"cron_job:{ENTRY}:enqueued", 0, -1, withscores=True)
    )
    for raw in r.lrange("queue:default", 0, -1):
        at = float(json.loads(raw)["enqueued_at"])
        if t0 <= at < t1:
            index = bisect.bisect_right(claimed, at) - 1
            run.pushes.append((claimed[index] if index >= 0 else math.floor(at), at))
    run.pushes.sort()
    # Ticks whose push falls in the window if less than a second late.
    run.expected = list(range(math.ceil(t0), math.floor(t1)))
    r.close()
    return run


def timed(run: Run, entries: list[list[object]]) -> None:
    """Sort the logged commands (SLOWLOG GET: id, time, duration, args...) into the script's
    winning and losing calls and the schedule reads."""
    by_tick: dict[str, list[tuple[int, int]]] = {}
    for entry in entries:
        entry_id, duration, args = int(entry[0]), int(entry[2]), [str(a) for a in entry[3]]  # type: ignore[arg-type, union-attr]
        name = args[0].upper()
        if name in ("SMEMBERS", "HGETALL"):
            run.reads.append(duration)
        # EVALSHA sha 5 cron_job:NAME ...:enqueued ...:jid_history queues queue:Q tick iso ...
        elif name == "EVALSHA" and len(args) > 9 and args[3] == f"cron_job:{ENTRY}":
            by_tick.setdefault(args[9], []).append((entry_id, duration))
    for calls in by_tick.values():
        calls.sort()
        run.won.append(calls[0][1])
        run.lost += [duration for _, duration in calls[1:]]


def per_tick(firing: Run, idle: Run) -> dict[str, tuple[float, float]]:
    """command -> (calls, usec) per tick pushed, the idle rate taken off."""
    ticks_per_second = len(firing.pushes) / firing.seconds
    result = {}
    for name in set(firing.rates) | set(idle.rates):
        calls = firing.rates.get(name, (0.0, 0.0))[0] - idle.rates.get(name, (0.0, 0.0))[0]
        usec = firing.rates.get(name, (0.0, 0.0))[1] - idle.rates.get(name, (0.0, 0.0))[1]
        result[name] = (calls / ticks_per_second, usec / ticks_per_second)
    return result


def report(firing: Run, idle: Run) -> float:
    """Print one worker count's figures; returns Redis's microseconds per tick."""
    late = firing.lateness_ms
    print(
        f"\n{firing.workers} worker(s), {firing.seconds:g} s: {len(firing.pushes)} ticks pushed, "
        f"missed {firing.missed}, doubled {firing.doubled}; pushes per worker "
        f"{firing.per_worker}; load average {firing.load[0]:.2f} -> {firing.load[1]:.2f} "
        f"(idle run {idle.load[0]:.2f} -> {idle.load[1]:.2f})"
    )
    if late:
        print(
            f"  lateness ms: p50 {percentile(late, 50):.1f}  p99 {percentile(late, 99):.1f}  "
            f"max {max(late):.1f}  (mean {statistics.mean(late):.1f})"
        )
    costs = per_tick(firing, idle)
    print("  commands per tick (firing run minus idle run, INFO commandstats):")
    shown = sorted(
        (item for item in costs.items() if abs(item[1][0]) >= 0.05), key=lambda item: -item[1][0]
    )
    print(
        "    "
        + ", ".join(
            f"{name} {calls:.2f}{'*' if name in IN_SCRIPT else ''}" for name, (calls, _) in shown
        )
        + "   (* inside the script)"
    )
    ticks = len(firing.pushes) or 1
    script = sum(firing.won) + sum(firing.lost)
    reads = sum(firing.reads)
    print(
        f"  Redis time per tick: {(script + reads) / ticks:.1f} us = claim-and-push script "
        f"{script / ticks:.1f} us ({(len(firing.won) + len(firing.lost)) / ticks:.2f} calls; "
        f"winning call median {median(firing.won):.1f} us, lost claim median "
        f"{median(firing.lost):.1f} us) + schedule reads {reads / ticks:.1f} us "
        f"({len(firing.reads) / ticks:.2f} calls, every 10 s per worker)"
    )
    return (script + reads) / ticks


def median(values: list[int]) -> float:
    return statistics.median(values) if values else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="firing window per run")
    parser.add_argument(
        "--idle-seconds", type=float, default=30.0, help="window of each idle (baseline) run"
    )
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument(
        "--compare", type=int, nargs="*", default=[1], help="other worker counts to run"
    )
    options = parser.parse_args()
    print(
        f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at start; "
        f"Python {sys.version.split()[0]}, redis-py {redis.__version__}"
    )
    evalsha: dict[int, float] = {}
    with BenchRedis() as url:
        info = redis.Redis.from_url(url).info("server")
        print(f"Redis {info['redis_version']}")
        for count in [options.workers, *options.compare]:
            idle = measure(url, count, NEVER, options.idle_seconds)
            firing = measure(url, count, EVERY_SECOND, options.seconds)
            evalsha[count] = report(firing, idle)
    if 1 in evalsha and len(evalsha) > 1:
        print()
        for count, usec in evalsha.items():
            if count > 1 and evalsha[1]:
                print(
                    f"{count} workers: {usec:.1f} us of Redis time per tick against "
                    f"{evalsha[1]:.1f} with 1 ({usec / evalsha[1]:.2f}x)"
                )


if __name__ == "__main__":
    main()
