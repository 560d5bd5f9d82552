"""Unique jobs (``unique_for``): a second push of a job that is still on its way is skipped,
and the lock goes when the job succeeds, starts (``unique_until="start"``), dies, is deleted,
or when its lifetime ends, whatever happened to the worker holding it."""

from __future__ import annotations

import datetime as dt
import json
import logging
import threading

import pytest

import djqueue
from djqueue import periodic_declaration, signals
from djqueue.api import DeadSet, PeriodicSet, Queue, RetrySet, ScheduledSet
from djqueue.config import get_settings
from djqueue.store import Keys
from djqueue.worker.periodic_poller import PeriodicPoller
from djqueue.worker.periodic_sync import sync

from . import jobs_for_worker as jobs
from .worker_support import wait_for


@djqueue.job(name="u.sync", unique_for=60)
def sync_account(account: int, reason: str = "") -> None:
    jobs.r().rpush("synced", f"{account}:{reason}")


@djqueue.job(name="u.by_account", unique_for=60, unique_args=lambda args: args[:1])
def by_account(account: int, reason: str) -> None:
    jobs.r().rpush("synced", f"{account}:{reason}")


def lock_keys(r) -> list[str]:
    return r.keys(f"{Keys().unique_prefix}*")


def queued(r, queue: str = "default") -> list[dict]:
    return [json.loads(x) for x in r.lrange(f"queue:{queue}", 0, -1)]


# -- the push ------------------------------------------------------------------------------------


def test_a_second_push_is_skipped_returns_none_and_is_signalled(redis_url, r, caplog):
    seen: list[tuple[str, str, str]] = []

    def receiver(sender, payload, holder):
        seen.append((sender, payload["jid"], holder))

    signals.job_not_unique.connect(receiver)
    try:
        first = sync_account.perform_later(7)
        with caplog.at_level(logging.INFO, logger="djqueue.client"):
            second = sync_account.perform_later(7)
    finally:
        signals.job_not_unique.disconnect(receiver)
    assert first is not None and second is None
    assert [job["jid"] for job in queued(r)] == [first]
    (job,) = queued(r)
    assert job["unique_for"] == 60 and len(job["unique_digest"]) == 40
    assert r.get(Keys().unique(job["unique_digest"])) == first
    assert 55 < r.ttl(Keys().unique(job["unique_digest"])) <= 60
    assert len(seen) == 1 and seen[0][0] == "u.sync" and seen[0][2] == first
    assert f"not unique (lock {job['unique_digest']} held by job {first})" in caplog.text


def test_class_queue_and_arguments_make_the_job_unless_unique_args_chooses(redis_url, r):
    assert sync_account.perform_later(1, "a")
    assert sync_account.perform_later(1, "b")  # other arguments
    assert sync_account.set(queue="low").perform_later(1, "a")  # other queue
    assert sync_account.perform_later(1, "a") is None
    assert by_account.perform_later(1, "a")
    assert by_account.perform_later(1, "b") is None  # only the account counts
    assert by_account.perform_later(2, "b")
    assert len(queued(r)) == 4 and len(queued(r, "low")) == 1
    assert len(lock_keys(r)) == 5


def test_set_makes_any_job_unique_and_a_plain_push_is_untouched(redis_url, r):
    assert jobs.record.perform_later("k", 1) and jobs.record.perform_later("k", 1)
    once = jobs.record.set(unique_for=30)
    assert once.perform_later("k", 2) and once.perform_later("k", 2) is None
    assert len(queued(r)) == 3 and "unique_digest" not in queued(r)[-1]


def test_options_are_checked_where_they_are_declared():
    with pytest.raises(ValueError, match="unique_for must be seconds"):
        jobs.record.set(unique_for=-1)
    with pytest.raises(ValueError, match="unique_for must be seconds"):
        jobs.record.set(unique_for="10")
    with pytest.raises(ValueError, match="unique_until must be 'success' or 'start'"):
        jobs.record.set(unique_for=5, unique_until="finish")
    with pytest.raises(TypeError, match="unique_args must be a callable"):
        djqueue.job(name="u.bad", unique_for=5, unique_args=[0])(lambda: None)


def test_a_thousand_pushes_from_twenty_threads_leave_one_job_and_a_push_after_success_lands(
    redis_url, r, worker
):
    jids: list[str | None] = []
    start = threading.Barrier(20)

    def push() -> None:
        start.wait()
        for _ in range(50):
            jids.append(sync_account.perform_later(42, "race"))

    threads = [threading.Thread(target=push) for _ in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(jids) == 1000
    (jid,) = [j for j in jids if j is not None]
    assert [job["jid"] for job in queued(r)] == [jid]

    worker()
    wait_for(lambda: r.lrange("synced", 0, -1) == ["42:race"], what="the job ran")
    again = wait_for(
        lambda: sync_account.perform_later(42, "race"), what="a push accepted after success"
    )
    assert again != jid
    wait_for(lambda: r.llen("synced") == 2, what="the second job ran")


def test_bulk_pushes_skip_duplicates_within_and_across_batches(redis_url, r):
    jids = sync_account.perform_bulk([[1], [2], [1], [3], [2]])
    assert len(jids) == 3
    assert [job["args"] for job in reversed(queued(r))] == [[1], [2], [3]]
    assert [job["jid"] for job in reversed(queued(r))] == jids
    more = sync_account.perform_bulk([[3], [4], [4]], batch_size=1)
    assert len(more) == 1 and [job["args"] for job in queued(r)][0] == [4]


def test_a_scheduled_job_holds_its_lock_for_its_wait_too_and_frees_it_when_deleted(redis_url, r):
    jid = sync_account.perform_in(600, 5)
    assert jid is not None and sync_account.perform_later(5) is None
    (key,) = lock_keys(r)
    assert r.ttl(key) > 600
    entry = ScheduledSet().find_job(jid)
    assert entry is not None and entry.delete()
    assert lock_keys(r) == []
    assert sync_account.perform_later(5)


def test_deleting_a_waiting_job_from_the_api_frees_its_lock(redis_url, r):
    jid = sync_account.perform_later(8)
    record = Queue("default").find_job(jid)
    assert record is not None and record.delete()
    assert lock_keys(r) == []
    assert sync_account.perform_later(8)


def test_the_lock_expires_after_unique_for(redis_url, r):
    once = jobs.record.set(unique_for=1)
    assert once.perform_later("k") and once.perform_later("k") is None
    wait_for(lambda: once.perform_later("k"), timeout=5, what="the lock expired")
    assert len(queued(r)) == 2


def test_a_periodic_run_is_skipped_while_the_last_one_waits(redis_url, r):
    declared = periodic_declaration.build(
        cron="0 3 * * *", job=sync_account, name="nightly", args=[1]
    )
    sync([declared], get_settings(), r)
    entry = PeriodicSet().find("nightly")
    assert entry is not None and entry.run_now()
    assert PeriodicSet().find("nightly").run_now() is None
    assert len(queued(r)) == 1


def test_a_periodic_tick_is_claimed_and_skipped_while_the_last_run_waits(redis_url, r):
    minutely = periodic_declaration.build(
        cron="* * * * *", job=sync_account, name="minutely", args=[1]
    )
    sync([minutely], get_settings(), r)
    cron = PeriodicPoller(get_settings(), r, reload=3600)
    ten = dt.datetime(2027, 1, 1, 10, 0, 1, tzinfo=dt.UTC).timestamp()
    cron.poll(ten)
    cron.poll(ten + 60)
    assert len(queued(r)) == 1
    # Both ticks are claimed: the skipped one never fires later as a missed tick.
    assert len(r.zrange(Keys().cron_enqueued("minutely"), 0, -1)) == 2
    assert len(PeriodicSet().find("minutely").history()) == 1


# -- the worker ----------------------------------------------------------------------------------


def test_the_lock_is_held_while_the_job_runs_and_retries_and_freed_when_it_dies(
    redis_url, r, worker
):
    holding = jobs.hold.set(unique_for=60)
    assert holding.perform_later("held", 1)
    worker()
    wait_for(lambda: r.lrange("held", 0, -1) == ["1"], what="the job started")
    assert holding.perform_later("held", 1) is None  # running: until success
    r.set("release", 1)
    wait_for(lambda: holding.perform_later("held", 1), what="freed at success")

    failing = jobs.fail.set(unique_for=60, retry=1)
    failing.perform_later("boom")
    wait_for(lambda: RetrySet().size == 1, what="the job waits to retry")
    assert failing.perform_later("boom") is None  # retrying: still held
    entry = next(iter(RetrySet()))
    entry.kill()  # from a UI: to the dead set
    assert DeadSet().size == 1
    assert failing.perform_later("boom")


def test_a_job_that_dies_in_the_worker_frees_its_lock(redis_url, r, worker):
    failing = jobs.fail.set(unique_for=60, retry=0)
    failing.perform_later("gone")
    worker()
    wait_for(lambda: DeadSet().size == 1, what="the job died")
    assert failing.perform_later("gone")


def test_until_start_frees_the_lock_when_a_worker_takes_the_job(redis_url, r, worker):
    holding = jobs.hold.set(unique_for=60, unique_until="start")
    first = holding.perform_later("started", 1)
    assert holding.perform_later("started", 1) is None  # waiting: held
    worker()
    wait_for(lambda: r.lrange("started", 0, -1) == ["1"], what="the job started")
    second = holding.perform_later("started", 1)  # running, but started: free
    assert second is not None and second != first
    r.set("release", 1)
    wait_for(lambda: r.llen("started") == 2, what="the second one ran")


def test_until_start_frees_the_lock_of_a_job_an_idle_worker_was_waiting_for(redis_url, r, worker):
    holding = jobs.hold.set(unique_for=60, unique_until="start")
    running = worker(concurrency=1)
    # The processor waits in BLMOVE (the idle path), not in a batched fetch.
    wait_for(lambda: running.launcher.manager.buffer.blocking == 1, what="the processor idle")
    assert holding.perform_later("idle", 1)
    wait_for(lambda: r.lrange("idle", 0, -1) == ["1"], what="the job started")
    assert holding.perform_later("idle", 1)
    r.set("release", 1)


@pytest.mark.slow
def test_kill_9_of_the_worker_running_a_unique_job_frees_its_lock_within_its_lifetime(
    spawn, redis_url, r
):
    holding = jobs.hold.set(unique_for=10)
    worker = spawn(redis_url, "-c", "2")
    worker.identity(r)  # up and idle: the job starts as soon as it is pushed
    first = holding.perform_later("killed", 1)
    wait_for(lambda: r.lrange("killed", 0, -1) == ["1"], what="the job started")
    worker.kill()
    assert r.get(lock_keys(r)[0]) == first  # held by the killed worker's job
    assert holding.perform_later("killed", 1) is None
    # No worker runs it again: only the lock's lifetime (10 s) frees it.
    assert wait_for(lambda: holding.perform_later("killed", 1), timeout=30, what="lock expired")


class RefreshAccount(
    djqueue.Job, name="u.refresh", unique_for=60, unique_args=lambda args: [args[0]]
):
    def perform(self, account: int, reason: str) -> None:
        jobs.r().rpush("refreshed", f"{account}:{reason}")


def test_a_class_job_declares_it_in_its_class_statement(redis_url, r):
    assert RefreshAccount.perform_later(3, "a")
    assert RefreshAccount.perform_later(3, "b") is None
    assert RefreshAccount.set(unique_for=None).perform_later(3, "c")  # off for one push
    assert len(queued(r)) == 2 and "unique_digest" not in queued(r)[0]


def test_a_raw_client_push_is_checked_and_made_unique_too(redis_url, r):
    client = djqueue.client.get_client()
    item = {"class": "Ruby::Sync", "args": [1], "unique_for": 30}
    assert client.push(dict(item)) and client.push(dict(item)) is None
    with pytest.raises(ValueError, match="unique_for must be seconds"):
        client.push({**item, "unique_for": "soon"})
    assert len(queued(r)) == 1


# -- the pages -----------------------------------------------------------------------------------


def test_the_job_page_shows_the_rule_and_who_holds_the_lock(redis_url, r):
    flask = pytest.importorskip("flask")
    from flask_djqueue import DjQueue
    from flask_djqueue.dashboard import dashboard_blueprint

    app = flask.Flask("unique_pages")
    app.config.update(SECRET_KEY="test", DJQUEUE_REDIS_URL=redis_url)
    DjQueue(app)
    app.register_blueprint(dashboard_blueprint(auth=lambda permission: True), url_prefix="/jobs")
    client = app.test_client()
    jid = sync_account.set(unique_until="start").perform_in(600, 9)
    (entry,) = ScheduledSet()
    page = client.get(f"/jobs/scheduled/{entry.key}").text
    assert "until it starts, for 1 min at most" in page and "held by this job" in page
    assert "Unique lock expires" in page
    r.set(next(iter(lock_keys(r))), "f" * 24)  # expired and taken by a later push
    assert f"held by job {'f' * 24}" in client.get(f"/jobs/scheduled/{entry.key}").text
    r.delete(*lock_keys(r))
    assert "free: a push of the same job" in client.get(f"/jobs/scheduled/{entry.key}").text
    assert jid is not None
