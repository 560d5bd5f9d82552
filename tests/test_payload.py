"""The job JSON in Redis, field by field against the wire format (docs/design.md), and the
JSON-only rule: a bad argument is refused with its path and nothing reaches Redis."""

from __future__ import annotations

import datetime as dt
import decimal
import json
import re
import time

import pytest
import redis

import djqueue
from djqueue.errors import MalformedJob
from djqueue.payload import check_json_args, dumps, loads, to_seconds

JID = re.compile(r"^[0-9a-f]{24}$")


@djqueue.job(name="core.payload.send_mail", queue="mailers")
def send_mail(user_id, subject):
    return (user_id, subject)


@djqueue.job(name="core.payload.plain")
def plain(*args):
    return args


class User:
    """A plain object, as a model instance would be: it has no JSON form."""

    def __init__(self, pk: int) -> None:
        self.pk = pk


def only_job(r: redis.Redis, queue: str) -> dict:
    raw = r.lrange(f"queue:{queue}", 0, -1)
    assert len(raw) == 1
    return json.loads(raw[0])


def test_queued_job_fields(r):
    before = time.time()
    jid = send_mail.perform_later(42, "Welcome")
    after = time.time()

    payload = only_job(r, "mailers")
    assert set(payload) == {"class", "args", "jid", "queue", "retry", "created_at", "enqueued_at"}
    assert payload["class"] == "core.payload.send_mail"
    assert payload["args"] == [42, "Welcome"]
    assert payload["jid"] == jid
    assert JID.match(jid)
    assert payload["queue"] == "mailers"
    assert payload["retry"] is True
    for field in ("created_at", "enqueued_at"):
        assert isinstance(payload[field], float), field
        assert before <= payload[field] <= after
    assert payload["created_at"] <= payload["enqueued_at"]
    assert r.smembers("queues") == {"mailers"}
    assert set(r.keys()) == {"queue:mailers", "queues"}


def test_json_is_compact_and_keeps_utf8(r):
    plain.perform_later("héllo ✓", {"k": [1, 2.5, None, True]})
    (raw,) = r.lrange("queue:default", 0, -1)
    assert "héllo ✓" in raw
    assert ", " not in raw and '": ' not in raw
    assert json.loads(raw)["args"] == ["héllo ✓", {"k": [1, 2.5, None, True]}]


def test_default_queue_setting_is_used(r, redis_url):
    djqueue.configure(redis_url=redis_url, default_queue="bulk")
    plain.perform_later(1)
    assert only_job(r, "bulk")["queue"] == "bulk"
    assert r.smembers("queues") == {"bulk"}


def test_scheduled_job_fields_and_score(r):
    run_at = time.time() + 3600
    jid = send_mail.perform_at(run_at, 1, "later")

    ((raw, score),) = r.zrange("schedule", 0, -1, withscores=True)
    payload = json.loads(raw)
    assert score == run_at
    assert payload["jid"] == jid
    assert "enqueued_at" not in payload
    assert "at" not in payload
    assert isinstance(payload["created_at"], float)
    assert payload["args"] == [1, "later"]
    assert r.exists("queue:mailers") == 0
    assert r.exists("queues") == 0


def test_perform_in_score_is_now_plus_interval(r):
    before = time.time()
    send_mail.perform_in(dt.timedelta(minutes=5), 1, "x")
    after = time.time()
    ((_, score),) = r.zrange("schedule", 0, -1, withscores=True)
    assert before + 300 <= score <= after + 300


@pytest.mark.parametrize("interval", [0, -10, dt.timedelta(seconds=-1)])
def test_past_or_zero_perform_in_goes_straight_to_the_queue(r, interval):
    jid = send_mail.perform_in(interval, 7, "now")
    payload = only_job(r, "mailers")
    assert payload["jid"] == jid
    assert "at" not in payload
    assert isinstance(payload["enqueued_at"], float)
    assert r.zcard("schedule") == 0


def test_past_perform_at_goes_straight_to_the_queue(r):
    send_mail.perform_at(dt.datetime(2001, 1, 1, tzinfo=dt.UTC), 1, "old")
    assert only_job(r, "mailers")["args"] == [1, "old"]
    assert r.zcard("schedule") == 0


def test_options_become_fields(r):
    send_mail.set(
        retry=3, retry_queue="slow", backtrace=10, dead=False, tags=["a", "b"]
    ).perform_later(1, "x")
    payload = only_job(r, "mailers")
    assert payload["retry"] == 3
    assert payload["retry_queue"] == "slow"
    assert payload["backtrace"] == 10
    assert payload["dead"] is False
    assert payload["tags"] == ["a", "b"]


def test_namespace_prefixes_every_key(r, redis_url):
    djqueue.configure(redis_url=redis_url, namespace="app")
    send_mail.perform_later(1, "a")
    send_mail.perform_in(60, 2, "b")
    assert set(r.keys()) == {"app:queue:mailers", "app:queues", "app:schedule"}
    assert r.smembers("app:queues") == {"mailers"}


# -- the JSON-only rule ---------------------------------------------------------------------

BAD_ARGUMENTS = [
    pytest.param((1, {3, 4}), "args[1]", "set", id="set"),
    pytest.param((dt.datetime(2024, 5, 1),), "args[0]", "datetime.datetime", id="datetime"),
    pytest.param(("x", User(7)), "args[1]", "tests.test_payload.User", id="object"),
    pytest.param(({1: "one"},), "args[0] key 1", "int", id="int-key"),
    pytest.param(
        ({"a": {"b": [1, b"raw"]}},), "args[0]['a']['b'][1]", "bytes", id="nested-3-levels"
    ),
    pytest.param(((1, 2),), "args[0]", "tuple", id="tuple"),
    pytest.param((float("nan"),), "args[0]", "float", id="nan"),
    pytest.param(
        ([1, [2, [3, dt.date(2024, 1, 1)]]],), "args[0][1][1][1]", "datetime.date", id="deep"
    ),
]


@pytest.mark.parametrize("args, path, type_name", BAD_ARGUMENTS)
def test_bad_argument_is_refused_with_its_path_and_nothing_is_written(r, args, path, type_name):
    with pytest.raises(TypeError) as info:
        plain.perform_later(*args)
    message = str(info.value)
    assert f"job argument {path} has type {type_name}" in message
    assert "not JSON-native" in message
    assert r.dbsize() == 0


@pytest.mark.parametrize("args, path, type_name", BAD_ARGUMENTS)
def test_bad_argument_refused_by_every_push_method(r, args, path, type_name):
    for push in (
        lambda: plain.perform_in(60, *args),
        lambda: plain.perform_at(time.time() + 60, *args),
        lambda: plain.set(queue="other").perform_later(*args),
        lambda: djqueue.Client().push({"class": "RubyJob", "args": list(args)}),
    ):
        with pytest.raises(TypeError, match=re.escape(path)):
            push()
    assert r.dbsize() == 0


def test_bad_argument_in_a_bulk_names_the_job_and_writes_nothing(r):
    args_list = [[i] for i in range(2500)]
    args_list[1700] = [{"when": {"day": {dt.date(2024, 1, 1)}}}]
    with pytest.raises(TypeError) as info:
        plain.perform_bulk(args_list)
    assert "push_bulk job #1700" in str(info.value)
    assert "args[0]['when']['day']" in str(info.value)
    assert r.dbsize() == 0


def test_bad_option_value_is_refused(r):
    with pytest.raises(TypeError, match=r"option\['trace_id'\] has type datetime.datetime"):
        plain.set(trace_id=dt.datetime.now()).perform_later(1)
    assert r.dbsize() == 0


def test_unknown_options_are_kept_as_fields(r):
    plain.set(trace_id="abc", locale="fr").perform_later(1)
    payload = only_job(r, "default")
    assert payload["trace_id"] == "abc"
    assert payload["locale"] == "fr"


def test_check_json_args_accepts_every_native_type():
    check_json_args(["s", 1, -2.5, True, False, None, [], {}, {"a": [{"b": {"c": None}}]}])


# -- reading timestamps and payloads -----------------------------------------------------------


def test_to_seconds_reads_every_sidekiq_form():
    assert to_seconds(1714550400.25) == 1714550400.25
    assert to_seconds(1714550400) == 1714550400.0
    assert to_seconds(1714550400250) == 1714550400.25  # Sidekiq 8 milliseconds
    assert to_seconds("1714550400.5") == 1714550400.5
    assert to_seconds(None) is None
    assert to_seconds(True) is None
    assert to_seconds("soon") is None


def test_loads_keeps_unknown_fields_and_refuses_non_jobs():
    raw = dumps({"class": "X", "args": [1], "bid": "b-1", "cattr": {"u": 1}})
    assert loads(raw)["bid"] == "b-1"
    assert loads(raw.encode())["cattr"] == {"u": 1}
    for bad in ("[1, 2]", '{"class": "X"}', '{"class": 1, "args": []}'):
        with pytest.raises(ValueError):
            loads(bad)
    with pytest.raises(ValueError):
        loads("{not json")


def _parsed(raw):
    """What ``loads`` makes of ``raw``: the payload, or the type and message of its error."""
    try:
        return loads(raw)
    except ValueError as exc:
        return type(exc), str(exc)


def _json_loads(raw):
    """The same, parsed by ``json.loads`` alone (the checks of a job's shape as ``loads``)."""
    try:
        payload = json.loads(raw)
    except ValueError as exc:
        return MalformedJob, f"not JSON: {exc}"
    except RecursionError:
        return MalformedJob, "not JSON: nested too deeply to read"
    if not isinstance(payload, dict):
        return MalformedJob, f"not a JSON object but a {type(payload).__name__}"
    if not isinstance(payload.get("class"), str) or not isinstance(payload.get("args"), list):
        return MalformedJob, "job payload lacks a string 'class' and a list 'args'"
    return payload


JOB = '{"class":"X","args":["caf\u00e9","café",1.0e-05,[{"a":null}]],"jid":"j","at":1.5}'


@pytest.mark.parametrize(
    "raw",
    [
        JOB.encode(),
        JOB,
        f" {JOB}".encode(),
        f"{JOB}\n".encode(),
        f"{JOB}{JOB}".encode(),
        f'{JOB[:-1]}}} {{"x":1}}'.encode(),
        JOB.encode("utf-16-le"),
        JOB.encode("utf-16"),
        JOB.encode("utf-32-be"),
        "\ufeff".encode() + JOB.encode(),
        b'{"class":"X","args":["\xff"]}',
        b'{"class":"X","args":["\\ud800"]}',
        b'{"class":"X","args":[' + b"[" * 100_000 + b"]" * 100_000 + b"]}",
        b'{"class":"X","args":[1,]}',
        b'{"class":"X"}',
        b"{}",
        b"{",
        b"}",
        b"{ }",
        b'{"class":"X","args":[NaN,Infinity]}',
    ],
)
def test_loads_reads_bytes_as_json_loads_does(raw):
    """The parse goes straight to json's C scanner for one object in UTF-8 bytes, and leaves
    everything else to ``json.loads``: the same payload, or the same error, either way."""
    assert repr(_parsed(raw)) == repr(_json_loads(raw))


@pytest.mark.parametrize(
    ("value", "hint"),
    [
        (dt.datetime(2026, 1, 2, 3, 4), "pass value.isoformat()"),
        ({1, 2}, "pass list(value)"),
        (decimal.Decimal("1.5"), "pass str(value)"),
        (b"raw", "pass text"),
    ],
)
def test_a_refused_argument_says_what_to_pass_instead(r, value, hint):
    with pytest.raises(TypeError) as info:
        djqueue.Client().push({"class": "X", "args": [value]})
    assert hint in str(info.value)


def test_a_long_refused_value_is_cut_with_an_ellipsis(r):
    class Wordy:
        def __repr__(self) -> str:
            return "<Wordy " + "word " * 30 + ">"

    with pytest.raises(TypeError, match=r"\(<Wordy word word .{40,}…\)"):
        djqueue.Client().push({"class": "X", "args": [Wordy()]})
