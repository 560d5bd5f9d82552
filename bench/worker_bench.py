"""Worker benchmark: djqueue against Sidekiq, Dramatiq and a bare BRPOP loop, in one run.

    python -m bench.worker_bench               # full run (a few minutes)
    python -m bench.worker_bench --quick       # smaller counts, for a smoke run
    python -m bench.worker_bench --drain-only  # the drain rates and CPU per job only

Every system runs the same jobs against its own private redis-server, one process at
concurrency 10 (Sidekiq 6.4: ``-c 10`` with its logger at WARN, or at INFO, its default and
djqueue's, as ``sidekiq-info``; Dramatiq: ``-p 1 -t 10``). Each djqueue is compared with the
Sidekiq that writes the same log: ``djqueue`` (INFO, two lines per job) with ``sidekiq-info``
(two lines per job), ``djqueue log off`` with ``sidekiq`` (none).
Throughput is measured from the moment the first job of a pre-filled queue starts until the
queue is drained, so start-up time is left out; the worker's CPU time over the same span, per
job, is read from /proc. The figures worth quoting are the ratios, since this machine's absolute
speed varies from run to run.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import secrets
import shutil
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


def cpu_seconds(pid: int) -> tuple[float, int]:
    """CPU time used so far by every thread of ``pid`` and of its children, from the
    schedulers' nanosecond counters (``/proc/PID/task/TID/schedstat``): the clock-tick
    counters of ``/proc/PID/stat`` are too coarse for a run of a second or two. Also the
    times those threads were put on a CPU (the same file's third field): each is a thread
    switch, which a thread waking another for a job costs, and which the machine's load
    hardly changes, unlike time."""
    pids = [pid]
    children = Path(f"/proc/{pid}/task/{pid}/children")
    if children.exists():
        pids += [int(p) for p in children.read_text().split()]
    total = runs = 0
    for p in pids:
        for task in Path(f"/proc/{p}/task").glob("*"):
            try:
                fields = (task / "schedstat").read_text().split()
                total += int(fields[0])
                runs += int(fields[2])
            except (FileNotFoundError, ProcessLookupError, IndexError, ValueError):
                pass
    return total / 1e9, runs


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

    #: Variables the worker's environment adds to the bench's own.
    env: dict[str, str] = {}

    def start(self) -> None:
        env = {**os.environ, "BENCH_REDIS_URL": self.url, "PYTHONPATH": str(ROOT), **self.env}
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
        working = self.r.keys("djqueue:working:*")
        return self.r.llen("queue:default") == 0 and not any(self.r.llen(k) for k in working)


class DjqueueLogOff(Djqueue):
    """djqueue with its worker log at WARNING (no start/done lines): the like of Sidekiq with
    its logger at WARN."""

    name = "djqueue log off"

    def command(self) -> list[str]:
        return [*super().command(), "-r", "bench.log_off"]


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


class Sidekiq(System):
    """Sidekiq 6.4.1 (Debian's ruby-sidekiq) running bench/sidekiq_app.rb; jobs are pushed
    as Sidekiq's own client writes them."""

    name = "sidekiq"
    classes = {
        "noop": "BenchNoop",
        "sleep": "BenchSleep",
        "mark": "BenchMark",
        "probe": "BenchProbe",
    }

    def __init__(self, url: str) -> None:
        super().__init__(url)
        if shutil.which("sidekiq") is None:
            raise SystemExit("sidekiq not found: apt-get install ruby-sidekiq (Sidekiq 6.4.1)")

    def command(self) -> list[str]:
        return ["sidekiq", "-r", str(ROOT / "bench" / "sidekiq_app.rb"), "-c", str(CONCURRENCY)]

    def wait_ready(self) -> None:
        wait_until(lambda: self.r.scard("processes") > 0, timeout=30)
        time.sleep(0.5)

    def job(self, job: str, args: list[object], at: float | None = None) -> str:
        now = time.time()
        item: dict[str, object] = {
            "class": self.classes[job],
            "args": args,
            "retry": False,
            "queue": "default",
            "jid": secrets.token_hex(12),
            "created_at": now,
        }
        if at is None:
            item["enqueued_at"] = now
        return json.dumps(item)

    def push(self, job: str, args: list[object]) -> None:
        self.push_many(job, [args])

    def push_many(self, job: str, args_list: list[list[object]]) -> None:
        pipe = self.r.pipeline(transaction=False)
        pipe.sadd("queues", "default")
        for args in args_list:
            pipe.lpush("queue:default", self.job(job, args))
        pipe.execute()

    def push_at(self, job: str, args: list[object], at: float) -> None:
        self.r.zadd("schedule", {self.job(job, args, at): at})

    def drained(self) -> bool:
        return self.r.llen("queue:default") == 0


class SidekiqInfo(Sidekiq):
    """Sidekiq with its logger at INFO, its default: a start and a done line per job, as
    djqueue writes at its own default level (both to /dev/null here)."""

    name = "sidekiq info"
    env = {"BENCH_SIDEKIQ_LOG_LEVEL": "INFO"}


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


def drain_rate(system: System, job: str, count: int) -> tuple[float, float, float]:
    """Jobs per second from the first job's start until the pre-filled queue is empty, the
    worker's CPU time per job (microseconds) and its threads' runs on a CPU per job (thread
    switches), over the same span."""
    system.r.flushall()
    system.push("mark", ["bench:start"])
    system.push_many(job, [[i] for i in range(count)])
    system.start()
    assert system.process is not None
    pid = system.process.pid
    try:
        wait_until(lambda: system.r.exists("bench:start") == 1, timeout=60)
        cpu_before, runs_before = cpu_seconds(pid)
        finished = wait_until(system.drained, timeout=600)
        cpu_after, runs_after = cpu_seconds(pid)
        started = float(system.r.get("bench:start") or 0)
    finally:
        system.stop()
    return (
        count / (finished - started),
        (cpu_after - cpu_before) / count * 1e6,
        (runs_after - runs_before) / count,
    )


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
        default="djqueue,djqueue-log-off,sidekiq,sidekiq-info,dramatiq,bare",
        help="comma-separated subset of djqueue,djqueue-log-off,sidekiq,sidekiq-info,dramatiq,bare",
    )
    parser.add_argument(
        "--drain-only",
        action="store_true",
        help="only the drain rates and CPU per job (no pickup or scheduled lateness)",
    )
    options = parser.parse_args()
    noop_n, sleep_n, samples = (2000, 300, 50) if options.quick else (20_000, 2_000, 200)
    wanted = options.systems.split(",")
    server = BenchRedis().start()
    classes = {
        "djqueue": Djqueue,
        "djqueue-log-off": DjqueueLogOff,
        "sidekiq": Sidekiq,
        "sidekiq-info": SidekiqInfo,
        "dramatiq": Dramatiq,
        "bare": Bare,
    }
    results: dict[str, dict[str, float]] = {}
    try:
        for key in wanted:
            system = classes[key](server.url)
            res: dict[str, float] = {}
            print(f"-- {system.name}", flush=True)
            res["noop_per_s"], res["noop_cpu_us"], res["noop_runs"] = drain_rate(
                system, "noop", noop_n
            )
            print(
                f"   no-op: {res['noop_per_s']:,.0f} jobs/s, "
                f"{res['noop_cpu_us']:.1f} us CPU and {res['noop_runs']:.2f} thread switches "
                "per job",
                flush=True,
            )
            res["sleep_per_s"], _, _ = drain_rate(system, "sleep", sleep_n)
            print(f"   sleep 10 ms: {res['sleep_per_s']:,.0f} jobs/s", flush=True)
            if not options.drain_only:
                lat = pickup_latency(system, samples)
                res["pickup_p50_ms"] = statistics.median(lat) * 1000
                res["pickup_p99_ms"] = percentile(lat, 99) * 1000
                print(
                    f"   pickup p50/p99: {res['pickup_p50_ms']:.2f} / "
                    f"{res['pickup_p99_ms']:.2f} ms",
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
        ("noop_cpu_us", "worker CPU us per no-op job"),
        ("noop_runs", "worker thread switches per no-op job"),
        ("sleep_per_s", f"sleep-10ms jobs/s ({sleep_n:,}; ideal 1,000)"),
        ("pickup_p50_ms", "pickup p50 ms"),
        ("pickup_p99_ms", "pickup p99 ms"),
        ("sched_p50_ms", "scheduled lateness p50 ms"),
        ("sched_p99_ms", "scheduled lateness p99 ms"),
        ("peak_rss_mb", "worker peak RSS MB"),
    ]
    print()
    header = f"{'':44}" + "".join(f"{n:>17}" for n in names)
    others = [n for n in names if n != "djqueue"]
    if "djqueue" in results:
        header += "".join(f"{'djq/' + n.replace('djqueue ', ''):>16}" for n in others)
    print(header)
    for key, label in metrics:
        row = f"{label:44}"
        for n in names:
            value = results[n].get(key)
            row += f"{value:>17,.2f}" if value is not None else f"{'-':>17}"
        if "djqueue" in results:
            for n in others:
                a, b = results["djqueue"].get(key), results[n].get(key)
                row += f"{a / b:>15.2f}x" if a and b else f"{'-':>16}"
        print(row)
    # Each djqueue against the Sidekiq writing the same log lines per job.
    pairs = [("djqueue", "sidekiq info"), ("djqueue log off", "sidekiq")]
    pairs = [(a, b) for a, b in pairs if a in results and b in results]
    if pairs:
        print()
    for ours_name, theirs_name in pairs:
        ours, theirs = results[ours_name], results[theirs_name]
        print(
            f"{ours_name} / {theirs_name}: no-op {ours['noop_per_s'] / theirs['noop_per_s']:.2f}x "
            f"the jobs/s, {ours['noop_cpu_us'] / theirs['noop_cpu_us']:.2f}x the CPU "
            f"per job; 10 ms jobs {ours['sleep_per_s'] / theirs['sleep_per_s']:.2f}x"
        )
    out = ROOT / "bench" / "results"
    out.mkdir(exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    (out / f"worker-{stamp}.json").write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
