"""Expiring jobs: a job taken after its deadline never runs, and says so (count, log line,
signal, status); one taken in time runs. The deadline as the push writes it. An in-process
worker on a real Redis."""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis

import djqueue
from djqueue import signals
from djqueue.api import Queue, Stats
from djqueue.errors import JobFailed

from . import jobs_for_worker as jobs
from .worker_support import Running, wait_for


@pytest.fixture
def expired() -> Iterator[list[tuple[Any, dict[str, Any], float]]]:
    seen: list[tuple[Any, dict[str, Any], float]] = []

    def receiver(sender: Any, payload: dict[str, Any], late: float) -> None:
        seen.append((sender, payload, late))

    signals.job_expired.connect(receiver)
    yield seen
    signals.job_expired.disconnect(receiver)


def test_a_job_taken_after_its_deadline_never_runs_and_one_in_time_runs(
    worker: Callable[..., Running],
    r: redis.Redis,
    expired: list[tuple[Any, dict[str, Any], float]],
    caplog: pytest.LogCaptureFixture,
) -> None:
    # A paused queue holds the jobs past the short one's deadline: nothing takes them.
    Queue("mail").pause()
    late = jobs.record.set(queue="mail", expires_in=0.5, retention=60).perform_later("ran", 1)
    kept = jobs.record.set(queue="mail", expires_in=3600).perform_later("ran", 2)
    (deadline,) = [j.item["expires_at"] for j in Queue("mail").jobs() if j.jid == late]
    wait_for(lambda: time.time() > deadline, what="the deadline passed")
    Queue("mail").resume()
    worker(queues=(("mail", 0),))
    wait_for(lambda: r.llen("ran") == 1, what="the job in time ran")
    wait_for(lambda: Stats().expired == 1, what="the expired job counted")
    assert r.lrange("ran", 0, -1) == ["[2]"]  # only the one in time
    assert Queue("mail").size == 0 and not r.keys("djqueue:working:*")
    ((sender, payload, how_late),) = expired
    assert sender == "t.record" and payload["jid"] == late and how_late > 0
    assert f"t.record {late} expired " in caplog.text and "; not run" in caplog.text
    assert djqueue.status(late).state == "expired"
    with pytest.raises(JobFailed, match="ended expired"):
        djqueue.result(late, timeout=1)
    assert Stats().processed == 1 and Stats().failed == 0
    assert f"{kept} expired" not in caplog.text


def test_an_async_job_past_its_deadline_does_not_run_either(
    worker: Callable[..., Running], r: redis.Redis, expired: list[Any]
) -> None:
    djqueue.Client().push({"class": "t.asleep", "args": ["slept", 0], "expires_at": 1.0})
    jobs.asleep.perform_later("slept", 0)
    worker()
    wait_for(lambda: r.llen("slept") == 1 and len(expired) == 1, what="one run, one expired")
    wait_for(lambda: Stats().expired == 1, what="the expired job counted")


def test_the_push_writes_the_deadline_from_when_the_job_is_due(redis_url: str) -> None:
    now = time.time()
    pushed = jobs.record.set(expires_in=dt.timedelta(hours=1)).perform_later("x")
    later = jobs.record.set(expires_in=600).perform_in(7200, "x")
    (job,) = Queue().jobs()
    assert job.jid == pushed and job.item["expires_at"] == pytest.approx(now + 3600, abs=5)
    assert "expires_in" not in job.item
    (entry,) = djqueue.api.ScheduledSet().jobs()
    assert entry.jid == later and entry.item["expires_at"] == pytest.approx(now + 7800, abs=5)
    bulk = djqueue.Client().push_bulk(
        {"class": "t.record", "args": [["a"], ["b"]], "at": [now + 100, now + 200]}
        | {"expires_in": 10}
    )
    found = {e.jid: e.item["expires_at"] for e in djqueue.api.ScheduledSet().jobs()}
    assert found[bulk[0]] == pytest.approx(now + 110, abs=5)
    assert found[bulk[1]] == pytest.approx(now + 210, abs=5)


@pytest.mark.parametrize("value", [0, -1, "3600", 10 * 365 * 24 * 3600 + 1, True])
def test_a_bad_expires_in_is_named(redis_url: str, value: Any) -> None:
    with pytest.raises(ValueError, match="expires_in must be"):
        jobs.record.set(expires_in=value)
    with pytest.raises(ValueError, match="expires_in must be"):
        djqueue.Client().push({"class": "t.record", "args": [], "expires_in": value})
