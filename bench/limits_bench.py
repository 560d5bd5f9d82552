"""What jobs blocked on a limit cost the unlimited jobs sharing their queue: the unlimited
jobs' throughput with the blocked ones among them, as a ratio against the same jobs alone,
in turns, in one run, against one private redis-server.

    python -m bench.limits_bench                      # 3 rounds, 10,000 free + 1,000 blocked
    python -m bench.limits_bench --rounds 5 --jobs 20000 --blocked 2000
    python -m bench.limits_bench --before 6b6037b     # and the same with an older revision
    python -m bench.limits_bench --feed 500           # a short queue, fed as it drains

"alone" (off): ``--jobs`` unlimited jobs (each one INCR) in ``default``. "shared" (on): the
same, with ``--blocked`` jobs of ``@job(concurrency=1)`` spread evenly among them, whose one
slot the bench holds for the whole run, so none of them can run: parked at its push (pushed
through the push script with its limiter in its payload, as djqueue's client does) until a
slot is given back (`djqueue.limits`), which never happens here. With ``--before REV``, a third
mode, "before": the shared drain run by REV's worker, its jobs LPUSHed as they are (REV's
client parks nothing at the push; a job without the limiter in its payload is queued by this
tree too) (its tree exported with ``git archive``
into a temporary folder, its djqueue first on the path), to measure a change to what a
refusal costs against the revision before it in the same command. All use ``djqueue worker
-c 10``. The goal: shared/alone near 1 (a blocked job costs no refusal, not a waiting thread nor a
refusal per pass).

A queue filled before the drain is the kindest case for a refused job put back on a timer: it
comes round again only after every job pushed before its return. ``--feed N`` keeps the queue
short instead, as a steady stream does: the jobs (the same, in the same order) are pushed N
at a time whenever fewer than N wait, so a job put back comes round about every second.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import redis

from bench.compare_revisions import ROOT, _cpu_seconds, bench_job, start_worker
from bench.limit_jobs import limited
from bench.on_off import Rounds, arguments
from bench.redis_server import BenchRedis
from djqueue.limits import ADMISSION_FIELD, admission
from djqueue.store import Keys
from djqueue.store.jobs import JobStore
from djqueue.store.limits import LimitStore

#: "off": the unlimited jobs alone; "on": with the blocked jobs among them; "before": the
#: same as "on", run by an older revision's worker.
MODES = ("off", "on")


def free_rate(
    url: str, jobs: int, blocked: int, tree: Path = ROOT, feed: int = 0, parking: bool = True
) -> tuple[float, float, int, int]:
    """Unlimited jobs per second, from the first job's start until the last unlimited one
    ends; the worker's CPU per unlimited job (microseconds, start-up included: a figure a
    loaded machine blurs less than wall time); how many times the limiter refused a job
    meanwhile; and how many jobs were parked at their push. ``tree``: whose worker runs the
    jobs; ``feed``: push that many at a time while the queue holds fewer (0: all before the
    worker starts); ``parking``: push through this tree's push script with the blocked jobs'
    limiter in their payload (`djqueue.limits.ADMISSION_FIELD`), as its client does, else
    LPUSH them as they are (an older revision's client, which parks nothing at the push)."""
    r = redis.Redis.from_url(url)
    r.flushall()
    LimitStore(r, Keys()).enter([("concurrent", "job:bench.limited", 1, 0.0)], "bench", 3600)
    now = time.time()
    every = jobs // blocked if blocked else 0
    field = {ADMISSION_FIELD: admission(limited.job_limits)} if parking else {}
    entries = [bench_job("bench.mark", ["bench:start"], 0, now)]
    for i in range(jobs):
        if every and i % every == 0 and i // every < blocked:
            entries.append(bench_job("bench.limited", [i], jobs + 1 + i, now, field))
        entries.append(bench_job("bench.free", [jobs], i + 1, now))
    store = JobStore(r, Keys())

    def push(some: list[str]) -> None:
        for start in range(0, len(some), 1000):
            if parking:
                store.push({"default": some[start : start + 1000]}, [])
            else:
                r.sadd("queues", "default")
                r.lpush("queue:default", *some[start : start + 1000])

    pushed = len(entries) if not feed else feed
    push(entries[:pushed])
    worker = start_worker(tree, url, ("-r", "bench.limit_jobs"))
    try:
        deadline = time.monotonic() + 300
        while not r.exists("bench:end"):
            if time.monotonic() > deadline or worker.poll() is not None:
                raise SystemExit("the worker did not finish the unlimited jobs")
            if pushed < len(entries) and r.llen("queue:default") < feed:
                push(entries[pushed : pushed + feed])
                pushed += feed
            time.sleep(0.005)
        started, finished = float(r.get("bench:start") or 0), float(r.get("bench:end") or 0)
        refused = int(r.hget("djqueue:limiter_hits", "job:bench.limited") or 0)
        parked = r.llen("djqueue:parked:job:bench.limited") - refused
        cpu = _cpu_seconds(worker.pid)
    finally:
        worker.terminate()
        worker.wait(30)
        r.close()
    return jobs / (finished - started), cpu / jobs * 1e6, refused, parked


def exported(revision: str, into: Path) -> Path:
    """``revision``'s tree, written into ``into`` (no git worktree: nothing to clean up in
    the repository)."""
    archive = subprocess.run(
        ["git", "archive", "--format=tar", revision], cwd=ROOT, check=True, capture_output=True
    )
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into


def main() -> None:
    parser = arguments(__doc__, default_jobs=10_000)
    parser.set_defaults(rounds=3)
    parser.add_argument("--blocked", type=int, default=1_000)
    parser.add_argument("--before", metavar="REV", help="also run the shared drain on REV")
    parser.add_argument("--feed", type=int, default=0, help="keep about this many queued")
    options = parser.parse_args()
    modes = ("off", "before", "on") if options.before else MODES
    rounds = Rounds(modes, options.rounds)
    scratch = Path(tempfile.mkdtemp(prefix="djqueue-limits-"))
    trees = {"off": ROOT, "on": ROOT}
    if options.before:
        trees["before"] = exported(options.before, scratch)
    try:
        with BenchRedis() as url:
            for number, mode in rounds:
                blocked = options.blocked if mode != "off" else 0
                rate, us, refused, parked = free_rate(
                    url, options.jobs, blocked, trees[mode], options.feed, mode != "before"
                )
                rounds.add("unlimited jobs/s", mode, rate)
                rounds.add("worker CPU us/unlimited job", mode, us)
                rounds.say(
                    number,
                    mode,
                    f"{rate:,.0f} unlimited jobs/s, worker CPU {us:.0f} us per unlimited job, "
                    f"{refused:,} refusals, {parked:,} parked at the push",
                )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(
        "(off: the unlimited jobs alone; on: with the blocked jobs among them"
        + (f"; before: the same, run by {options.before})" if options.before else ")")
    )
    rounds.summary({"unlimited jobs/s": ",.0f", "worker CPU us/unlimited job": ".0f"})


if __name__ == "__main__":
    main()
