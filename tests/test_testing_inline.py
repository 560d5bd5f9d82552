"""djqueue.testing's inline mode and the pytest fixtures that users' test suites get."""

from __future__ import annotations

import time

import pytest

import djqueue
from djqueue import server_middleware, testing

pytest_plugins = ["pytester"]

calls: list = []


@djqueue.job(name="inline.greet")
def greet(name, options):
    calls.append((name, options, djqueue.current_job()["jid"]))
    return "ignored"


@djqueue.job(name="inline.fan_out")
def fan_out(names):
    for name in names:
        greet.perform_later(name, {})
    calls.append(("fan_out done",))


@djqueue.job(name="inline.fail")
def fail(reason):
    raise ValueError(reason)


class Tally(djqueue.Job, name="inline.Tally"):
    def perform(self, n):
        calls.append(("Tally", n, self.payload["queue"]))


@pytest.fixture(autouse=True)
def _reset():
    calls.clear()
    yield
    testing.disable()


def test_inline_runs_at_push_time(redis_url, r):
    with testing.inline():
        jid = greet.perform_later("ann", {"loud": True})
        assert calls == [("ann", {"loud": True}, jid)]
        Tally.set(queue="counts").perform_later(3)
        assert calls[-1] == ("Tally", 3, "counts")
    assert r.keys("*") == []


def test_inline_runs_nested_pushes_and_scheduled_jobs_at_once(redis_url, r):
    with testing.inline():
        fan_out.perform_in(3600, ["a", "b"])
    assert [c[0] for c in calls] == ["a", "b", "fan_out done"]
    assert r.zcard("schedule") == 0


def test_inline_raises_the_jobs_error(redis_url):
    with testing.inline(), pytest.raises(ValueError, match="nope"):
        fail.perform_later("nope")


def test_inline_round_trips_through_json(redis_url):
    options = {"tags": ["x"]}
    with testing.inline():
        greet.perform_later("bob", options)
    assert calls[0][1] == options and calls[0][1] is not options


def test_inline_uses_server_middleware(redis_url):
    seen = []

    def watch(job, payload, queue, call_next):
        seen.append((queue, payload["args"]))
        return call_next()

    server_middleware.add(watch)
    try:
        with testing.inline():
            greet.perform_later("cy", {})
    finally:
        server_middleware.remove(watch)
    assert seen == [("default", ["cy", {}])]


def test_inline_still_refuses_non_json_args(redis_url):
    with testing.inline(), pytest.raises(TypeError, match="not JSON-native"):
        greet.perform_later("dee", {"when": time})
    assert calls == []


def test_djqueue_fake_fixture(djqueue_fake, r):
    greet.perform_later("eve", {})
    Tally.perform_later(1)
    assert [j["class"] for j in djqueue_fake.jobs] == ["inline.greet", "inline.Tally"]
    assert djqueue_fake.jobs_for(greet) == greet.jobs
    assert djqueue_fake.drain_all() == 2
    assert [c[0] for c in calls] == ["eve", "Tally"]
    assert r.keys("*") == []


def test_djqueue_inline_fixture(djqueue_inline, r):
    greet.perform_later("fay", {})
    assert calls[0][0] == "fay"
    assert testing.is_inline()
    assert r.keys("*") == []


def test_plugin_is_registered_and_fixtures_isolate_tests(pytester):
    """In a user's project: the plugin loads from the entry point; each test starts clean."""
    pytester.makepyfile(
        """
        import djqueue
        from djqueue import testing

        @djqueue.job(name="user.welcome")
        def welcome(user_id):
            pass

        def test_one(djqueue_fake):
            welcome.perform_later(1)
            assert len(welcome.jobs) == 1

        def test_two(djqueue_fake):
            assert welcome.jobs == []
            welcome.perform_later(2)
            assert djqueue_fake.jobs[0]["args"] == [2]

        def test_three():
            assert testing.mode() == "disabled"
            assert welcome.jobs == []

        def test_four(djqueue_inline):
            assert testing.is_inline()
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:django")
    result.assert_outcomes(passed=4)
