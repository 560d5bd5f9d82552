"""djqueue.api.Queue and Stats against a real Redis: what an admin page lists and does."""

from __future__ import annotations

import json
import time

import pytest

import djqueue
from djqueue.api import JobRecord, Queue, RetrySet, Stats
from djqueue.store import jobs as store_jobs


def push(name: str, *args, queue: str = "default") -> str:
    jid = djqueue.Client().push({"class": name, "args": list(args), "queue": queue})
    assert jid
    return jid


def test_all_lists_queues_by_name_with_sizes(redis_url):
    push("A", 1, queue="mailers")
    push("A", 2, queue="default")
    push("A", 3, queue="default")

    queues = Queue.all()

    assert [q.name for q in queues] == ["default", "mailers"]
    assert [q.size for q in queues] == [2, 1]
    assert len(queues[0]) == 2


def test_paging_newest_and_oldest_first(redis_url):
    jids = [push("Paged", n) for n in range(7)]
    queue = Queue("default")

    newest = queue.jobs(offset=0, limit=3)
    assert [j.jid for j in newest] == jids[::-1][:3]
    assert [j.args for j in queue.jobs(offset=3, limit=3)] == [[3], [2], [1]]
    assert [j.args for j in queue.jobs(offset=6, limit=3)] == [[0]]
    assert queue.jobs(offset=7, limit=3) == []

    oldest = queue.jobs(offset=0, limit=3, newest_first=False)
    assert [j.jid for j in oldest] == jids[:3]
    assert [j.args for j in queue.jobs(offset=5, limit=3, newest_first=False)] == [[5], [6]]


def test_record_fields(redis_url):
    before = time.time()
    jid = push("Mailer.send", 42, {"to": "a@example.com"}, queue="mailers")
    (record,) = Queue("mailers").jobs()

    assert record.jid == jid
    assert record.job_name == "Mailer.send"
    assert record.args == [42, {"to": "a@example.com"}]
    assert record.queue == "mailers"
    assert before <= record.created_at <= record.enqueued_at <= time.time()
    assert record["retry"] is True
    assert not record.is_malformed


def test_iteration_survives_deleting_as_it_goes(redis_url):
    for n in range(250):
        push("Many", n)
    queue = Queue("default")

    deleted = 0
    seen = set()
    for record in queue:
        seen.add(record.args[0])
        if record.args[0] % 2 == 0:
            assert record.delete()
            deleted += 1

    assert seen == set(range(250))
    assert deleted == 125
    assert sorted(r.args[0] for r in queue) == list(range(1, 250, 2))


def test_find_job_and_delete(redis_url, r):
    wanted = push("Find", "x")
    # Another job mentions the jid in its arguments; find_job must not return it.
    push("Find", wanted)
    push("Find", "y")
    queue = Queue("default")

    found = queue.find_job(wanted)
    assert found is not None and found.jid == wanted and found.args == ["x"]
    assert queue.find_job("0" * 24) is None

    assert found.delete() is True
    assert found.delete() is False  # already gone
    assert queue.find_job(wanted) is None
    assert {json.loads(x)["args"][0] for x in r.lrange("queue:default", 0, -1)} == {"y", wanted}


def test_find_job_deep_in_a_long_queue(redis_url, r):
    jids = [push("Deep", n) for n in range(2500)]
    assert Queue("default").find_job(jids[17]).args == [17]
    assert Queue("default").find_job(jids[-1]).args == [2499]


def test_delete_uses_the_stored_bytes(redis_url, r):
    # JSON written with spaces (not djqueue's compact form) must still be deletable.
    raw = '{"class": "Spaced", "args": [1], "jid": "abcabcabcabcabcabcabcabc", "queue": "default"}'
    r.lpush("queue:default", raw)
    record = Queue("default").find_job("abcabcabcabcabcabcabcabc")
    assert record.value == raw
    assert record.delete()
    assert r.llen("queue:default") == 0


def test_malformed_entry_is_listed_and_deletable(redis_url, r):
    r.lpush("queue:default", "not json {")
    push("Good", 1)
    records = Queue("default").jobs(newest_first=False)
    assert records[0].is_malformed and records[0].job_name == "" and records[0].args == []
    assert records[1].job_name == "Good"
    assert records[0].delete()
    assert [x.job_name for x in Queue("default")] == ["Good"]


def test_clear_removes_jobs_and_the_name(redis_url, r):
    push("C", 1, queue="low")
    push("C", 2, queue="low")
    push("C", 3, queue="default")

    assert Queue("low").clear() == 2

    assert not r.exists("queue:low")
    assert r.smembers("queues") == {"default"}
    assert Queue("default").size == 1


def test_latency_is_age_of_the_oldest_job(redis_url, r):
    now = time.time()
    old = {"class": "L", "args": [], "jid": "a" * 24, "queue": "default", "enqueued_at": now - 60}
    new = {"class": "L", "args": [], "jid": "b" * 24, "queue": "default", "enqueued_at": now - 5}
    r.lpush("queue:default", json.dumps(old), json.dumps(new))
    assert 60 <= Queue("default").latency < 120
    assert Queue("empty").latency == 0.0


def test_latency_reads_sidekiq8_milliseconds(redis_url, r):
    ms = int((time.time() - 30) * 1000)
    job = {"class": "L", "args": [], "jid": "c" * 24, "enqueued_at": ms, "created_at": ms}
    r.lpush("queue:default", json.dumps(job))
    assert 30 <= Queue("default").latency < 90
    (record,) = Queue("default").jobs()
    assert record.enqueued_at == pytest.approx(ms / 1000)
    assert 30 <= record.latency < 90


def test_active_job_wrapper_shows_the_wrapped_job(redis_url, r):
    payload = {
        "class": "ActiveJob::QueueAdapters::SidekiqAdapter::JobWrapper",
        "wrapped": "WelcomeMailerJob",
        "queue": "default",
        "args": [{"job_class": "WelcomeMailerJob", "arguments": [7, "x"]}],
        "jid": "d" * 24,
    }
    record = JobRecord(json.dumps(payload))
    assert record.display_name == "WelcomeMailerJob"
    assert record.display_args == [7, "x"]
    assert JobRecord(json.dumps({**payload, "class": "Plain"})).display_args == payload["args"]


#: A job as Rails 7.1's Sidekiq adapter writes it: ``InvoiceJob.perform_later(user,
#: {total: 12.5}, Date.new(2026, 11, 26), note: "x")`` (the record as a GlobalID, the symbol
#: keys, the date and the keyword arguments serialized by Active Job).
RAILS_JOB = {
    "retry": True,
    "queue": "default",
    "class": "Sidekiq::ActiveJob::Wrapper",
    "wrapped": "InvoiceJob",
    "args": [
        {
            "job_class": "InvoiceJob",
            "job_id": "0f6ac2b5-4a8c-4a57-9d44-0f3b8e6c2a11",
            "provider_job_id": None,
            "queue_name": "default",
            "priority": None,
            "arguments": [
                {"_aj_globalid": "gid://shop/User/42"},
                {"total": 12.5, "_aj_symbol_keys": ["total"]},
                {"_aj_serialized": "ActiveJob::Serializers::DateSerializer", "value": "2026-11-26"},
                {"note": "x", "_aj_ruby2_keywords": ["note"]},
            ],
            "executions": 0,
            "exception_executions": {},
            "locale": "en",
            "timezone": "UTC",
            "enqueued_at": "2026-11-26T10:00:00.000000000Z",
            "scheduled_at": None,
        }
    ],
    "jid": "e" * 24,
    "created_at": 1795000000.0,
    "enqueued_at": 1795000000.0,
}


def test_active_job_arguments_are_shown_deserialized_as_sidekiq_7_1_shows_them():
    record = JobRecord(json.dumps(RAILS_JOB))
    assert record.display_name == "InvoiceJob"
    assert record.display_args == [
        "gid://shop/User/42",
        {"total": 12.5},
        {"value": "2026-11-26"},
        {"note": "x"},
    ]
    # A record nested in a hash or a list is shown by its URI too.
    nested = json.loads(json.dumps(RAILS_JOB))
    nested["args"][0]["arguments"] = [{"users": [{"_aj_globalid": "gid://shop/User/1"}]}]
    assert JobRecord(json.dumps(nested)).display_args == [{"users": ["gid://shop/User/1"]}]
    # Sidekiq Enterprise's encrypted last argument is not shown either.
    secret = {"class": "Secret", "args": [1, "bm9pc2U="], "encrypt": True}
    assert JobRecord(json.dumps(secret)).display_args == [1, "[encrypted data]"]


def test_mail_deliveries_show_the_mailers_params_and_arguments():
    mail = json.loads(json.dumps(RAILS_JOB))
    mail["wrapped"] = mail["args"][0]["job_class"] = "ActionMailer::MailDeliveryJob"
    mail["args"][0]["arguments"] = [
        "UserMailer",
        "welcome",
        "deliver_now",
        {
            "params": {"locale": "fr", "_aj_symbol_keys": ["locale"]},
            "args": [{"_aj_globalid": "gid://shop/User/7"}],
            "_aj_ruby2_keywords": ["params", "args"],
        },
    ]
    assert JobRecord(json.dumps(mail)).display_args == [{"locale": "fr"}, ["gid://shop/User/7"]]
    old = json.loads(json.dumps(mail))  # Rails 5's delivery job: its arguments after three
    old["wrapped"] = "ActionMailer::DeliveryJob"
    old["args"][0]["arguments"] = ["UserMailer", "welcome", "deliver_now", {"_aj_globalid": "g"}]
    assert JobRecord(json.dumps(old)).display_args == ["g"]


def test_redis_down_raises_the_documented_error():
    djqueue.configure(redis_url="redis://127.0.0.1:1/0", connect_timeout=0.2)
    try:
        with pytest.raises(djqueue.RedisUnavailable, match="127.0.0.1:1"):
            _ = Queue("default").size
        with pytest.raises(djqueue.RedisUnavailable):
            _ = Stats().processed
    finally:
        djqueue.configure()


def test_find_job_across_several_script_calls(redis_url, r, monkeypatch):
    # Small bounds, so the search needs several calls and several rounds of candidates.
    monkeypatch.setattr(store_jobs, "SCAN_PER_CALL", 700)
    monkeypatch.setattr(store_jobs, "CANDIDATES", 3)
    wanted = "e" * 24
    client = djqueue.Client()
    client.push({"class": "Target", "args": ["me"], "jid": wanted})
    client.push_bulk({"class": "Decoy", "args": [[wanted, n] for n in range(10)]})
    client.push_bulk({"class": "Filler", "args": [[n] for n in range(3000)]})

    found = Queue("default").find_job(wanted)
    assert found.job_name == "Target" and found.args == ["me"]

    for n in range(5):
        r.zadd("retry", {json.dumps({"class": "Decoy", "args": [wanted], "jid": f"{n:024x}"}): n})
    r.zadd("retry", {json.dumps({"class": "Target", "args": [], "jid": wanted}): 5000})
    for n in range(2000):
        r.zadd("retry", {json.dumps({"class": "Filler", "args": [n], "jid": f"{n:024d}"}): n + 10})
    assert RetrySet().find_job(wanted).score == 5000


def test_the_stats_and_queues_reports_name_bad_keys(redis_url, r):
    """``djqueue stats`` and ``djqueue queues`` print what they can and name the bad keys."""
    from djqueue import report

    djqueue.Client().push({"class": "x", "args": [], "queue": "mailers"})
    r.set("queue:broken", "x")
    r.sadd("queues", "broken")
    r.set("stat:failed", "oops")
    stats = report.stats()
    assert "enqueued   1" in stats
    assert 'bad key    stat:failed holds "oops", not an integer' in stats
    assert "bad key    queue:broken holds a string, not a list" in stats
    rows = report.queues().splitlines()
    assert rows[1].split()[:2] == ["broken", "0"] and "holds a string, not a list" in rows[1]
    assert rows[2].split()[:2] == ["mailers", "1"]
