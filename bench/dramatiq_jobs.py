"""The same workloads as bench/jobs.py, as Dramatiq actors (``dramatiq bench.dramatiq_jobs``)."""

from __future__ import annotations

import os
import time

import dramatiq
import redis
from dramatiq.brokers.redis import RedisBroker

URL = os.environ["BENCH_REDIS_URL"]
dramatiq.set_broker(RedisBroker(url=URL))
_r = redis.Redis.from_url(URL)


@dramatiq.actor(max_retries=0)
def noop(index: int) -> None:
    pass


@dramatiq.actor(max_retries=0)
def sleep(index: int) -> None:
    time.sleep(0.010)


@dramatiq.actor(max_retries=0)
def mark(key: str) -> None:
    _r.set(key, repr(time.time()))


@dramatiq.actor(max_retries=0)
def probe(key: str, expected_at: float) -> None:
    _r.rpush(key, repr(time.time() - expected_at))
