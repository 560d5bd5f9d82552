"""What a push from async code costs: ``aperform_later`` and the ``django.tasks`` backend's
``aenqueue`` (the same steps as the sync push, awaited on a ``redis.asyncio`` connection) against
their sync twins, and against what they replaced: the sync call in asgiref's ``sync_to_async``,
a thread per call (Django's default ``aenqueue``). One process, one event loop, one private
redis-server::

    python -m bench.async_push_bench                 # 10,000 jobs per loop, 5 rounds
    python -m bench.async_push_bench --jobs 20000 --rounds 3

The loops of one kind take turns in slices of 1,000 jobs, so load from elsewhere on a busy
machine slows them alike; each round gives a ratio to the sync call's time per job, and the
median and the spread are printed, with the client CPU per job (process time, which includes the
loopback's kernel work).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
from collections.abc import Awaitable, Callable

if __package__ in (None, ""):  # run as a file: make the repository importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import django
import redis
from asgiref.sync import sync_to_async
from django.conf import settings

from bench.client_bench import Meter, spread
from bench.redis_server import BenchRedis

ARGS = ("string", 0, {"mike": "bob"})  # the arguments of Sidekiq's own load test


def noop(text: str, index: int, extra: dict) -> None:
    """The job and the task pushed: never run here."""


def kinds() -> dict[str, tuple[Callable[[int], None], dict[str, Callable[[int], Awaitable[None]]]]]:
    """For each kind of push, the sync call and the async ones to weigh against it."""
    import djqueue

    try:
        from django.tasks import task
    except ImportError:  # Django 5.2: the django-tasks backport
        from django_tasks import task

    job = djqueue.job(name="bench.async_push.noop")(noop)
    django_task = task(noop)
    later = sync_to_async(job.perform_later)
    enqueue = sync_to_async(django_task.enqueue)

    def sync_job(i: int) -> None:
        job.perform_later("string", i, {"mike": "bob"})

    async def async_job(i: int) -> None:
        await job.aperform_later("string", i, {"mike": "bob"})

    async def thread_job(i: int) -> None:
        await later("string", i, {"mike": "bob"})

    def sync_task(i: int) -> None:
        django_task.enqueue("string", i, {"mike": "bob"})

    async def async_task(i: int) -> None:
        await django_task.aenqueue("string", i, {"mike": "bob"})

    async def thread_task(i: int) -> None:
        await enqueue("string", i, {"mike": "bob"})

    return {
        "perform_later": (
            sync_job,
            {"aperform_later": async_job, "sync_to_async(perform_later)": thread_job},
        ),
        "enqueue": (sync_task, {"aenqueue": async_task, "sync_to_async(enqueue)": thread_task}),
    }


def measure(
    loop: asyncio.AbstractEventLoop,
    sync: Callable[[int], None],
    others: dict[str, Callable[[int], Awaitable[None]]],
    n: int,
    rounds: int,
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Jobs per second and client CPU per job of each loop, per round."""
    step = 1000

    def sync_slice() -> None:
        for i in range(step):
            sync(i)

    def async_slice(call: Callable[[int], Awaitable[None]]) -> Callable[[], None]:
        async def pushes() -> None:
            for i in range(step):
                await call(i)

        return lambda: loop.run_until_complete(pushes())

    rates: dict[str, list[float]] = {name: [] for name in ("sync", *others)}
    cpu: dict[str, list[float]] = {name: [] for name in rates}
    for _ in range(rounds):
        meters = {name: Meter() for name in rates}
        for _ in range(n // step):
            meters["sync"].run(step, sync_slice)
            for name, call in others.items():
                meters[name].run(step, async_slice(call))
        for name, meter in meters.items():
            rates[name].append(meter.rate)
            cpu[name].append(meter.cpu_us)
    return rates, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=10_000, help="a multiple of 1,000")
    parser.add_argument("--rounds", type=int, default=5)
    options = parser.parse_args()

    server = BenchRedis().start()
    loop = asyncio.new_event_loop()
    try:
        settings.configure(
            INSTALLED_APPS=["djqueue"],
            DJQUEUE={"REDIS_URL": server.url, "DISCOVER": [], "ENQUEUE_ON_COMMIT": False},
            TASKS={"default": {"BACKEND": "djqueue.contrib.django.tasks.DjQueueBackend"}},
            USE_TZ=True,
        )
        django.setup()
        bare = redis.Redis.from_url(server.url)
        found = kinds()
        for sync, others in found.values():  # warm up: both pools, the script, the executor
            sync(0)
            for call in others.values():
                loop.run_until_complete(call(0))
        print(
            f"redis-py {redis.__version__}, Django {django.__version__}, "
            f"{options.jobs:,} jobs per loop, {options.rounds} rounds\n"
        )
        for kind, (sync, others) in found.items():
            bare.flushall()
            rates, cpu = measure(loop, sync, others, options.jobs, options.rounds)
            print(
                f"{kind:30s} jobs/s  {spread(rates['sync'])}   "
                f"client CPU {statistics.median(cpu['sync']):5.1f} us/job"
            )
            for name in others:
                ratio = [s / x for s, x in zip(rates["sync"], rates[name], strict=True)]
                print(
                    f"{name:30s} jobs/s  {spread(rates[name])}   "
                    f"client CPU {statistics.median(cpu[name]):5.1f} us/job   "
                    f"time per job {statistics.median(ratio):.2f}x {kind}'s "
                    f"({min(ratio):.2f}-{max(ratio):.2f})"
                )
            print()
        bare.close()
    finally:
        loop.close()
        server.close()


if __name__ == "__main__":
    main()
