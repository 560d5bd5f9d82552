"""The process's job buffer, seen from outside: jobs fetched together never wait behind a slow
one while a processor is free, and quiet or shutdown send unstarted jobs back to the queue
without running a finished job twice."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence
from typing import Any

import djqueue
from djqueue.store import Keys
from djqueue.worker.buffer import JobBuffer
from djqueue.worker.fetch import Fetcher, Unit
from djqueue.worker.launcher import runtime_redis

from . import jobs_for_worker as jobs
from .worker_support import wait_for


@djqueue.job(name="t.event")
def event(label: str, seconds: float = 0.0) -> None:
    """Append ``label started`` / ``label finished`` to the list ``events``."""
    jobs.r().rpush("events", f"{label} started")
    time.sleep(seconds)
    jobs.r().rpush("events", f"{label} finished")


@djqueue.job(name="t.tick")
def tick(number: int) -> None:
    """A short job that records its jid each time it runs."""
    job = djqueue.current_job()
    assert job is not None
    jobs.r().rpush("ran", job["jid"])
    time.sleep(0.005)


def queued_jids(r, queue: str = "default") -> list[str]:
    return [json.loads(x)["jid"] for x in r.lrange(f"queue:{queue}", 0, -1)]


def test_a_slow_job_does_not_hold_up_a_job_fetched_with_it(worker, r):
    event.perform_later("slow", 2.0)
    event.perform_later("fast")
    worker(concurrency=2)
    wait_for(lambda: r.llen("events") == 4)
    events = r.lrange("events", 0, -1)
    # The fast one runs while the slow one does, in whichever order the two threads start.
    assert events[-1] == "slow finished"


class HeldFetcher(Fetcher):
    """A fetcher whose calls wait for ``go``: processors pile up behind the one in flight."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.go = threading.Event()

    def fetch(self, count: int, acks: Sequence[Unit] = (), back: Sequence[Unit] = ()) -> list[Unit]:
        assert self.go.wait(10)
        return super().fetch(count, acks, back)


def buffer_with(concurrency: int, fetcher_class: type[Fetcher] = Fetcher) -> JobBuffer:
    """A job buffer over the ``default`` queue, fetching with ``fetcher_class``."""
    redis_client = runtime_redis(djqueue.get_settings())
    keys, identity = Keys(), "host:1:abcdefabcdef"
    return JobBuffer(fetcher_class(redis_client, keys, identity, (("default", 0),)), concurrency)


def processors(buffer: JobBuffer, count: int) -> tuple[list[threading.Thread], list[Unit | None]]:
    """``count`` threads (not started) that each take one job, and the list they add it to."""
    taken: list[Unit | None] = []
    threads = [
        threading.Thread(target=lambda: taken.append(buffer.next()), daemon=True)
        for _ in range(count)
    ]
    return threads, taken


def test_every_processor_waiting_for_a_batch_gets_a_job_of_it(redis_url, r):
    """A batch wakes one of the processors waiting for it, which wakes the next once it has
    its job: all four get one of the four jobs, none is left asleep beside a buffered job."""
    jids = [jobs.record.perform_later("x", n) for n in range(4)]
    buffer = buffer_with(4, HeldFetcher)
    fetcher = buffer.fetcher
    assert isinstance(fetcher, HeldFetcher)
    threads, taken = processors(buffer, 4)
    for thread in threads:
        thread.start()
        time.sleep(0.05)  # the first fetches (held); the next ones wait for its batch
    fetcher.go.set()
    for thread in threads:
        thread.join(5)
    assert sorted(json.loads(unit.raw)["jid"] for unit in taken if unit) == sorted(jids)
    for unit in taken:
        assert unit is not None
        buffer.finished(unit, 0.0)
    buffer.flush()
    assert not r.keys("djqueue:working:*")


class FirstOfTwo(HeldFetcher):
    """The first fetch brings two jobs at most: a batch sized for fewer than wait for it."""

    first = True

    def fetch(self, count: int, acks: Sequence[Unit] = (), back: Sequence[Unit] = ()) -> list[Unit]:
        if self.first:
            count, self.first = min(count, 2), False
        return super().fetch(count, acks, back)


def test_processors_left_waiting_by_a_small_batch_fetch_for_themselves(redis_url, r):
    """Six processors wait for a batch that brings two jobs while more are queued behind the
    ones it takes (pushed meanwhile): the processor taking the last of the batch wakes a
    waiting one, which fetches; none sleeps beside a queue with jobs until a running job ends
    (the running jobs here never end)."""
    first = [jobs.record.perform_later("x", n) for n in range(2)]
    buffer = buffer_with(6, FirstOfTwo)
    fetcher = buffer.fetcher
    assert isinstance(fetcher, FirstOfTwo)
    threads, taken = processors(buffer, 6)
    threads[0].start()
    wait_for(lambda: buffer.fetching, what="the first fetch under way")
    for thread in threads[1:]:
        thread.start()
    time.sleep(0.1)  # the other five wait for that batch
    later = [jobs.record.perform_later("y", n) for n in range(4)]
    fetcher.go.set()
    for thread in threads:
        thread.join(5)
    assert not any(thread.is_alive() for thread in threads), "processors left waiting"
    assert sorted(json.loads(unit.raw)["jid"] for unit in taken if unit) == sorted(first + later)


def test_quiet_sends_buffered_jobs_back_while_long_jobs_run(worker, r):
    event.perform_later("fast")
    event.perform_later("slow1", 2.0)
    event.perform_later("slow2", 2.0)
    waiting = [event.perform_later(f"waiting{i}") for i in range(3)]
    w = worker(concurrency=2)
    wait_for(lambda: {"slow1 started", "slow2 started"} <= set(r.lrange("events", 0, -1)))
    r.lpush(f"{w.identity}-signals", "TSTP")
    wait_for(lambda: r.hget(w.identity, "quiet") == "true")
    # Unstarted jobs are back at the front of the queue, in their order, for other processes;
    # only the two running jobs are still held by this one.
    wait_for(lambda: queued_jids(r) == waiting[::-1])
    assert r.llen(f"djqueue:working:{w.identity}:default") == 2
    assert "slow1 finished" not in r.lrange("events", 0, -1)
    wait_for(lambda: r.llen(f"djqueue:working:{w.identity}:default") == 0)
    w.stop()
    events = r.lrange("events", 0, -1)
    assert sorted(events) == sorted(
        [
            f"{label} {state}"
            for label in ("fast", "slow1", "slow2")
            for state in ("started", "finished")
        ]
    )
    assert queued_jids(r) == waiting[::-1]


def test_jobs_turned_long_do_not_wait_in_a_busy_workers_buffer(worker, r):
    """Short jobs, then long ones: a top-up sized for the short ones brings long jobs that no
    processor will take before a long one ends; after a beat with none taken they are back in
    the queue (for an idle peer), while only the running two stay with this worker."""
    for n in range(30):
        event.perform_later(f"short{n}")
    for n in range(6):
        event.perform_later(f"long{n}", 3.0)
    w = worker(concurrency=2)
    wait_for(lambda: {"long0 started", "long1 started"} <= set(r.lrange("events", 0, -1)))
    # Within a few beats (0.3 s here), long before the running ones end (3 s).
    wait_for(lambda: r.llen("queue:default") == 4, timeout=2.0)
    assert r.llen(f"djqueue:working:{w.identity}:default") == 2
    assert "long0 finished" not in r.lrange("events", 0, -1)
    w.stop()


def test_term_pushes_buffered_jobs_back_and_never_reruns_finished_ones(worker, r):
    jids = tick.perform_bulk([[i] for i in range(400)])
    w = worker(concurrency=4)
    buffer = w.launcher.manager.buffer
    # Stop while the buffer holds fetched jobs and finished ones wait for their ack.
    wait_for(lambda: r.llen("ran") >= 40 and buffer.jobs and buffer.acks, timeout=30)
    w.stop()
    ran = r.lrange("ran", 0, -1)
    queued = queued_jids(r)
    assert len(ran) == len(set(ran)), "a job ran twice"
    assert not set(ran) & set(queued), "a finished job was pushed back"
    assert set(ran) | set(queued) == set(jids)
    assert len(queued) == len(set(queued))
    assert not r.keys("djqueue:working:*")
    # The next worker runs the rest, each job once.
    worker(concurrency=4)
    wait_for(lambda: r.llen("ran") == len(jids), timeout=60)
    wait_for(lambda: not r.keys("djqueue:working:*"))
    assert sorted(r.lrange("ran", 0, -1)) == sorted(jids)


def test_a_batch_empties_the_first_queue_first_and_acks_and_push_backs_ride_along(redis_url, r):
    settings = djqueue.get_settings()
    fetcher = Fetcher(
        runtime_redis(settings), Keys(), "host:1:abcdefabcdef", (("high", 0), ("low", 0))
    )
    high = [jobs.order.set(queue="high").perform_later("seen", f"high{i}") for i in range(3)]
    low = [jobs.order.set(queue="low").perform_later("seen", f"low{i}") for i in range(4)]
    batch = fetcher.fetch(5)
    assert [json.loads(unit.raw)["jid"] for unit in batch] == high + low[:2]
    assert [unit.queue for unit in batch] == ["high"] * 3 + ["low"] * 2
    # Acknowledge two, push the two low ones back (newest first), take nothing.
    assert fetcher.fetch(0, acks=batch[:2], back=batch[:2:-1]) == []
    assert r.lrange("djqueue:working:host:1:abcdefabcdef:high", 0, -1) == [batch[2].raw.decode()]
    assert not r.exists("djqueue:working:host:1:abcdefabcdef:low")
    assert queued_jids(r, "low") == low[::-1]
    assert queued_jids(r, "high") == []


def test_a_new_process_holds_no_job_it_cannot_start(worker, r):
    """Until one of its jobs has finished, a process takes only the jobs it can start, so a
    peer started later gets the rest at once (jobs used to count as short, and spare ones were
    held, before any had been measured)."""
    for n in range(4):
        jobs.hold.perform_later("held", n)
    try:
        worker(concurrency=2)
        wait_for(lambda: r.llen("held") == 2)
        worker(concurrency=2)
        wait_for(lambda: r.llen("held") == 4, what="the second process running the other two")
    finally:
        r.set("release", "1")


def test_jobs_pushed_back_after_a_crash_are_flagged_by_every_way_of_taking_them(redis_url, r):
    """By the batched fetch and by an idle processor's BLMOVE (where a sweep's push-back goes
    first when peers are idle); the job's own jid counts, not a "jid" in its arguments."""
    settings = djqueue.get_settings()
    fetcher = Fetcher(runtime_redis(settings), Keys(), "host:1:abcdefabcdef", (("default", 0),))
    mine = jobs.record.perform_later("x", {"jid": "f" * 24})
    other = jobs.record.perform_later("y")
    r.hset("djqueue:recoveries", mapping={mine: 0, "f" * 24: 0})
    batch = fetcher.fetch(5)
    assert {json.loads(u.raw)["jid"]: u.recovered for u in batch} == {mine: True, other: False}
    fetcher.fetch(0, back=batch[::-1])  # back to the queue, as unstarted
    first, second = fetcher.block(), fetcher.block()
    assert {json.loads(u.raw)["jid"]: u.recovered for u in (first, second)} == {
        mine: True,
        other: False,
    }


class CountingFetcher(HeldFetcher):
    """A held fetcher that notes how many jobs each call asked for."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.asked: list[int] = []

    def fetch(self, count: int, acks: Sequence[Unit] = (), back: Sequence[Unit] = ()) -> list[Unit]:
        self.asked.append(count)
        return super().fetch(count, acks, back)


def short_job_buffer(
    concurrency: int, average: float, during: float | None = None, queued: int = 0
) -> tuple[JobBuffer, CountingFetcher]:
    """A buffer as if jobs of ``average`` seconds had run and top-ups had seen ``during``
    jobs started meanwhile, over a queue of ``queued`` jobs."""
    for n in range(queued):
        jobs.record.perform_later("x", n)
    fetcher = CountingFetcher(
        runtime_redis(djqueue.get_settings()), Keys(), "host:1:abcdefabcdef", (("default", 0),)
    )
    fetcher.go.set()
    buffer = JobBuffer(fetcher, concurrency)
    buffer.average = average
    if during is not None:
        buffer.during = during
        buffer._reach()
    return buffer, fetcher


def test_a_top_up_that_runs_dry_grows_the_spare_to_cover_a_round_trip(redis_url, r):
    """Processors that find the buffer empty while a top-up is under way count as jobs it
    should have covered: the next batch brings enough for three such round trips, more than
    the processors that are free."""
    buffer, fetcher = short_job_buffer(4, 0.0001, queued=40)
    # From empty: the four free processors (the fixed spare, 2, is capped at `concurrency`).
    taken = [buffer.next() for _ in range(3)]
    assert fetcher.asked == [4]
    # The fourth processor takes the last job and tops up (2, the spare); the top-up is held
    # while two processors finish and find the buffer empty.
    fetcher.go.clear()
    threads = [threading.Thread(target=lambda: taken.append(buffer.next()), daemon=True)]
    threads[0].start()
    wait_for(lambda: len(fetcher.asked) == 2)
    for unit in taken[:2]:
        assert unit is not None
        buffer.finished(unit, 0.0001)
    for _ in range(2):
        threads.append(threading.Thread(target=lambda: taken.append(buffer.next()), daemon=True))
        threads[-1].start()
    wait_for(lambda: buffer.demand == 6)  # four jobs started, two processors kept waiting
    fetcher.go.set()
    for thread in threads:
        thread.join(5)
    wait_for(lambda: len(fetcher.asked) == 3)
    # The two waiting ones take the batch; the first tops up again, now to a spare of 6
    # (three round trips of two jobs each; with the free processor, capped at the spare when
    # that is more than `concurrency`), less the job still buffered.
    assert fetcher.asked == [4, 2, 6 - 1]


def test_long_jobs_hold_no_spare_however_many_a_round_trip_called_for(redis_url, r):
    """However many jobs round trips called for, the spare stays under four times the
    concurrency, and is held only while jobs are short: a process with long jobs takes only
    what its free processors start."""
    buffer, fetcher = short_job_buffer(4, 0.0001, during=10.0, queued=40)
    assert buffer.reach == 16
    buffer.average = 1.0
    assert buffer.next() is not None
    assert fetcher.asked == [4]
    assert len(buffer.jobs) == 3
    # Every processor busy and the buffer empty: no top-up for spare jobs.
    assert all(buffer.next() is not None for _ in range(3))
    assert fetcher.asked == [4] and not buffer.jobs


def test_jobs_of_milliseconds_hold_no_more_than_a_millisecond_of_spare(redis_url, r):
    """The spare is what the processors run in a millisecond at most, and never under the
    fixed ``max(2, concurrency // 2)``: jobs of 10 ms keep the fixed spare whatever the round
    trip, so a process holds no more jobs a peer could run than before."""
    buffer, _ = short_job_buffer(10, 0.001, during=5.0)
    assert buffer.reach == 10  # 15 called for, ten processors at 1 ms each in 1 ms
    buffer.average = 0.01
    buffer._reach()
    assert buffer.reach == 5


def test_jobs_grown_longer_are_not_fetched_for_by_the_spare_of_shorter_ones(redis_url, r):
    """The spare a run of tiny jobs called for is recomputed with the average job length
    before each fetch: once jobs take 10 ms, a fetch brings the fixed spare, not forty."""
    buffer, fetcher = short_job_buffer(10, 0.00003, during=20.0, queued=60)
    assert buffer.reach == 40
    buffer.average = 0.01
    assert buffer.next() is not None
    assert fetcher.asked == [10]  # the ten free processors; the fixed spare (5) is capped


def test_buffered_jobs_nobody_took_for_a_beat_go_back_to_their_queue(redis_url, r):
    """Spare jobs fetched while jobs were short wait while every processor runs a long one
    (the average learns it only as they end): after a beat in which none was taken they go
    back to the queue, where an idle peer process takes them."""
    [jobs.record.perform_later("x", n) for n in range(4)]
    buffer = buffer_with(4)
    unit = buffer.next()  # one processor: a batch for four, three wait in the buffer
    assert unit is not None and r.llen("queue:default") == 0
    buffer.flush(beat=True)
    assert r.llen("queue:default") == 0  # the first beat only notes what was taken
    second = buffer.next()  # taken during the next beat: the buffer flows, it keeps the rest
    buffer.flush(beat=True)
    assert r.llen("queue:default") == 0
    buffer.flush(beat=True)  # a whole beat with none taken: the two left go back
    assert r.llen("queue:default") == 2
    for done in (unit, second):
        assert done is not None
        buffer.finished(done, 0.0)
    buffer.flush()
    assert sum(buffer.held().values()) == 0


def test_a_single_processor_holds_no_second_job_of_the_fixed_spare(redis_url, r):
    """At concurrency 1 with short jobs, a fetch brings one job, as before the spare could
    grow: the spare past the concurrency is only for a round trip that calls for it."""
    [jobs.record.perform_later("x", n) for n in range(5)]
    buffer = buffer_with(1)
    for _ in range(3):
        unit = buffer.next()
        assert unit is not None
        buffer.finished(unit, 0.00001)
    assert r.llen("queue:default") == 2
    buffer.flush(push_back=True)
