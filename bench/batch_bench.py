"""What being in a batch (`djqueue.Batch`) costs a job: its push and its acknowledgement, each
against the same jobs outside a batch, in turns, in one run, against one private redis-server.

    python -m bench.batch_bench                       # 5 rounds of 20,000 jobs each way
    python -m bench.batch_bench --rounds 6 --jobs 30000

"off" jobs are plain no-op jobs; "on" jobs are the same jobs pushed inside one batch with an
``on_success`` callback. The push is ``perform_bulk`` (1,000 jobs a round trip) in this
process, timed per job with its CPU; in a batch, push.lua also adds each jid to the batch's
pending set and counts it. The acknowledgement is the no-op drain of those jobs by
``djqueue worker -c 10`` (as ``bench.retention_bench`` measures it): in a batch, take.lua
decodes each acknowledged job, removes it from the pending set and moves the counts, and the
last one pushes the callback. Redis's own time per job (INFO commandstats) is printed beside
the worker's CPU, since the batch's work is done inside Redis.
"""

from __future__ import annotations

import os
import sys
import time

if __package__ in (None, ""):  # run as a file: make the repository importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import redis

import djqueue
from bench.compare_revisions import ROOT, _cpu_seconds, start_worker, wait_drained
from bench.jobs import noop
from bench.on_off import Rounds, arguments
from bench.redis_server import BenchRedis
from bench.retention_bench import redis_us

MODES = ("off", "on")


def fill(r: redis.Redis, jobs: int, in_batch: bool) -> tuple[float, float, djqueue.Batch | None]:
    """Empty Redis, queue the ``bench.mark`` job that starts the clock, then push ``jobs``
    no-op jobs (in one batch when ``in_batch``). Returns the push's wall and CPU time per
    job, in microseconds, and the batch."""
    r.flushall()
    djqueue.Client().push({"class": "bench.mark", "args": ["bench:start"], "retry": False})
    args = [[i] for i in range(jobs)]
    wall, cpu = time.perf_counter(), time.process_time()
    batch = None
    if in_batch:
        with djqueue.Batch(description="bench", on_success=noop.s(-1)) as batch:
            noop.perform_bulk(args)
    else:
        noop.perform_bulk(args)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return wall / jobs * 1e6, cpu / jobs * 1e6, batch


def drain(r: redis.Redis, url: str, jobs: int) -> tuple[float, float]:
    """The no-op drain of what `fill` queued: jobs per second, worker CPU us per job."""
    worker = start_worker(ROOT, url)
    try:
        finished = wait_drained(r, worker, "the worker")
        started = float(r.get("bench:start") or 0)
        cpu = _cpu_seconds(worker.pid)
    finally:
        worker.terminate()
        worker.wait(30)
    return jobs / (finished - started), cpu / jobs * 1e6


def main() -> None:
    options = arguments(__doc__).parse_args()
    rounds = Rounds(MODES, options.rounds, "batch")
    print(f"load average before: {os.getloadavg()[0]:.1f}", flush=True)
    with BenchRedis() as url:
        djqueue.configure(redis_url=url)
        r = redis.Redis.from_url(url)
        for number, mode in rounds:
            push_us, push_cpu, batch = fill(r, options.jobs, mode == "on")
            r.config_resetstat()
            rate, cpu = drain(r, url, options.jobs)
            in_redis = redis_us(r) / options.jobs
            if batch is not None:
                state = batch.status()
                assert state is not None and state.successful and state.total == options.jobs
            rounds.add("no-op drain, jobs/s", mode, rate)
            rounds.add("worker CPU us per job", mode, cpu)
            rounds.add("Redis us per job (drain)", mode, in_redis)
            rounds.add("push us per job (bulk)", mode, push_us)
            rounds.add("push CPU us per job", mode, push_cpu)
            rounds.say(
                number,
                mode,
                f"push {push_us:.1f} us/job (CPU {push_cpu:.1f}), drain {rate:,.0f}/s, "
                f"worker CPU {cpu:.1f} us/job, Redis {in_redis:.1f} us/job",
            )
        r.close()
    rounds.summary({"no-op drain, jobs/s": ",.0f"})
    print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
