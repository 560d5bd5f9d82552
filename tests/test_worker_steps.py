"""Runtime steps of one's own (`djqueue.worker.around`) and server middleware written once, as
generators: the same code runs around a thread-run job and an ``async def`` job, once per job,
and on the event loop without a thread per job. A real worker on a real Redis."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

import djqueue
from djqueue.worker import around

from . import jobs_for_worker as jobs
from .worker_support import wait_for

pytestmark = pytest.mark.slow

#: (phase, jid, thread name), appended by the step below in the worker's threads.
seen: list[tuple[str, str, str]] = []
#: Thread names the middleware below ran in.
wrapped: list[str] = []


def tally(payload: dict[str, Any]) -> Iterator[None]:
    """A user's runtime step, written once: no ``acall``, no thread of its own."""
    seen.append(("before", payload["jid"], threading.current_thread().name))
    try:
        yield
    finally:
        seen.append(("after", payload["jid"], threading.current_thread().name))


class Stamp:
    """A server middleware written once, as a generator (no ``call_next``, no ``acall``)."""

    def __call__(self, job: Any, payload: dict[str, Any], queue: str) -> Iterator[None]:
        wrapped.append(threading.current_thread().name)
        yield


@pytest.fixture
def installed() -> Iterator[None]:
    seen.clear()
    wrapped.clear()
    around.add(tally)
    djqueue.server_middleware.add(Stamp)
    try:
        yield
    finally:
        around.remove(tally)
        djqueue.server_middleware.remove(Stamp)


def test_a_users_step_runs_once_per_job_for_a_thread_job_and_an_async_job(worker, r, installed):
    worker()
    thread_jid = jobs.record.perform_later("ran", "x")
    async_jid = jobs.asleep.perform_later("slept", 0)
    wait_for(lambda: r.llen("ran") and r.llen("slept"), what="both jobs")
    wait_for(lambda: len(seen) >= 4, what="the steps' ends")
    phases = {
        jid: sorted(phase for phase, seen_jid, _ in seen if seen_jid == jid)
        for jid in (thread_jid, async_jid)
    }
    assert phases == {thread_jid: ["after", "before"], async_jid: ["after", "before"]}
    where = {jid: name for phase, jid, name in seen if phase == "before"}
    assert where[thread_jid].startswith("djqueue-processor-")
    assert where[async_jid] == "djqueue-asyncio"
    assert len(wrapped) == 2 and "djqueue-asyncio" in wrapped
    assert any(name.startswith("djqueue-processor-") for name in wrapped)


def test_500_async_jobs_through_a_step_and_a_middleware_need_no_thread_each(worker, r, installed):
    before = threading.active_count()
    worker(async_concurrency=500)
    jobs.asleep.perform_bulk([["slept", 1]] * 500)
    most = 0

    def done() -> bool:
        nonlocal most
        most = max(most, threading.active_count())
        return r.llen("slept") == 500

    wait_for(done, what="every job", timeout=120)
    # A thread each would take 500: the worker's own threads and the loop's few spares only.
    assert most - before < 40, most - before
    wait_for(lambda: len(seen) == 1000, what="the steps' ends")
    assert {name for _, _, name in seen} == {"djqueue-asyncio"}
    assert len(wrapped) == 500 and set(wrapped) == {"djqueue-asyncio"}


@pytest.mark.parametrize("name", ["job_started", "job_succeeded", "job_failed"])
def test_a_job_signal_reaches_its_receiver_when_it_is_the_only_one_connected(worker, r, name):
    """The signals' step stays out of jobs when nobody listens: one receiver of any of the
    three is enough to bring it back."""
    heard: list[tuple[str, dict[str, Any]]] = []

    def receiver(sender: str, **kwargs: Any) -> None:
        heard.append((sender, kwargs))

    signal = getattr(djqueue.signals, name)
    signal.connect(receiver)
    try:
        worker()
        ok = jobs.record.perform_later("ran", "x")
        failed = jobs.fail_quietly.perform_later("boom")
        wait_for(lambda: r.llen("ran"), what="the job that succeeds")
        expected = {"job_started": 2, "job_succeeded": 1, "job_failed": 1}[name]
        wait_for(lambda: len(heard) >= expected, what=f"the {name} signals")
    finally:
        signal.disconnect(receiver)
    jids = sorted(kwargs["payload"]["jid"] for _, kwargs in heard)
    if name == "job_started":
        assert jids == sorted([ok, failed])
    elif name == "job_succeeded":
        assert jids == [ok] and heard[0][0] == "t.record" and heard[0][1]["elapsed"] >= 0
    else:
        assert jids == [failed] and heard[0][0] == "t.fail_quietly"
        assert str(heard[0][1]["exception"]) == "boom"
