"""The poller against a real Redis: due jobs move once, whatever the number of pollers; future
jobs stay; bad members are buried; processes take turns polling."""

from __future__ import annotations

import json
import threading
import time

import djqueue
from djqueue.config import Settings
from djqueue.store import JobStore, Keys
from djqueue.worker.launcher import runtime_redis
from djqueue.worker.poller import Poller


def make_poller(slot=(0, 1)) -> Poller:
    settings = djqueue.get_settings()
    store = JobStore(runtime_redis(settings), Keys())
    return Poller(store, Keys(), Settings(), lambda: slot)


def test_due_jobs_move_to_their_queues_once_with_enqueued_at(redis_url, r):
    now = time.time()
    due = {
        json.dumps({"class": "x", "args": [i], "jid": f"{i:024x}", "queue": f"q{i % 3}"}): now - 5
        for i in range(450)
    }
    r.zadd("schedule", due)
    r.zadd("retry", {json.dumps({"class": "x", "args": ["r"], "jid": "f" * 24}): now - 1})
    future = json.dumps({"class": "x", "args": ["later"], "jid": "e" * 24})
    r.zadd("schedule", {future: now + 3600})

    pollers = [make_poller() for _ in range(4)]
    threads = [threading.Thread(target=p.enqueue_due) for p in pollers]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)

    moved = [json.loads(x) for q in ("q0", "q1", "q2") for x in r.lrange(f"queue:{q}", 0, -1)]
    assert len(moved) == 450
    assert len({job["jid"] for job in moved}) == 450
    assert all(job["enqueued_at"] >= now for job in moved)
    assert all(job["queue"] == f"q{job['args'][0] % 3}" for job in moved)
    assert r.smembers("queues") == {"q0", "q1", "q2", "default"}
    assert json.loads(r.lindex("queue:default", 0))["args"] == ["r"]
    assert r.zrange("schedule", 0, -1) == [future]
    assert r.zcard("retry") == 0


def test_enqueue_due_reports_the_earliest_waiting_time(redis_url, r):
    poller = make_poller()
    assert poller.enqueue_due() is None
    at = time.time() + 100
    r.zadd("retry", {"{}": at + 5})
    r.zadd("schedule", {json.dumps({"class": "x", "args": []}): at})
    assert poller.enqueue_due() == at


def test_malformed_members_go_to_dead_with_their_text(redis_url, r):
    """Text that is not JSON is buried as it was (so is JSON nested too deeply to read); JSON
    that is not a job is wrapped in a job object of class djqueue.Malformed, its text as the
    argument, so that Sidekiq's Web UI can still list the dead set."""
    deep = "[" * 100_000 + "]" * 100_000
    due = time.time() - 1
    r.zadd("schedule", {"not json": due, "[1,2]": due, '{"class": "x"}': due, deep: due})
    r.zadd("retry", {"42": due})
    good = json.dumps({"class": "x", "args": [], "jid": "a" * 24})
    r.zadd("schedule", {good: due})

    make_poller().enqueue_due()

    assert r.zcard("schedule") == 0 and r.zcard("retry") == 0
    assert json.loads(r.lindex("queue:default", 0))["jid"] == "a" * 24
    dead = r.zrange("dead", 0, -1)
    assert "not json" in dead and deep in dead
    wrapped = [json.loads(m) for m in dead if m not in ("not json", deep)]
    assert sorted(job["args"] for job in wrapped) == [["42"], ["[1,2]"], ['{"class": "x"}']]
    for job in wrapped:
        assert job["class"] == "djqueue.Malformed" and job["queue"] == "default"
        assert job["error_class"] == "djqueue.errors.MalformedJob"
        assert len(job["jid"]) == 24 and job["retry"] is False
    reasons = {job["args"][0]: job["error_message"] for job in wrapped}
    assert reasons["[1,2]"] == "not a JSON object but a list"
    assert reasons['{"class": "x"}'] == "job payload lacks a string 'class' and a list 'args'"


def test_processes_take_turns_and_wake_for_due_jobs_in_their_slot():
    # Process 1 of 3 owns the slots 1, 4, 7, 10, 13, ... (slot = 1 s of wall-clock time).
    poller = Poller(None, Keys(), Settings(), lambda: (1, 3))  # type: ignore[arg-type]
    assert poller.next_poll(10.2, None) == 13.0  # slot 10 is ours: next is 13
    assert poller.next_poll(11.5, None) == 13.0
    assert poller.next_poll(12.0, None) == 13.0
    assert poller.next_poll(10.2, 10.7) == 10.7  # due inside our slot: wake for it
    assert poller.next_poll(10.2, 11.5) == 13.0  # due in another's slot: theirs to move
    assert poller.next_poll(11.5, 13.4) == 13.0  # our next slot start comes first
    alone = Poller(None, Keys(), Settings(), lambda: (0, 1))  # type: ignore[arg-type]
    assert alone.next_poll(5.25, None) == 6.0
    assert alone.next_poll(5.25, 5.5) == 5.5
