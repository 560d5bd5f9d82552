"""What jobs blocked on a limit cost the unlimited jobs sharing their queue: the unlimited
jobs' throughput with the blocked ones among them, as a ratio against the same jobs alone,
in turns, in one run, against one private redis-server.

    python -m bench.limits_bench                      # 3 rounds, 10,000 free + 1,000 blocked
    python -m bench.limits_bench --rounds 5 --jobs 20000 --blocked 2000

"alone": ``--jobs`` unlimited jobs (each one INCR) in ``default``. "shared": the same, with
``--blocked`` jobs of ``@job(concurrency=1)`` spread evenly among them, whose one slot the
bench holds for the whole run: each is refused, put back into the schedule set for 1-2 s
(`djqueue.limits`), moved to the queue again by the poller and refused again, until the
unlimited jobs are done. Both use ``djqueue worker -c 10``. The goal: shared/alone near 1
(the refused jobs cost their round trips, not a waiting thread).
"""

from __future__ import annotations

import time

import redis

from bench.compare_revisions import ROOT, _cpu_seconds, bench_job, start_worker
from bench.on_off import Rounds, arguments
from bench.redis_server import BenchRedis
from djqueue.store import Keys
from djqueue.store.limits import LimitStore

#: "off": the unlimited jobs alone; "on": with the blocked jobs among them.
MODES = ("off", "on")


def free_rate(url: str, jobs: int, blocked: int) -> tuple[float, float, int]:
    """Unlimited jobs per second, from the first job's start until the last unlimited one
    ends; the worker's CPU per unlimited job (microseconds, start-up included: a figure a
    loaded machine blurs less than wall time); and how many times the limiter refused a job
    meanwhile."""
    r = redis.Redis.from_url(url)
    r.flushall()
    LimitStore(r, Keys()).enter([("concurrent", "job:bench.limited", 1, 0.0)], "bench", 3600)
    now = time.time()
    every = jobs // blocked if blocked else 0
    entries = [bench_job("bench.mark", ["bench:start"], 0, now)]
    for i in range(jobs):
        if every and i % every == 0 and i // every < blocked:
            entries.append(bench_job("bench.limited", [i], jobs + 1 + i, now))
        entries.append(bench_job("bench.free", [jobs], i + 1, now))
    pipe = r.pipeline(transaction=False)
    pipe.sadd("queues", "default")
    for start in range(0, len(entries), 1000):
        pipe.lpush("queue:default", *entries[start : start + 1000])
    pipe.execute()
    worker = start_worker(ROOT, url, ("-r", "bench.limit_jobs"))
    try:
        deadline = time.monotonic() + 300
        while not r.exists("bench:end"):
            if time.monotonic() > deadline or worker.poll() is not None:
                raise SystemExit("the worker did not finish the unlimited jobs")
            time.sleep(0.005)
        started, finished = float(r.get("bench:start") or 0), float(r.get("bench:end") or 0)
        refused = int(r.hget("djqueue:limiter_hits", "job:bench.limited") or 0)
        cpu = _cpu_seconds(worker.pid)
    finally:
        worker.terminate()
        worker.wait(30)
        r.close()
    return jobs / (finished - started), cpu / jobs * 1e6, refused


def main() -> None:
    parser = arguments(__doc__, default_jobs=10_000)
    parser.set_defaults(rounds=3)
    parser.add_argument("--blocked", type=int, default=1_000)
    options = parser.parse_args()
    rounds = Rounds(MODES, options.rounds)
    with BenchRedis() as url:
        for number, mode in rounds:
            blocked = options.blocked if mode == "on" else 0
            rate, us, refused = free_rate(url, options.jobs, blocked)
            rounds.add("unlimited jobs/s", mode, rate)
            rounds.add("worker CPU us/unlimited job", mode, us)
            print(
                f"round {number} {mode:>3}: {rate:,.0f} unlimited jobs/s, worker CPU "
                f"{us:.0f} us per unlimited job, {refused:,} refusals",
                flush=True,
            )
    print("(off: the unlimited jobs alone; on: with the blocked jobs among them)")
    rounds.summary({"unlimited jobs/s": ",.0f", "worker CPU us/unlimited job": ".0f"})


if __name__ == "__main__":
    main()
