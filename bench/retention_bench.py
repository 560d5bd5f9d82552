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

import argparse
import statistics

import redis

from bench.compare_revisions import ROOT, drain_rate
from bench.redis_server import BenchRedis

MODES: dict[str, dict[str, object] | None] = {"off": None, "on": {"retention": 60}}


def redis_us(r: redis.Redis) -> float:
    """Microseconds Redis spent in commands since the last CONFIG RESETSTAT (INFO
    commandstats): the server's side of the cost, which the worker's CPU does not show."""
    stats: dict[str, dict[str, float]] = r.info("commandstats")  # type: ignore[assignment]
    return sum(float(entry.get("usec", 0)) for entry in stats.values())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=20_000, help="a multiple of 1,000")
    options = parser.parse_args()
    drain: dict[str, list[float]] = {mode: [] for mode in MODES}
    cpu: dict[str, list[float]] = {mode: [] for mode in MODES}
    in_redis: dict[str, list[float]] = {mode: [] for mode in MODES}
    with BenchRedis() as url:
        for round_no in range(options.rounds):
            order = list(MODES) if round_no % 2 == 0 else list(reversed(MODES))
            for mode in order:
                r = redis.Redis.from_url(url)
                r.config_resetstat()
                rate, us = drain_rate(ROOT, url, options.jobs, MODES[mode])
                scripts = redis_us(r) / options.jobs
                statuses = len(r.keys("djqueue:status:*"))
                r.close()
                drain[mode].append(rate)
                cpu[mode].append(us)
                in_redis[mode].append(scripts)
                print(
                    f"round {round_no + 1} retention {mode:>3}: no-op drain {rate:,.0f}/s, "
                    f"worker CPU {us:.1f} us/job, Redis {scripts:.1f} us/job, "
                    f"{statuses:,} status keys",
                    flush=True,
                )
    summary(
        [
            ("no-op drain, jobs/s", drain, ",.0f"),
            ("worker CPU us per job", cpu, ".1f"),
            ("Redis us per job (all cmds)", in_redis, ".1f"),
        ]
    )


def summary(rows: list[tuple[str, dict[str, list[float]], str]]) -> None:
    """Each row's medians "off" and "on" and their ratio, then the first row's ratio per
    round (``bench.metrics_bench`` prints its own figures the same way)."""
    print()
    print(f"{'':28}{'off':>12}{'on':>12}{'on/off':>10}")
    for label, values, shape in rows:
        off, on = statistics.median(values["off"]), statistics.median(values["on"])
        print(f"{label:28}{off:>12{shape}}{on:>12{shape}}{on / off:>10.2f}")
    first = rows[0][1]
    per_round = [a / b for a, b in zip(first["on"], first["off"], strict=True)]
    shown = ", ".join(f"{x:.2f}" for x in per_round)
    print(f"{rows[0][0].split(',')[0]} on/off per round: {shown}")


if __name__ == "__main__":
    main()
