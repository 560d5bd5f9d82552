"""What job tracking costs the worker: the no-op drain with ``retention`` off and on, in turns,
in one run, against one private redis-server.

    python -m bench.retention_bench                     # 5 rounds of 20,000 jobs each way
    python -m bench.retention_bench --rounds 6 --jobs 30000

"off" jobs are plain payloads (the default); "on" jobs carry ``"retention": 60``, so every
transition writes their status hash, and each one ends with its own completion write (the
return value kept) instead of riding on the next batched acknowledgement. Both runs use this
tree's code and ``djqueue worker -c 10``, as ``bench.compare_revisions`` measures it.
"""

from __future__ import annotations

import redis

from bench.compare_revisions import ROOT, drain_rate
from bench.on_off import Rounds, arguments
from bench.redis_server import BenchRedis

MODES: dict[str, dict[str, object] | None] = {"off": None, "on": {"retention": 60}}


def redis_us(r: redis.Redis) -> float:
    """Microseconds Redis spent in commands since the last CONFIG RESETSTAT (INFO
    commandstats): the server's side of the cost, which the worker's CPU does not show."""
    stats: dict[str, dict[str, float]] = r.info("commandstats")  # type: ignore[assignment]
    return sum(float(entry.get("usec", 0)) for entry in stats.values())


def main() -> None:
    options = arguments(__doc__).parse_args()
    rounds = Rounds(MODES, options.rounds, "retention")
    with BenchRedis() as url:
        for number, mode in rounds:
            r = redis.Redis.from_url(url)
            r.config_resetstat()
            rate, us = drain_rate(ROOT, url, options.jobs, MODES[mode])
            scripts = redis_us(r) / options.jobs
            statuses = len(r.keys("djqueue:status:*"))
            r.close()
            rounds.add("no-op drain, jobs/s", mode, rate)
            rounds.add("worker CPU us per job", mode, us)
            rounds.add("Redis us per job (all cmds)", mode, scripts)
            rounds.say(
                number,
                mode,
                f"no-op drain {rate:,.0f}/s, worker CPU {us:.1f} us/job, "
                f"Redis {scripts:.1f} us/job, {statuses:,} status keys",
            )
    rounds.summary({"no-op drain, jobs/s": ",.0f"})


if __name__ == "__main__":
    main()
