"""The retry policy (djqueue.retry_policy): Sidekiq's backoff, attempts, failure fields, backtraces
and dead-set limits."""

from __future__ import annotations

import datetime as dt
import json
import time
from pathlib import Path
from typing import Any

import pytest
import redis

import djqueue
from djqueue import retry_policy
from djqueue.config import Settings
from djqueue.retry_policy import exhausted
from djqueue.store import JobStore, Keys


def test_default_backoff_is_sidekiqs_formula():
    for count in (0, 1, 5, 24):
        delays = {retry_policy.default_delay(count) for _ in range(400)}
        low = count**4 + 15
        assert min(delays) >= low and max(delays) <= low + 9 * (count + 1)
        assert all((d - low) % (count + 1) == 0 for d in delays)
        assert len(delays) > 5  # the random part is there


@pytest.mark.parametrize(
    ("option", "expected"),
    # As Sidekiq's server reads it: false drops the job (None), an integer is taken as is,
    # anything else truthy in Ruby ("True", "", 2.0) means the default number.
    [(True, 25), (5, 5), (0, 0), (False, None), ("True", 25), ("", 25), (2.0, 25), (-1, 0)],
)
def test_max_attempts(option, expected):
    assert retry_policy.max_attempts({"retry": option}, Settings()) == expected


def test_max_attempts_follows_the_setting():
    assert retry_policy.max_attempts({"retry": True}, Settings(max_retries=3)) == 3
    assert retry_policy.max_attempts({}, Settings(max_retries=3)) == 3


def test_missing_retry_takes_the_registered_jobs_option():
    """Sidekiq's JobRetry#local: a payload without ``retry`` (or with null) uses the job's."""

    class Registered:
        job_options = {"retry": False}

    assert retry_policy.max_attempts({}, Settings(), Registered()) is None
    assert retry_policy.max_attempts({"retry": None}, Settings(), Registered()) is None
    Registered.job_options = {"retry": 2}
    assert retry_policy.max_attempts({}, Settings(), Registered()) == 2
    assert retry_policy.max_attempts({"retry": 7}, Settings(), Registered()) == 7  # payload wins
    Registered.job_options = {}
    assert retry_policy.max_attempts({}, Settings(), Registered()) == 25


def test_retry_in_hook_answers():
    class Hooked:
        def __init__(self, answer):
            self.answer = answer

        def retry_in(self, count, exc):
            if isinstance(self.answer, Exception):
                raise self.answer
            return self.answer

    exc = ValueError("x")
    assert retry_policy.delay_for(Hooked(7), 0, exc) == 7.0
    assert retry_policy.delay_for(Hooked("kill"), 0, exc) == "kill"
    assert retry_policy.delay_for(Hooked("discard"), 0, exc) == "discard"
    for fallback in (None, "soon", -1, RuntimeError("bug in hook")):
        assert 15 <= retry_policy.delay_for(Hooked(fallback), 0, exc) <= 24
    assert 15 <= retry_policy.delay_for(None, 0, exc) <= 24


def test_record_failure_fields_first_and_later():
    payload = {"class": "x", "args": [], "queue": "default", "retry_queue": "slow"}
    try:
        raise ValueError("m" * 20_000)
    except ValueError as exc:
        assert retry_policy.record_failure(payload, exc, "default", 100.0) == 0
        assert retry_policy.record_failure(payload, exc, "slow", 200.0) == 1
    assert payload["queue"] == "slow"
    assert payload["error_class"] == "ValueError"
    assert len(payload["error_message"]) == 10_000
    assert payload["failed_at"] == 100.0 and payload["retried_at"] == 200.0
    assert payload["retry_count"] == 1
    # Without a backtrace option the default few lines are kept; backtrace: false keeps none.
    where = retry_policy.decode_backtrace(payload["error_backtrace"])[0]
    assert where.endswith("in `test_record_failure_fields_first_and_later'")
    quiet = {"class": "x", "args": [], "backtrace": False}
    try:
        raise ValueError("m")
    except ValueError as exc:
        retry_policy.record_failure(quiet, exc, "default", 100.0)
    assert "error_backtrace" not in quiet


class PaymentFailed(Exception):
    pass


def _inner():
    raise PaymentFailed("card declined")


def test_backtrace_option_stores_compressed_lines_innermost_first():
    payload = {"class": "x", "args": [], "backtrace": 1}
    try:
        _inner()
    except PaymentFailed as exc:
        retry_policy.record_failure(payload, exc, "default", 1.0)
    assert payload["error_class"] == f"{__name__}.PaymentFailed"
    lines = retry_policy.decode_backtrace(payload["error_backtrace"])
    assert len(lines) == 1 and lines[0].endswith(":in `_inner'")


def test_backtrace_caps_hold_whatever_the_option():
    def outer(n: int) -> None:
        if n:
            return middle(n - 1)
        _inner()

    def middle(n: int) -> None:
        return outer(n)

    for option, most in ((None, retry_policy.DEFAULT_BACKTRACE_LINES), (3, 3), (True, None)):
        payload = {"class": "x", "args": [], "backtrace": option}
        try:
            outer(400)  # alternating frames: nothing to fold, 801 of them
        except PaymentFailed as exc:
            retry_policy.record_failure(payload, exc, "default", 1.0)
        lines = retry_policy.decode_backtrace(payload["error_backtrace"])
        assert len(json.dumps(lines, separators=(",", ":"))) <= retry_policy.MAX_BACKTRACE_BYTES
        if most is None:  # all asked for: the byte cap cuts, and says so
            assert lines[-1].endswith("more frames not kept]") and len(lines) > 30
        else:
            assert len(lines) == most
        assert lines[0].endswith("in `_inner'") and lines[1].endswith("in `outer'")


def test_backtrace_names_lose_their_angle_brackets():
    """Sidekiq's Web UI prints backtrace lines unescaped: ``<lambda>`` would be an HTML tag."""
    payload = {"class": "x", "args": [], "backtrace": True}
    fail = lambda: _inner()  # noqa: E731 - a frame named <lambda> is the point
    try:
        exec(compile("fail()", "<generated>", "exec"), {"fail": fail})
    except PaymentFailed as exc:
        retry_policy.record_failure(payload, exc, "default", 1.0)
    lines = retry_policy.decode_backtrace(payload["error_backtrace"])
    assert lines[1].endswith(":in `lambda'")
    assert lines[2].startswith("generated:1:in `module'")
    assert not any("<" in line or ">" in line for line in lines)


def test_dead_set_is_trimmed_by_age_and_count(redis_url, r):
    store = JobStore(redis.Redis.from_url(redis_url), Keys(), dead_max_jobs=3, dead_timeout=100.0)
    now = time.time()
    r.zadd("dead", {"ancient": now - 1000})
    for i in range(5):
        member = json.dumps({"n": i})
        assert store.bury([(member, member)], now + i) == 1
    assert [json.loads(m)["n"] for m in r.zrange("dead", 0, -1)] == [2, 3, 4]


def test_retry_for_is_a_window_from_the_first_failure_that_replaces_the_count(caplog):
    """Sidekiq 8.1's rule (7.1-8.0 also kept the count): dead at the first failure once
    ``failed_at + retry_for`` is reached; ``failed_at`` in seconds or Sidekiq 8's milliseconds."""
    assert exhausted({"failed_at": 100.0, "retry_for": 60}, 30, 25, 159.0) is False
    assert exhausted({"failed_at": 100.0, "retry_for": 60}, 1, 25, 160.0) is True
    in_ms = {"failed_at": 1_700_000_000_000, "retry_for": 60}
    assert exhausted(in_ms, 1, 25, 1_700_000_059.0) is False
    assert exhausted(in_ms, 1, 25, 1_700_000_060.5) is True
    assert exhausted({"failed_at": 100.0}, 25, 25, 101.0) is True  # no window: the count
    assert exhausted({"failed_at": 100.0}, 24, 25, 1e9) is False

    class Registered:
        job_options = {"retry_for": 10}

    assert exhausted({"failed_at": 100.0}, 0, 25, 111.0, Registered()) is True
    assert exhausted({"failed_at": 100.0, "retry_for": 60}, 0, 25, 111.0, Registered()) is False

    payload = {"class": "C", "jid": "j1", "failed_at": 100.0, "retry_for": "soon"}
    assert exhausted(payload, 3, 25, 1e9) is False  # unreadable: the count, with a warning
    assert exhausted({**payload, "retry_for": 5, "failed_at": None}, 25, 25, 1.0) is True
    assert "C j1: retry_for 'soon'" in caplog.text


@pytest.mark.parametrize(
    ("value", "stored"),
    [(3600, 3600), (dt.timedelta(hours=2), 7200), (1.9, 1), (0, 0), (None, None)],
)
def test_retry_for_option_is_seconds(value, stored):
    @djqueue.job(name=f"t.window.{value}", retry_for=value)
    def windowed() -> None: ...

    assert windowed.job_options["retry_for"] == stored


@pytest.mark.parametrize("value", ["1h", True, -1, 2_000_000_000, float("inf")])
def test_retry_for_option_refuses_what_is_not_a_duration(value):
    with pytest.raises(ValueError, match="retry_for must be"):
        djqueue.job(name="t.window.bad", retry_for=value)(lambda: None)


def test_the_flask_extensions_middleware_frames_are_runtime_too() -> None:
    """A Flask app's worker runs every job inside the extension's middleware (app and request
    context): those frames are the same for every job, so they are left out as the core's are.
    The frames are compiled under each package's own file names, as the worker would run them."""
    root = Path(retry_policy.__file__).absolute().parents[1]
    scope: dict[str, Any] = {}
    exec(
        compile("def around(call):\n    call()\n", str(root / "flask_djqueue" / "m.py"), "exec"),
        scope,
    )
    exec(
        compile(
            "def run(call):\n    try:\n        around(call)\n    except ValueError as exc:\n"
            "        return exc\n",
            str(root / "djqueue" / "m.py"),
            "exec",
        ),
        scope,
    )

    def job() -> None:
        raise ValueError("card declined")

    lines = retry_policy.format_backtrace(scope["run"](job), limit=30)
    assert len(lines) == 1 and lines[0].endswith(":in `job'"), lines
