"""django.tasks results through djqueue's backend and a real worker: get_result, refresh,
aget_result, errors and worker ids, read from the task's djqueue status."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import sys

import pytest
from django.utils import timezone

from djqueue.api import RetrySet
from djqueue.contrib.django import tasks as tasks_module
from djqueue.contrib.django.tasks import DjQueueBackend
from djqueue.contrib.django.tasks_framework import (
    TaskResultDoesNotExist,
    TaskResultStatus,
    default_task_backend,
)
from tests.django.conftest import queued, seen
from tests.django.testapp.tasks import broken, flaky, meet, once, shout
from tests.worker_support import wait_for

pytestmark = pytest.mark.django_db(transaction=True)

BOTH_QUEUES = (("default", 0), ("tasks", 0))


def test_get_result_then_refresh_until_successful(worker, r):
    assert DjQueueBackend.supports_get_result
    result = shout.enqueue("hi")
    found = default_task_backend.get_result(result.id)
    assert found.status == TaskResultStatus.READY and found.args == ["hi"]
    assert found.enqueued_at is not None and found.started_at is None
    w = worker(queues=BOTH_QUEUES)

    def done():
        result.refresh()
        return result.status == TaskResultStatus.SUCCESSFUL

    wait_for(done, what="SUCCESSFUL")
    assert result.return_value == "HI"
    assert result.enqueued_at <= result.started_at <= result.finished_at
    assert result.worker_ids == [w.identity] and result.attempts == 1
    assert result.errors == []
    again = asyncio.run(default_task_backend.aget_result(result.id))
    assert again.status == TaskResultStatus.SUCCESSFUL and again.return_value == "HI"


def test_a_failed_attempt_shows_its_error_and_waits_to_run_again(worker, r):
    result = broken.enqueue()
    worker(queues=BOTH_QUEUES)

    def failed_once():
        result.refresh()
        return result.status == TaskResultStatus.READY and result.errors

    # READY: in the retry set, it will run again.
    (error,) = wait_for(failed_once, what="the first failure")
    assert error.exception_class_path == "builtins.RuntimeError"
    assert error.exception_class is RuntimeError
    assert error.traceback.startswith("Traceback (most recent call last)")
    assert "RuntimeError: task failed on purpose" in error.traceback
    assert result.attempts == 1 and result.finished_at is None


def test_an_unknown_result_does_not_exist(r):
    with pytest.raises(TaskResultDoesNotExist):
        default_task_backend.get_result("0" * 24)


def finished(task_signals):
    return [status for name, _, status in task_signals if name == "finished"]


def test_a_retried_attempt_sends_nothing_final_and_the_status_agrees(worker, r, task_signals):
    """task_finished(FAILED) after an attempt that is retried made receivers count a retry
    as a final failure while get_result said READY: only the end is sent."""
    result = flaky.enqueue(1)
    worker(queues=BOTH_QUEUES)

    def failed_once():
        result.refresh()
        return result.status == TaskResultStatus.READY and result.errors

    wait_for(failed_once, what="the first failure")
    assert finished(task_signals) == []
    RetrySet().find_job(result.id).add_to_queue()  # its backoff, now

    def done():
        result.refresh()
        return result.status == TaskResultStatus.SUCCESSFUL

    wait_for(done, what="SUCCESSFUL")
    wait_for(lambda: finished(task_signals), what="task_finished")
    assert finished(task_signals) == [TaskResultStatus.SUCCESSFUL]
    assert result.return_value == 2


def test_a_task_that_dies_sends_finished_failed_once(worker, r, task_signals):
    result = broken.enqueue()
    (payload,) = queued(r)
    r.lset("queue:default", 0, json.dumps({**payload, "retry": 0}))  # no retries: dead at once
    worker(queues=BOTH_QUEUES)
    wait_for(lambda: finished(task_signals), what="task_finished")
    assert finished(task_signals) == [TaskResultStatus.FAILED]
    result.refresh()
    assert result.status == TaskResultStatus.FAILED


def test_each_failed_attempt_keeps_its_error_with_its_traceback(worker, r, task_signals):
    """errors held only the last error, as "Class: message"; Django's contract is one
    TaskError per failed attempt with the formatted traceback."""
    result = flaky.enqueue(2)
    w = worker(queues=BOTH_QUEUES)
    for attempt in (1, 2):

        def failed(attempt=attempt):
            result.refresh()
            return len(result.errors) == attempt and result.status == TaskResultStatus.READY

        wait_for(failed, what=f"failure {attempt}")
        RetrySet().find_job(result.id).add_to_queue()

    def done():
        result.refresh()
        return result.status == TaskResultStatus.SUCCESSFUL

    wait_for(done, what="SUCCESSFUL")
    assert result.return_value == 3 and result.attempts == 3
    first, second = result.errors
    for error, attempt in ((first, 1), (second, 2)):
        assert error.exception_class is ValueError
        assert error.traceback.startswith("Traceback (most recent call last)")
        assert "in flaky" in error.traceback
        assert error.traceback.endswith(f"ValueError: attempt {attempt} failed on purpose\n")
    wait_for(lambda: finished(task_signals), what="task_finished")
    assert finished(task_signals) == [TaskResultStatus.SUCCESSFUL]
    # What the task saw of its workers at each attempt: one id per attempt, each the worker's.
    assert [report["worker_ids"] for report in seen(r, "flaky")] == [
        [w.identity] * attempt for attempt in (1, 2, 3)
    ]


def test_get_result_shows_the_task_as_enqueued_with_using(r):
    when = timezone.now() + dt.timedelta(hours=1)
    result = shout.using(queue_name="default", run_after=when).enqueue("x")
    assert result.enqueued_at is not None
    found = default_task_backend.get_result(result.id)
    assert found.task.queue_name == "default"
    assert abs(found.task.run_after - when) < dt.timedelta(milliseconds=1)
    assert found.enqueued_at is not None


def test_get_result_of_a_task_whose_module_this_process_never_imported(r):
    """A web process reads the result of a task defined in a module it has not imported:
    the module is imported when it belongs to an installed app."""
    from tests.django.testapp import late_tasks

    result = late_tasks.late.enqueue(4)
    del tasks_module._tasks[late_tasks.late.module_path]
    del sys.modules[late_tasks.__name__]
    found = default_task_backend.get_result(result.id)
    assert found.task.name == "late" and found.args == [4]


def test_a_task_with_retry_0_dies_at_its_first_failure(worker, r, task_signals):
    result = once.enqueue(1)
    worker(queues=BOTH_QUEUES)
    wait_for(lambda: finished(task_signals), what="task_finished")
    assert finished(task_signals) == [TaskResultStatus.FAILED]
    result.refresh()
    assert result.status == TaskResultStatus.FAILED and len(result.errors) == 1
    assert 0 < r.ttl(f"djqueue:status:{result.id}") <= 60  # its own retention


def test_async_tasks_run_together_on_the_workers_event_loop(worker, r):
    """With one processor thread, ten async tasks that each wait for all ten to start can
    only succeed if they are awaited on the event loop, not run one by one on the thread."""
    results = [meet.enqueue(10) for _ in range(10)]
    worker(queues=BOTH_QUEUES, concurrency=1)

    def all_done():
        for result in results:
            result.refresh()
        return all(result.status == TaskResultStatus.SUCCESSFUL for result in results)

    wait_for(all_done, what="10 SUCCESSFUL", timeout=30)
    assert [result.return_value for result in results] == [True] * 10
