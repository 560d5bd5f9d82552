"""The job API: ``@job`` on functions and classes, ``djqueue.Job``, options, the registry, and
every push method on the handle."""

from __future__ import annotations

import datetime as dt
import json
import re
import time

import pytest

import djqueue
from djqueue import registry

JID = re.compile(r"^[0-9a-f]{24}$")


def queued(r, queue="default") -> list[dict]:
    return [json.loads(raw) for raw in reversed(r.lrange(f"queue:{queue}", 0, -1))]


@djqueue.job
def add(a, b):
    """Adds."""
    return a + b


@djqueue.job(queue="mailers", retry=5, name="SendWelcome", tags=["mail"])
def send_welcome(user_id):
    return f"welcome {user_id}"


@djqueue.job(queue="reports", retry=False, backtrace=True, dead=False, retry_queue="slow")
class BuildReport:
    def perform(self, report_id, fmt):
        return (report_id, fmt, self.jid is not None)


class Charge(djqueue.Job, queue="billing", retry=3):
    def perform(self, cents):
        return cents * 2


class BaseJob(djqueue.Job, abstract=True, queue="base"):
    pass


class FromBase(BaseJob, name="core.jobapi.FromBase"):
    def perform(self):
        return self.payload["queue"]


# -- registration -------------------------------------------------------------------------------


def test_function_job_stays_a_function():
    assert add(2, 3) == 5
    assert add.__name__ == "add"
    assert add.__doc__ == "Adds."
    assert add.__wrapped__(1, 1) == 2


def test_default_name_is_the_dotted_path():
    assert add.job_name == "tests.test_job_api.add"
    assert Charge.job_name == "tests.test_job_api.Charge"
    assert BuildReport.job_name == "tests.test_job_api.BuildReport"
    assert registry.lookup("tests.test_job_api.add") is add
    assert registry.lookup("tests.test_job_api.Charge") is Charge


def test_name_option_is_what_the_payload_carries(r):
    assert registry.lookup("SendWelcome") is send_welcome
    send_welcome.perform_later(7)
    (payload,) = queued(r, "mailers")
    assert payload["class"] == "SendWelcome"


def test_decorated_class_is_a_job_and_still_a_class():
    assert issubclass(BuildReport, djqueue.Job)
    assert BuildReport().perform(1, "pdf") == (1, "pdf", False)


def test_abstract_base_is_not_registered_and_passes_its_options(r):
    assert registry.get("tests.test_job_api.BaseJob") is None
    FromBase.perform_later()
    (payload,) = queued(r, "base")
    assert payload["class"] == "core.jobapi.FromBase"
    assert FromBase.perform_now() == "base"


def test_two_jobs_with_one_name_are_refused():
    @djqueue.job(name="core.jobapi.taken")
    def first():
        pass

    with pytest.raises(djqueue.DuplicateJobName, match="core.jobapi.taken"):

        @djqueue.job(name="core.jobapi.taken")
        def second():
            pass

    with pytest.raises(djqueue.DuplicateJobName):

        class Third(djqueue.Job, name="core.jobapi.taken"):
            def perform(self):
                pass

    assert registry.lookup("core.jobapi.taken") is first


def test_two_jobs_made_by_one_factory_are_refused_one_name():
    """They share a qualified name (``factory.<locals>.run``), but run different code."""

    def factory(word: str):
        @djqueue.job(name="core.jobapi.made")
        def run():
            return word

        return run

    first = factory("first")
    with pytest.raises(djqueue.DuplicateJobName, match="core.jobapi.made"):
        factory("second")
    assert registry.lookup("core.jobapi.made") is first
    assert first.perform_now() == "first"


def test_registering_the_same_job_again_is_allowed():
    registry.register(add.job_name, add)
    assert registry.lookup(add.job_name) is add


def test_unknown_name_is_a_clear_error():
    with pytest.raises(djqueue.UnknownJob, match="no job is registered as 'Nope'"):
        registry.lookup("Nope")


@pytest.mark.parametrize(
    "options",
    [
        {"queue": ""},
        {"queue": 3},
        {"retry": -1},
        {"retry": "yes"},
        {"dead": "no"},
        {"tags": "a,b"},
        {"tags": [1]},
        {"backtrace": "all"},
        {"retry_queue": 1},
    ],
)
def test_bad_option_values_are_refused(options):
    with pytest.raises(ValueError):
        djqueue.job(name="core.jobapi.bad", **options)
    with pytest.raises(ValueError):
        add.set(**options)


def test_unknown_decorator_option_is_refused():
    with pytest.raises(TypeError, match="unknown job option"):
        djqueue.job(name="core.jobapi.typo", queeu="x")


# -- options in the payload ---------------------------------------------------------------------


def test_decorator_options_are_written(r):
    BuildReport.perform_later(9, "csv")
    (payload,) = queued(r, "reports")
    assert payload["retry"] is False
    assert payload["backtrace"] is True
    assert payload["dead"] is False
    assert payload["retry_queue"] == "slow"
    assert payload["args"] == [9, "csv"]


def test_subclass_options_are_written(r):
    Charge.perform_later(100)
    (payload,) = queued(r, "billing")
    assert payload["retry"] == 3
    assert payload["class"] == "tests.test_job_api.Charge"


def test_set_returns_a_handle_with_overrides(r):
    handle = send_welcome.set(queue="urgent").set(retry=False)
    handle.perform_later(1)
    send_welcome.perform_later(2)
    (urgent,) = queued(r, "urgent")
    assert urgent["retry"] is False
    assert urgent["class"] == "SendWelcome"
    (normal,) = queued(r, "mailers")
    assert normal["retry"] == 5
    assert normal["tags"] == ["mail"]


def test_set_on_a_class_job(r):
    Charge.set(queue="refunds").perform_later(5)
    assert queued(r, "refunds")[0]["args"] == [5]


# -- push methods -------------------------------------------------------------------------------


def test_each_push_returns_the_jid(r):
    jids = [
        add.perform_later(1, 2),
        add.perform_async(3, 4),
        add.perform_in(30, 5, 6),
        add.perform_at(time.time() + 30, 7, 8),
        Charge.perform_later(1),
        Charge.perform_async(2),
    ]
    assert all(JID.match(jid) for jid in jids)
    assert len(set(jids)) == len(jids)
    written = {json.loads(raw)["jid"] for raw in r.lrange("queue:default", 0, -1)}
    written |= {json.loads(raw)["jid"] for raw in r.zrange("schedule", 0, -1)}
    written |= {json.loads(raw)["jid"] for raw in r.lrange("queue:billing", 0, -1)}
    assert written == set(jids)


def test_perform_async_is_perform_later(r):
    add.perform_async(1, 1)
    assert queued(r)[0]["args"] == [1, 1]


@pytest.mark.parametrize("interval", [90, 90.0, dt.timedelta(seconds=90)])
def test_perform_in_takes_seconds_or_timedelta(r, interval):
    before = time.time()
    add.perform_in(interval, 1, 2)
    ((raw, score),) = r.zrange("schedule", 0, -1, withscores=True)
    assert before + 90 <= score <= time.time() + 90
    assert json.loads(raw)["args"] == [1, 2]


def test_perform_at_takes_a_datetime_or_epoch(r):
    aware = dt.datetime.now(dt.UTC) + dt.timedelta(hours=1)
    naive_local = dt.datetime.now() + dt.timedelta(hours=2)
    epoch = time.time() + 3 * 3600
    a = add.perform_at(aware, 1, 1)
    b = add.perform_at(naive_local, 2, 2)
    c = add.perform_at(epoch, 3, 3)
    scores = {json.loads(raw)["jid"]: s for raw, s in r.zrange("schedule", 0, -1, withscores=True)}
    assert scores == {a: aware.timestamp(), b: naive_local.timestamp(), c: epoch}


def test_perform_at_reads_epoch_milliseconds_as_sidekiq_8_does(r):
    at_ms = int((time.time() + 3600) * 1000)
    add.perform_at(at_ms, 1, 1)
    ((_raw, score),) = r.zrange("schedule", 0, -1, withscores=True)
    assert score == pytest.approx(at_ms / 1000)  # not 56,000 years ahead


@pytest.mark.parametrize(
    ("method", "value"),
    [("perform_in", float("nan")), ("perform_in", float("inf")), ("perform_at", float("nan"))],
)
def test_a_time_that_is_not_finite_is_named_as_such(r, method, value):
    with pytest.raises(ValueError, match=f"{method} needs a finite"):
        getattr(add, method)(value, 1, 2)
    assert r.keys("*") == []


@pytest.mark.parametrize("method", ["perform_in", "perform_at"])
def test_a_bad_time_is_refused(r, method):
    with pytest.raises(TypeError):
        getattr(add, method)("soon", 1, 2)
    assert r.dbsize() == 0


def test_perform_bulk_takes_any_iterable_and_returns_jids(r):
    jids = add.perform_bulk((i, i + 1) for i in range(3))
    jobs = queued(r)
    assert [job["jid"] for job in jobs] == jids
    assert [job["args"] for job in jobs] == [[0, 1], [1, 2], [2, 3]]
    assert Charge.perform_bulk([[1], [2]]) == [job["jid"] for job in queued(r, "billing")]


def test_perform_now_runs_inline_and_writes_nothing(r):
    assert add.perform_now(2, 3) == 5
    assert send_welcome.perform_now(4) == "welcome 4"
    assert BuildReport.perform_now(1, "pdf") == (1, "pdf", True)
    assert Charge.set(queue="x").perform_now(21) == 42
    assert r.dbsize() == 0


def test_perform_now_checks_arguments_like_a_push():
    with pytest.raises(TypeError, match=r"args\[0\] has type set"):
        add.perform_now({1}, 2)


def test_async_job_runs_to_completion():
    @djqueue.job(name="core.jobapi.async")
    async def fetch(x):
        return x + 1

    assert fetch.perform_now(1) == 2


@pytest.mark.parametrize(
    "call",
    [
        lambda: add.perform_later(1, b=2),
        lambda: add.perform_async(1, b=2),
        lambda: add.perform_in(5, 1, b=2),
        lambda: add.perform_at(time.time(), 1, b=2),
        lambda: add.perform_now(1, b=2),
        lambda: Charge.perform_later(cents=1),
    ],
)
def test_keyword_arguments_are_refused_with_a_clear_message(r, call):
    with pytest.raises(TypeError, match=r"got keyword arguments \((b|cents)\).*positionally"):
        call()
    assert r.dbsize() == 0


def test_function_retry_hooks_are_kept():
    @djqueue.job(
        name="core.jobapi.hooks",
        retry_in=lambda count, exc: count * 10,
        retries_exhausted=lambda payload, exc: exhausted.append((payload["jid"], str(exc))),
    )
    def flaky():
        pass

    exhausted: list = []
    assert flaky.retry_in(3, RuntimeError()) == 30
    flaky.retries_exhausted({"jid": "j"}, RuntimeError("gone"))
    assert exhausted == [("j", "gone")]
    assert add.retry_in(3, RuntimeError()) is None


def test_class_jobs_define_hooks_as_methods_not_options():
    with pytest.raises(TypeError, match="class methods"):

        @djqueue.job(retry_in=lambda c, e: 1)
        class Hooked:
            def perform(self):
                pass


@pytest.mark.parametrize("method", ["delay", "apply_async", "send"])
@pytest.mark.parametrize("target", [send_welcome, Charge, BuildReport, add.set(queue="low")])
def test_another_librarys_push_method_names_djqueues(r, method, target):
    """``send_welcome.delay(1)``, a Celery habit: the AttributeError names perform_later."""
    with pytest.raises(AttributeError, match=r"perform_later\(\*args\).*perform_async"):
        getattr(target, method)(1)
    assert not hasattr(target, method)
    assert queued(r) == []
