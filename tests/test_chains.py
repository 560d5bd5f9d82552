"""Chains (`djqueue.chain`): steps in order, each once the one before succeeded, with its
result when asked; a step that dies stops the chain."""

from __future__ import annotations

import json
import time

import pytest

import djqueue

from .batch_jobs import add_to, doomed, step
from .worker_support import wait_for


def entries(r, key: str) -> list:
    return [json.loads(entry) for entry in r.lrange(key, 0, -1)]


def test_three_steps_run_in_order_each_once(r, worker):
    jids = djqueue.chain(step.s("c", 1), step.s("c", 2), step.s("c", 3)).perform_later()
    assert len(jids) == 3 and r.llen("queue:default") == 1  # only the first waits
    first = json.loads(r.lindex("queue:default", 0))
    assert [s["queue"] for s in first["chain"]["next"]] == ["default", "default"]
    worker(concurrency=3)
    wait_for(lambda: r.llen("c") == 3, what="three steps")
    time.sleep(0.3)
    assert entries(r, "c") == [[1], [2], [3]]


def test_a_step_s_result_is_the_next_step_s_first_argument(r, worker):
    djqueue.chain(
        add_to.s(1, "p", 10), add_to.s("p", 100), add_to.s("p", 1000), pass_result=True
    ).perform_later()
    worker(concurrency=2)
    wait_for(lambda: r.llen("p") == 3, what="three steps")
    assert entries(r, "p") == [[1, 10], [11, 100], [111, 1000]]


def test_a_step_that_dies_stops_the_chain(r, worker):
    jids = djqueue.chain(step.s("d", 1), doomed.s("d"), step.s("d", 3)).perform_later()
    worker(concurrency=2)
    wait_for(lambda: r.zcard("dead") == 1, what="the dead step")
    time.sleep(0.5)
    assert r.lrange("d", 0, -1) == ["[1]", "ran"]
    assert json.loads(r.zrange("dead", 0, 0)[0])["jid"] == jids[1]
    assert r.llen("queue:default") == 0


def test_a_step_retried_goes_on_once_it_succeeds(r, worker):
    djqueue.chain(
        add_to.s(0, "r", 1), add_to.s("r", 2, True), add_to.s("r", 3), pass_result=True
    ).perform_later()
    worker(concurrency=2, poll_interval=0.1)
    wait_for(lambda: r.llen("r") == 3, what="three steps")
    time.sleep(0.5)
    assert entries(r, "r") == [[0, 1], [1, 2], [3, 3]]


def test_a_chain_needs_signatures(r):
    with pytest.raises(TypeError, match="chain step 2 must be a job signature"):
        djqueue.chain(step.s("x"), step).perform_later()
    with pytest.raises(ValueError, match="at least one step"):
        djqueue.chain()
    assert r.llen("queue:default") == 0


@pytest.mark.parametrize("heartbeat", [0.3, 30.0])
def test_a_step_cancelled_while_it_runs_stops_the_chain(r, worker, heartbeat):
    """It ends cancelled, not completed, and the next step is not pushed: whether it saw the
    request (``current_job().cancelled``, read by its worker's beat) or returned before its
    worker read it (a beat far away): the acknowledgement reads the request as the status
    does."""
    from .batch_jobs import until_cancelled, until_flagged

    job = until_cancelled if heartbeat < 1 else until_flagged
    first, _second = djqueue.chain(job.s("u", retention=60), step.s("u", "next")).perform_later()
    worker(concurrency=2, heartbeat_interval=heartbeat)
    wait_for(lambda: r.llen("u:started"), what="the first step's start")
    assert djqueue.cancel(first) == "cancelling"
    wait_for(lambda: djqueue.status(first).state == "cancelled", what="the cancelled end")
    time.sleep(0.5)
    assert r.llen("u") == 1 and r.llen("queue:default") == 0


def test_signatures_of_function_and_class_jobs(r):
    from djqueue.batch import Signature

    class Report(djqueue.Job, name="b.report"):
        def perform(self, *args: object) -> None:
            pass

    low = step.s("k", 1, queue="low")
    assert isinstance(low, Signature) and low.item["queue"] == "low"
    assert low.item["args"] == ["k", 1] and "queue" not in step.s("k").item
    jid = Report.s("weekly").perform_later()
    (pushed,) = (json.loads(job) for job in r.lrange("queue:default", 0, -1))
    assert pushed["jid"] == jid and pushed["class"] == "b.report" and pushed["args"] == ["weekly"]
