"""What the Batches pages cost as batches grow: a batch's page and a page of the list, read as
both UIs read them (the page model, `djqueue.web.batches`), on a private redis-server.

Run from the repository root::

    python -m bench.batch_pages                  # 100,000 jobs in the big batch, 7 rounds
    python -m bench.batch_pages --jobs 20000 --rounds 3

The batches are written in the layout the batch runtime writes (docs/design.md "Batches"):
a small batch (10 jobs, 2 failed), a big one (``--jobs`` jobs, all pending and failed once:
the worst a page meets) and 10,000 small batches in the listing. The cases:

- **small batch page** (the baseline): `batch_page` of the small batch.
- **big batch page**: `batch_page` of the big one. The read takes 100 pending jids
  (SRANDMEMBER) and 1,000 failures (HRANDFIELD) whatever the size, so it should cost a small
  multiple of the small one, not grow with the batch.
- **list page 1** and **list page 400**: `batches_page` among the 10,000 (ZREVRANGE by rank,
  then 25 HGETALLs: the same cost on any page).

Each round times every case once, in turn, so load from elsewhere hits them alike; each time
is the median of 20 calls. The medians of the rounds are printed in milliseconds with their
ratio to the small batch's page, and the ratio's range over the rounds.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable

import redis

import djqueue
from bench.redis_server import BenchRedis
from djqueue.store import Keys
from djqueue.web.batches import batch_page, batches_page

SMALL, BIG = "5" * 24, "b" * 24
LISTED = 10_000


def write(r: redis.Redis, bid: str, jobs: int, failed: int, created_at: float) -> None:
    keys = Keys()
    fields = {"description": f"batch {bid[:4]}", "created_at": created_at, "total": jobs}
    fields |= {"pending": jobs, "remaining": 0, "failures": failed, "dead": 0, "children": 0}
    fields["callbacks"] = json.dumps({"success": [{"class": "notify", "args": [1]}]})
    r.hset(keys.batch(bid), mapping=fields)
    r.zadd(keys.batches, {bid: created_at})
    failure = {"class": "reports.part", "error_class": "ValueError", "error_message": "row 17"}
    pipe = r.pipeline(transaction=False)
    for n in range(jobs):
        jid = f"{n:024x}"
        pipe.sadd(keys.batch_pending(bid), jid)
        if n < failed:
            pipe.hset(keys.batch_failed(bid), jid, json.dumps({**failure, "at": created_at + n}))
        if n % 5000 == 4999:
            pipe.execute()
    pipe.execute()


def fill(r: redis.Redis, jobs: int) -> None:
    now = time.time()
    write(r, SMALL, 10, 2, now)
    write(r, BIG, jobs, jobs, now - 1)
    keys = Keys()
    pipe = r.pipeline(transaction=False)
    for n in range(LISTED):
        bid = f"{n:024x}"
        pipe.hset(keys.batch(bid), mapping={"created_at": now - 10 - n, "total": 3, "pending": 1})
        pipe.zadd(keys.batches, {bid: now - 10 - n})
        if n % 5000 == 4999:
            pipe.execute()
    pipe.execute()


def timed(fn: Callable[[], object], calls: int = 20) -> float:
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--jobs", type=int, default=100_000)
    options = parser.parse_args()
    with BenchRedis() as url:
        djqueue.configure(redis_url=url)
        fill(redis.Redis.from_url(url), options.jobs)
        cases: dict[str, Callable[[], object]] = {
            "small batch page": lambda: batch_page(SMALL),
            f"big batch page ({options.jobs:,} jobs)": lambda: batch_page(BIG),
            "list page 1": lambda: batches_page({}),
            "list page 400": lambda: batches_page({"p": "400"}),
        }
        found: dict[str, list[float]] = {name: [] for name in cases}
        for _ in range(options.rounds):
            for name, case in cases.items():
                found[name].append(timed(case))
    base = found["small batch page"]
    print(f"{'':34}{'ms (median)':>12}{'x small':>10}  range")
    for name, values in found.items():
        ratios = sorted(v / b for v, b in zip(values, base, strict=True))
        median = statistics.median(values)
        spread = f"{ratios[0]:.2f}-{ratios[-1]:.2f}"
        print(f"{name:34}{median:>12.2f}{statistics.median(ratios):>10.2f}  {spread}")


if __name__ == "__main__":
    main()
