"""The django.tasks backend, in process: what it writes to Redis and how the job runs it."""

from __future__ import annotations

import datetime as dt

import pytest
from django.db import transaction
from django.utils import timezone

from djqueue import executor
from djqueue.api import Queue
from djqueue.contrib.django.task_priority import with_bands
from djqueue.contrib.django.tasks import JOB_NAME, DjQueueBackend
from djqueue.contrib.django.tasks_framework import InvalidTask, TaskResultStatus, task
from djqueue.errors import UnknownJob
from tests.django.conftest import queued, seen
from tests.django.testapp.models import Order
from tests.django.testapp.tasks import add_order, broken, once, shout, with_context

pytestmark = pytest.mark.django_db(transaction=True)


def test_enqueue_writes_a_sidekiq_job_and_the_worker_runs_the_task(r, task_signals):
    result = add_order.enqueue("book", mark=True)
    assert result.status == TaskResultStatus.READY and result.enqueued_at is not None
    (payload,) = queued(r)
    assert payload["class"] == JOB_NAME  # ASYNC_JOB_NAME for async def tasks
    assert payload["jid"] == result.id
    assert payload["wrapped"] == "tests.django.testapp.tasks.add_order"
    # What Sidekiq's Web UI and djqueue's pages show instead of the wrapper job's name.
    assert payload["display_class"] == "tests.django.testapp.tasks.add_order"
    assert Queue("default").jobs()[0].display_name == payload["display_class"]
    assert payload["args"] == [
        {
            "task": "tests.django.testapp.tasks.add_order",
            "args": ["book"],
            "kwargs": {"mark": True},
            "backend": "default",
        }
    ]
    assert task_signals == [("enqueued", DjQueueBackend, TaskResultStatus.READY)]

    value = executor.run(payload)
    assert Order.objects.get(pk=value).seen_by_job is True
    assert task_signals[1:] == [
        ("started", DjQueueBackend, TaskResultStatus.RUNNING),
        ("finished", DjQueueBackend, TaskResultStatus.SUCCESSFUL),
    ]


def test_async_tasks_run(r):
    shout.enqueue("hi")
    (payload,) = queued(r, "tasks")
    assert executor.run(payload) == "HI"
    assert seen(r, "async-task") == [{"kind": "async-task", "text": "HI"}]


def test_tasks_that_take_context_see_their_id_and_attempt(r):
    result = with_context.enqueue(3)
    (payload,) = queued(r)
    executor.run(payload)
    payload["retry_count"] = 0  # as the retry set hands it back after one failure
    executor.run(payload)
    assert [(s["id"], s["attempt"]) for s in seen(r)] == [(result.id, 1), (result.id, 2)]


def test_run_after_schedules_the_job(r):
    when = timezone.now() + dt.timedelta(hours=1)
    add_order.using(run_after=when).enqueue("later")
    assert queued(r) == []
    ((raw, score),) = r.zrange("schedule", 0, -1, withscores=True)
    assert score == pytest.approx(when.timestamp())


def test_a_failing_attempt_raises_and_sends_nothing_final(r, task_signals):
    """Whether the task is retried is decided after the job raised; task_finished goes out
    then, only when the task is dead (test_tasks_result has the worker's side)."""
    broken.enqueue()
    (payload,) = queued(r)
    with pytest.raises(RuntimeError, match="on purpose"):
        executor.run(payload)
    assert [name for name, *_ in task_signals] == ["enqueued", "started"]


def test_enqueue_inside_a_transaction_waits_for_commit(r, task_signals):
    with transaction.atomic():
        add_order.enqueue("x")
        assert queued(r) == [] and task_signals == []
    assert len(queued(r)) == 1
    assert [name for name, *_ in task_signals] == ["enqueued"]


def test_priority_sends_a_task_to_its_queues_band(r):
    result = add_order.using(priority=100).enqueue("urgent")
    add_order.using(priority=-5).enqueue("whenever")
    add_order.enqueue("plain")
    for queue, name in (
        ("default:high", "urgent"),
        ("default", "plain"),
        ("default:low", "whenever"),
    ):
        assert [p["args"][0]["args"] for p in queued(r, queue)] == [[name]]
    found = add_order.get_result(result.id)
    assert (found.task.priority, found.task.queue_name) == (100, "default")
    with pytest.raises(InvalidTask):
        add_order.using(priority=101)


def test_runworker_listens_to_each_task_queues_bands_around_it():
    queues = (("default", 0), ("tasks", 0), ("other", 0))
    assert with_bands(queues, {"default", "tasks"}) == [
        *("default:high", "default", "default:low"),
        *("tasks:high", "tasks", "tasks:low", "other"),
    ]
    assert with_bands((("default", 3),), {"default"}) == [
        *("default:high,3", "default,3", "default:low,3")
    ]
    assert with_bands((("default:high", 0), ("default", 0)), {"default"}) == [
        *("default:high", "default", "default:low")
    ]


def test_a_payload_naming_an_unknown_task_does_not_run(r):
    add_order.enqueue("x")
    (payload,) = queued(r)
    payload["args"][0]["task"] = "os.system"
    with pytest.raises(UnknownJob, match="os.system"):
        executor.run(payload)


def test_numbers_and_names_from_a_payload_are_checked_before_anything_is_built(r):
    """A retry_count of 10^10 made the wrapper build a list of that many worker ids (80 GB)
    before its allow-list check; now the name is checked first and attempts are bounded."""
    with_context.enqueue(3)
    (payload,) = queued(r)
    payload["retry_count"] = 10**10
    executor.run(payload)
    assert seen(r)[0]["attempt"] == 1000
    payload["args"][0]["task"] = "os.system"
    with pytest.raises(UnknownJob, match="os.system"):
        executor.run(payload)
    for bad in ([1], [{"task": 1}], [{"task": "x", "args": "no"}], [{"task": "x", "kwargs": []}]):
        payload["args"] = bad
        with pytest.raises(TypeError, match="takes one argument"):
            executor.run(payload)


def test_a_result_retention_that_makes_get_result_always_fail_is_named_by_a_check():
    def ids(options):
        return [m.id for m in DjQueueBackend("other", {"OPTIONS": options}).check()]

    assert ids({}) == [] and ids({"RESULT_RETENTION": 60}) == []
    assert ids({"RESULT_RETENTION": None}) == ["djqueue.W006"]
    assert ids({"RESULT_RETENTION": 0}) == ["djqueue.W006"]
    assert ids({"RESULT_RETENTION": "a day"}) == ["djqueue.E002"]
    assert ids({"RESULT_RETENTION": -1}) == ["djqueue.E002"]


def test_djqueue_job_options_given_to_task_are_written_into_each_push(r):
    once.enqueue(1)
    (payload,) = queued(r)
    assert (payload["retry"], payload["retention"], payload["tags"]) == (0, 60, ["billing"])
    assert once.using(queue_name="tasks").retry == 0  # using() keeps them
    add_order.enqueue("plain")  # a task without options: the backend's
    assert queued(r)[1]["retry"] is True and queued(r)[1]["retention"] == 24 * 3600


def undecorated() -> None:
    """A module-level function, as django.tasks requires, for the tests to decorate."""


def test_a_bad_job_option_fails_where_the_task_is_defined():
    with pytest.raises(ValueError, match="retry must be"):
        task(retry=-1)(undecorated)
    with pytest.raises(TypeError, match="colour"):
        task(colour="red")(undecorated)
