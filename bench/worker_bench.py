"""Worker benchmark: djqueue against Dramatiq and a bare BRPOP loop, in one run.

    python -m bench.worker_bench            # full run (a few minutes)
    python -m bench.worker_bench --quick    # smaller counts, for a smoke run

Every system runs the same job functions against its own private redis-server, one process at
concurrency 10 (Dramatiq: ``-p 1 -t 10``). Throughput is measured from the moment the first job
of a pre-filled queue starts until the queue is drained, so start-up time is left out. The
figures worth quoting are the ratios, since this machine's absolute speed varies from run to run.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import redis

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.redis_server import BenchRedis  # noqa: E402

CONCURRENCY = 10


def percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(pct / 100 * (len(ordered) - 1))))
    return ordered[index]


def wait_until(predicate: Callable[[], bool], timeout: float, poll: float = 0.005) -> float:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError("benchmark step did not finish in time")
        time.sleep(poll)
    return time.time()


def peak_rss_kb(pid: int) -> int:
    """VmHWM of ``pid`` and its children (Dramatiq runs its workers in a child process)."""
    total = 0
    pids = [pid]
    children = Path(f"/proc/{pid}/task/{pid}/children")
    if children.exists():
        pids += [int(p) for p in children.read_text().split()]
    for p in pids:
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    total = max(total, int(line.split()[1]))
        except FileNotFoundError:
            pass
    return total


class System:
    """One job system under test: how to start its worker and push its jobs."""

    name = ""

    def __init__(self, url: str) -> None:
        self.url = url
        self.r = redis.Redis.from_url(url)
        self.process: subprocess.Popen[bytes] | None = None
        self.peak_rss_kb = 0

    def command(self) -> list[str]:
        raise NotImplementedError

    def start(self) -> None:
        env = {**os.environ, "BENCH_REDIS_URL": self.url, "PYTHONPATH": str(ROOT)}
        self.process = subprocess.Popen(
            self.command(),
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )

    def wait_ready(self) -> None:
        time.sleep(2.0)

    def stop(self) -> None:
        if self.process is None:
            return
        self.peak_rss_kb = max(self.peak_rss_kb, peak_rss_kb(self.process.pid))
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        self.process = None

    def push(self, job: str, args: list[object]) -> None:
        raise NotImplementedError

    def push_many(self, job: str, args_list: list[list[object]]) -> None:
        for args in args_list:
            self.push(job, args)

    def push_at(self, job: str, args: list[object], at: float) -> None:
        raise NotImplementedError

    def drained(self) -> bool:
        raise NotImplementedError


class Djqueue(System):
    name = "djqueue"

    def __init__(self, url: str) -> None:
        super().__init__(url)
        import djqueue
        from bench import jobs

        djqueue.configure(redis_url=url)
        self.jobs = {"noop": jobs.noop, "sleep": jobs.sleep, "mark": jobs.mark, "probe": jobs.probe}

    def command(self) -> list[str]:
        return [
            sys.executable,
            "-m",
            "djqueue.worker.cli",
            "worker",
            "-r",
            "bench.jobs",
            "-c",
            str(CONCURRENCY),
            "--redis-url",
            self.url,
        ]

    def wait_ready(self) -> None:
        wait_until(lambda: self.r.scard("processes") > 0, timeout=30)
        time.sleep(0.5)

    def push(self, job: str, args: list[object]) -> None:
        self.jobs[job].perform_later(*args)

    def push_many(self, job: str, args_list: list[list[object]]) -> None:
        self.jobs[job].perform_bulk(args_list)

    def push_at(self, job: str, args: list[object], at: float) -> None:
        self.jobs[job].perform_at(at, *args)

    def drained(self) -> bool:
        working = self.r.keys("working:*")
        return self.r.llen("queue:default") == 0 and not any(self.r.llen(k) for k in working)


class Dramatiq(System):
    name = "dramatiq"

    def __init__(self, url: str) -> None:
        super().__init__(url)
        os.environ["BENCH_REDIS_URL"] = url
        try:
            from bench import dramatiq_jobs
        except ImportError:
            raise SystemExit(
                'dramatiq not found: pip install -e ".[bench]" (or run with --systems djqueue,bare)'
            ) from None

        self.actors = {
            "noop": dramatiq_jobs.noop,
            "sleep": dramatiq_jobs.sleep,
            "mark": dramatiq_jobs.mark,
            "probe": dramatiq_jobs.probe,
        }

    def command(self) -> list[str]:
        return [
            sys.executable,
            "-m",
            "dramatiq",
            "bench.dramatiq_jobs",
            "-p",
            "1",
            "-t",
            str(CONCURRENCY),
        ]

    def wait_ready(self) -> None:
        time.sleep(3.0)

    def push(self, job: str, args: list[object]) -> None:
        self.actors[job].send(*args)

    def push_at(self, job: str, args: list[object], at: float) -> None:
        delay = max(0, int((at - time.time()) * 1000))
        self.actors[job].send_with_options(args=tuple(args), delay=delay)

    def drained(self) -> bool:
        return self.r.llen("dramatiq:default") == 0 and self.r.hlen("dramatiq:default.msgs") == 0


class Bare(System):
    name = "bare loop"

    def command(self) -> list[str]:
        return [sys.executable, "-m", "bench.bare_worker", self.url, "default", str(CONCURRENCY)]

    def push(self, job: str, args: list[object]) -> None:
        self.r.lpush("queue:default", json.dumps({"class": f"bench.{job}", "args": args}))

    def push_many(self, job: str, args_list: list[list[object]]) -> None:
        pipe = self.r.pipeline(transaction=False)
        for args in args_list:
            pipe.lpush("queue:default", json.dumps({"class": f"bench.{job}", "args": args}))
        pipe.execute()

    def drained(self) -> bool:
        return self.r.llen("queue:default") == 0


def drain_rate(system: System, job: str, count: int) -> float:
    """Jobs per second from the first job's start until the pre-filled queue is empty."""
    system.r.flushall()
    system.push("mark", ["bench:start"])
    system.push_many(job, [[i] for i in range(count)])
    system.start()
    try:
        wait_until(lambda: system.r.exists("bench:start") == 1, timeout=60)
        finished = wait_until(system.drained, timeout=600)
        started = float(system.r.get("bench:start") or 0)
    finally:
        system.stop()
    return count / (finished - started)


def pickup_latency(system: System, samples: int) -> list[float]:
    """Seconds from push to start, one job at a time on an idle worker."""
    system.r.flushall()
    system.start()
    try:
        system.wait_ready()
        for _ in range(samples):
            system.push("probe", ["bench:latency", time.time()])
            time.sleep(0.02 + random.random() * 0.01)
        wait_until(lambda: system.r.llen("bench:latency") >= samples, timeout=60)
    finally:
        system.stop()
    return [float(x) for x in system.r.lrange("bench:latency", 0, -1)]


def scheduled_lateness(system: System, samples: int) -> list[float]:
    """Seconds between a scheduled job's due time and its start."""
    system.r.flushall()
    system.start()
    try:
        system.wait_ready()
        now = time.time()
        for _ in range(samples):
            at = now + 1 + random.random() * 5
            system.push_at("probe", ["bench:late", at], at)
        wait_until(lambda: system.r.llen("bench:late") >= samples, timeout=120)
    finally:
        system.stop()
    return [float(x) for x in system.r.lrange("bench:late", 0, -1)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller counts")
    parser.add_argument(
        "--systems",
        default="djqueue,dramatiq,bare",
        help="comma-separated subset of djqueue,dramatiq,bare",
    )
    options = parser.parse_args()
    noop_n, sleep_n, samples = (2000, 300, 50) if options.quick else (20_000, 2_000, 200)
    wanted = options.systems.split(",")
    server = BenchRedis().start()
    classes = {"djqueue": Djqueue, "dramatiq": Dramatiq, "bare": Bare}
    results: dict[str, dict[str, float]] = {}
    try:
        for key in wanted:
            system = classes[key](server.url)
            res: dict[str, float] = {}
            print(f"-- {system.name}", flush=True)
            res["noop_per_s"] = drain_rate(system, "noop", noop_n)
            print(f"   no-op: {res['noop_per_s']:,.0f} jobs/s", flush=True)
            res["sleep_per_s"] = drain_rate(system, "sleep", sleep_n)
            print(f"   sleep 10 ms: {res['sleep_per_s']:,.0f} jobs/s", flush=True)
            lat = pickup_latency(system, samples)
            res["pickup_p50_ms"] = statistics.median(lat) * 1000
            res["pickup_p99_ms"] = percentile(lat, 99) * 1000
            print(
                f"   pickup p50/p99: {res['pickup_p50_ms']:.2f} / {res['pickup_p99_ms']:.2f} ms",
                flush=True,
            )
            if key != "bare":
                late = scheduled_lateness(system, samples // 2)
                res["sched_p50_ms"] = statistics.median(late) * 1000
                res["sched_p99_ms"] = percentile(late, 99) * 1000
                print(
                    f"   scheduled lateness p50/p99: {res['sched_p50_ms']:.0f} / "
                    f"{res['sched_p99_ms']:.0f} ms",
                    flush=True,
                )
            res["peak_rss_mb"] = system.peak_rss_kb / 1024
            print(f"   peak RSS: {res['peak_rss_mb']:.1f} MB", flush=True)
            results[system.name] = res
    finally:
        server.close()
    report(results, noop_n, sleep_n)


def report(results: dict[str, dict[str, float]], noop_n: int, sleep_n: int) -> None:
    names = list(results)
    metrics = [
        ("noop_per_s", f"no-op jobs/s ({noop_n:,})"),
        ("sleep_per_s", f"sleep-10ms jobs/s ({sleep_n:,}; ideal 1,000)"),
        ("pickup_p50_ms", "pickup p50 ms"),
        ("pickup_p99_ms", "pickup p99 ms"),
        ("sched_p50_ms", "scheduled lateness p50 ms"),
        ("sched_p99_ms", "scheduled lateness p99 ms"),
        ("peak_rss_mb", "worker peak RSS MB"),
    ]
    print()
    header = f"{'':44}" + "".join(f"{n:>14}" for n in names)
    others = [n for n in names if n != "djqueue"]
    if "djqueue" in results:
        header += "".join(f"{'djq/' + n.split()[0]:>16}" for n in others)
    print(header)
    for key, label in metrics:
        row = f"{label:44}"
        for n in names:
            value = results[n].get(key)
            row += f"{value:>14,.2f}" if value is not None else f"{'-':>14}"
        if "djqueue" in results:
            for n in others:
                a, b = results["djqueue"].get(key), results[n].get(key)
                row += f"{a / b:>15.2f}x" if a and b else f"{'-':>16}"
        print(row)
    out = ROOT / "bench" / "results"
    out.mkdir(exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    (out / f"worker-{stamp}.json").write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
