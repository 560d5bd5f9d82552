"""``default_job_options``: options every job gets unless its own say otherwise, as Sidekiq's
``default_job_options``; pushed in the payload, so a worker honours them."""

from __future__ import annotations

import json

import pytest

import djqueue
from djqueue.retry_policy import decode_backtrace

from .worker_support import wait_for


@djqueue.job(name="t.defaults_fail")
def fails(message: str) -> None:
    raise ValueError(message)


@djqueue.job(name="t.defaults_own", retry=2, retention=None)
def own_options() -> None:
    pass


def queued(r) -> list[dict]:
    return [json.loads(m) for m in r.lrange("queue:default", 0, -1)]


def test_a_job_without_options_carries_the_defaults_and_a_worker_honours_them(redis_url, r, worker):
    djqueue.configure(
        redis_url=redis_url,
        default_job_options={"retry": 5, "retention": 3600, "backtrace": 20},
    )
    jid = fails.perform_later("boom")
    (payload,) = queued(r)
    assert (payload["retry"], payload["retention"], payload["backtrace"]) == (5, 3600, 20)
    worker()
    failed = json.loads(wait_for(lambda: r.zrange("retry", 0, -1))[0])
    assert failed["jid"] == jid and failed["retry"] == 5
    assert 0 < len(decode_backtrace(failed["error_backtrace"])) <= 20  # backtrace honoured
    assert djqueue.status(jid).state == "retry"  # retention honoured: it is tracked


def test_the_jobs_own_options_win_over_the_defaults(redis_url, r):
    djqueue.configure(redis_url=redis_url, default_job_options={"retry": 5, "retention": 3600})
    own_options.perform_later()
    own_options.set(retry=7).perform_later()
    second, first = queued(r)  # LPUSH: the newest first
    assert first["retry"] == 2 and "retention" not in first  # retention=None: not tracked
    assert second["retry"] == 7


def test_retry_zero_by_default_sends_a_failing_job_to_the_dead_set(redis_url, r, worker):
    djqueue.configure(redis_url=redis_url, default_job_options={"retry": 0})
    jid = fails.perform_later("boom")
    worker()
    assert json.loads(wait_for(lambda: r.zrange("dead", 0, -1))[0])["jid"] == jid
    assert r.zcard("retry") == 0


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"colour": "red"}, "default_job_options: unknown job option(s) colour"),
        ({"retry": -1}, "default_job_options: retry must be True, False or an integer >= 0"),
        ({"retention": "1h"}, "default_job_options: retention must be seconds"),
        ({"queue": "a b"}, "default_job_options: "),
        (["retry"], "default_job_options: must be a dict"),
    ],
)
def test_a_bad_default_fails_at_configure_naming_it(redis_url, options, message):
    with pytest.raises(djqueue.ConfigurationError) as caught:
        djqueue.configure(redis_url=redis_url, default_job_options=options)
    assert str(caught.value).startswith(message)
