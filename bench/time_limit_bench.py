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

from bench.compare_revisions import ROOT, drain_rate
from bench.on_off import Rounds, arguments
from bench.redis_server import BenchRedis

MODES: dict[str, dict[str, object] | None] = {"off": None, "on": {"time_limit": 30}}


def main() -> None:
    options = arguments(__doc__).parse_args()
    rounds = Rounds(MODES, options.rounds, "time_limit")
    with BenchRedis() as url:
        for number, mode in rounds:
            rate, us = drain_rate(ROOT, url, options.jobs, MODES[mode])
            rounds.add("no-op drain, jobs/s", mode, rate)
            rounds.add("worker CPU us per job", mode, us)
            rounds.say(number, mode, f"no-op drain {rate:,.0f}/s, worker CPU {us:.1f} us/job")
    rounds.summary({"no-op drain, jobs/s": ",.0f"})


if __name__ == "__main__":
    main()
