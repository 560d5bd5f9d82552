"""Django's own ``tests/tasks`` cases that hold for any backend (test_tasks.py,
test_dummy_backend.py, test_immediate_backend.py in Django 6.1), ported to djqueue's backend:
enqueue and aenqueue, get_result and aget_result, refresh, the attributes of a finished result,
errors, priority, run_after, queue names, validation and the signals' log lines. Where Django's
immediate backend runs a task inside ``enqueue``, these wait for a real worker to run it.

The cases that cannot apply, and why, are listed in docs/django.md ("Django's own test cases").
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import logging
import pickle

import pytest
from django.db import transaction
from django.utils import timezone

from djqueue.contrib.django.tasks import DjQueueBackend
from djqueue.contrib.django.tasks_framework import (
    InvalidTask,
    TaskResultDoesNotExist,
    TaskResultMismatch,
    TaskResultStatus,
    default_task_backend,
    task_backends,
)
from djqueue.contrib.django.tasks_framework import signals as task_signals
from tests.django.testapp import contract_tasks as tasks
from tests.worker_support import wait_for

pytestmark = pytest.mark.django_db(transaction=True)

#: Where Django's tasks framework logs (the backport's package name on Django 5.2).
LOGGER = task_signals.logger.name

QUEUES = (("default", 0), ("tasks", 0))


def finished(result):  # type: ignore[no-untyped-def]
    """Wait until a worker has finished ``result``'s task; the refreshed result."""

    def done():  # type: ignore[no-untyped-def]
        result.refresh()
        return result.is_finished

    wait_for(done, 30, f"{result.task.name} to finish")
    return result


def test_the_backend_is_djqueues():
    assert isinstance(task_backends["default"], DjQueueBackend)
    assert default_task_backend.alias == "default"


# -- enqueue, aenqueue ---------------------------------------------------------------------------


@pytest.mark.parametrize("task", [tasks.noop, tasks.noop_async])
def test_enqueue_gives_a_ready_result(r, task):
    result = task.enqueue()
    assert result.status == TaskResultStatus.READY
    assert result.task == task and result.args == [] and result.kwargs == {}
    assert result.started_at is None and result.finished_at is None
    assert result.is_finished is False
    with pytest.raises(ValueError, match="Task has not finished yet"):
        result.return_value  # noqa: B018


@pytest.mark.parametrize("task", [tasks.noop, tasks.noop_async])
def test_aenqueue_gives_a_ready_result(r, task):
    result = asyncio.run(task.aenqueue())
    assert result.status == TaskResultStatus.READY
    assert result.task == task and result.args == [] and result.kwargs == {}
    assert result.started_at is None and result.finished_at is None


def test_enqueue_keeps_positional_and_keyword_arguments(r):
    result = tasks.noop.enqueue(1, two=3)
    assert result.args == [1] and result.kwargs == {"two": 3}
    found = default_task_backend.get_result(result.id)
    assert found.args == [1] and found.kwargs == {"two": 3}


def test_an_argument_json_cannot_hold_is_refused(r):
    """Django's message is "Unsupported type"; djqueue's names the argument and its type."""
    with pytest.raises(TypeError, match="datetime"):
        tasks.noop.enqueue(dt.datetime.now())
    with pytest.raises(TypeError, match="datetime"):
        asyncio.run(tasks.noop.aenqueue(dt.datetime.now()))
    assert r.llen("queue:default") == 0


def test_an_unknown_queue_name_is_refused_at_using_and_at_enqueue(r, settings):
    with pytest.raises(InvalidTask, match="Queue 'queue-2' is not valid for backend"):
        tasks.noop.using(queue_name="queue-2")
    elsewhere = tasks.noop.using(queue_name="tasks")
    settings.TASKS = {
        "default": {
            "BACKEND": "djqueue.contrib.django.tasks.DjQueueBackend",
            "QUEUES": ["default"],
        }
    }
    with pytest.raises(InvalidTask, match="Queue 'tasks' is not valid for backend"):
        elsewhere.enqueue()
    with pytest.raises(InvalidTask, match="Queue 'tasks' is not valid for backend"):
        asyncio.run(elsewhere.aenqueue())


def test_priority_bounds_and_priority_kept(r):
    for bad in (-101, 101, 3.1):
        with pytest.raises(InvalidTask, match="priority must be a whole number"):
            tasks.noop.using(priority=bad)
    for good in (-100, 0, 100):
        result = tasks.noop.using(priority=good).enqueue()
        assert default_task_backend.get_result(result.id).task.priority == good


def test_run_after_must_be_aware_and_is_kept(r):
    with pytest.raises(InvalidTask, match="run_after must be an aware datetime"):
        tasks.noop.using(run_after=dt.datetime.now())
    when = timezone.now() + dt.timedelta(hours=1)
    result = tasks.noop.using(run_after=when).enqueue()
    found = default_task_backend.get_result(result.id)
    assert found.status == TaskResultStatus.READY
    assert abs(found.task.run_after - when) < dt.timedelta(milliseconds=1)


def test_the_enqueued_log_line_names_the_result(r, caplog):
    with caplog.at_level(logging.DEBUG, logger=LOGGER):
        result = tasks.noop.enqueue()
    (line,) = [x.getMessage() for x in caplog.records if x.name == LOGGER]
    assert "enqueued" in line and result.id in line


# -- get_result, aget_result, refresh --------------------------------------------------------


def test_get_result_equals_the_enqueued_result(r):
    result = default_task_backend.enqueue(tasks.noop, (), {})
    assert tasks.noop.get_result(result.id) == result


def test_aget_result_equals_the_aenqueued_result(r):
    result = asyncio.run(default_task_backend.aenqueue(tasks.noop, (), {}))
    assert asyncio.run(tasks.noop.aget_result(result.id)) == result


def test_refresh_of_a_task_not_run_yet_changes_nothing(r):
    result = asyncio.run(tasks.noop.aenqueue())
    before = dataclasses.asdict(result)
    result.refresh()
    assert dataclasses.asdict(result) == before
    asyncio.run(result.arefresh())
    assert dataclasses.asdict(result) == before


def test_a_missing_result_does_not_exist(r):
    with pytest.raises(TaskResultDoesNotExist):
        tasks.noop.get_result("123")
    with pytest.raises(TaskResultDoesNotExist):
        asyncio.run(tasks.noop.aget_result("123"))


def test_the_result_of_another_task_does_not_match(r):
    result = default_task_backend.enqueue(tasks.noop_async, (), {})
    with pytest.raises(TaskResultMismatch, match="Task does not match"):
        tasks.noop.get_result(result.id)
    with pytest.raises(TaskResultMismatch, match="Task does not match"):
        asyncio.run(tasks.noop.aget_result(result.id))


@pytest.mark.skipif(LOGGER == "django_tasks", reason="the backport pickles no Task by path")
def test_a_result_pickles(r):
    result = tasks.noop.enqueue()
    assert pickle.loads(pickle.dumps(result)) == result


# -- a finished task ---------------------------------------------------------------------------


@pytest.mark.parametrize("task", [tasks.noop, tasks.noop_async])
def test_a_run_task_is_successful_with_its_times_and_one_attempt(worker, r, task):
    result = task.enqueue(1, two=3)
    worker(queues=QUEUES)
    finished(result)
    assert result.status == TaskResultStatus.SUCCESSFUL and result.is_finished
    assert result.started_at is not None and result.last_attempted_at is not None
    assert result.enqueued_at <= result.started_at <= result.finished_at
    assert result.return_value is None
    assert result.task == task and result.args == [1] and result.kwargs == {"two": 3}
    assert result.attempts == 1 and result.errors == []


def test_the_return_value_sync_and_async(worker, r):
    result = tasks.meaning.enqueue()
    aresult = asyncio.run(tasks.meaning.aenqueue())
    worker(queues=QUEUES)
    assert finished(result).return_value == 42
    assert finished(aresult).return_value == 42


def test_a_task_taking_its_context(worker, r):
    result = tasks.own_id.enqueue()
    checked = tasks.first_attempt.enqueue(7)
    worker(queues=QUEUES)
    assert finished(result).return_value == result.id
    assert finished(checked).status == TaskResultStatus.SUCCESSFUL
    assert checked.return_value is True


@pytest.mark.parametrize(
    ("task", "exception", "message"),
    [
        (tasks.fails_with_value_error, ValueError, "this task failed on purpose"),
        (tasks.fails_with_system_exit, SystemExit, "this task exited on purpose"),
    ],
)
def test_a_failed_task_keeps_its_error(worker, r, task, exception, message):
    result = task.enqueue()
    worker(queues=QUEUES)
    finished(result)
    assert result.status == TaskResultStatus.FAILED and result.is_finished
    with pytest.raises(ValueError, match="Task failed"):
        result.return_value  # noqa: B018
    assert result.started_at is not None and result.last_attempted_at is not None
    assert result.enqueued_at <= result.started_at <= result.finished_at
    (error,) = result.errors
    assert error.exception_class is exception
    assert error.traceback.endswith(f"{exception.__name__}: {message}\n"), error.traceback
    assert result.args == [] and result.kwargs == {}


def test_a_nested_exception_keeps_its_traceback(worker, r):
    result = tasks.fails_with_a_nested_exception.enqueue()
    worker(queues=QUEUES)
    finished(result)
    assert result.status == TaskResultStatus.FAILED
    (error,) = result.errors
    assert error.exception_class is ValueError
    assert 'ValueError(ValueError("the inner error"))' in error.traceback


def test_a_return_value_json_cannot_hold_fails_the_task(worker, r):
    result = tasks.returns_what_json_cannot_hold.enqueue()
    worker(queues=QUEUES)
    finished(result)
    assert result.status == TaskResultStatus.FAILED
    (error,) = result.errors
    assert error.exception_class is TypeError
    # Django 6's message; the backport's normalisation is json.dumps's.
    assert "Unsupported type" in error.traceback or "not JSON serializable" in error.traceback


def test_the_log_lines_of_a_run_name_its_states(worker, r, caplog):
    with caplog.at_level(logging.DEBUG, logger=LOGGER):
        result = tasks.noop.enqueue()
        worker(queues=QUEUES)
        finished(result)
        wait_for(
            lambda: any("state=SUCCESSFUL" in x.getMessage() for x in caplog.records),
            10,
            "the SUCCESSFUL line",
        )
    lines = [x.getMessage() for x in caplog.records if x.name == LOGGER]
    assert [line for line in lines if result.id in line] == lines
    assert "enqueued" in lines[0] and "state=RUNNING" in lines[1]
    assert "state=SUCCESSFUL" in lines[2] and len(lines) == 3
    assert not any("NoneType" in line for line in lines)


# -- enqueue on commit -----------------------------------------------------------------------


def test_enqueue_inside_a_transaction_is_written_at_commit(r):
    with transaction.atomic():
        result = tasks.noop.enqueue()
        assert r.llen("queue:default") == 0
    assert r.llen("queue:default") == 1
    result.refresh()
    assert result.enqueued_at is not None and result.status == TaskResultStatus.READY


def test_with_enqueue_on_commit_off_the_push_is_at_once(r, settings):
    settings.DJQUEUE = {**settings.DJQUEUE, "ENQUEUE_ON_COMMIT": False}
    with transaction.atomic():
        result = tasks.noop.enqueue()
        assert result.enqueued_at is not None
        assert r.llen("queue:default") == 1
