"""The worker runtime in this process, against the session's real Redis: jobs run with their
arguments, queues are taken in order, failures land in retry then dead, bad data is buried,
scheduled jobs wait for their time, the heartbeat tells Redis what runs."""

from __future__ import annotations

import json
import re
import time

import pytest

import djqueue
from djqueue import retry_policy, signals
from djqueue.retry_policy import decode_backtrace
from djqueue.store.keys import Keys
from djqueue.store.working import requeue_process

from . import jobs_for_worker as jobs
from .worker_support import wait_for


def test_a_job_runs_with_its_args(worker, r):
    jid = jobs.record.perform_later("out", 1, "two", {"three": [3.5, None]})
    w = worker()
    assert wait_for(lambda: r.lrange("out", 0, -1)) == ["[1, 'two', {'three': [3.5, None]}]"]
    wait_for(lambda: not r.llen(f"djqueue:working:{w.identity}:default"))
    assert r.llen("queue:default") == 0
    w.stop()
    assert r.get("stat:processed") == "1"
    assert r.get("stat:failed") is None
    assert jid


def test_strict_order_takes_queues_in_the_order_given(worker, r):
    for i in range(5):
        jobs.order.set(queue="low").perform_later("seen", f"low{i}")
    for i in range(5):
        jobs.order.set(queue="high").perform_later("seen", f"high{i}")
    worker(concurrency=1, queues=(("high", 0), ("low", 0)))
    seen = wait_for(lambda: r.llen("seen") == 10 and r.lrange("seen", 0, -1))
    assert seen == [f"high{i}" for i in range(5)] + [f"low{i}" for i in range(5)]


def test_weighted_order_mixes_queues_by_weight(worker, r):
    jobs.order.set(queue="a").perform_bulk([["seen", "a"]] * 200)
    jobs.order.set(queue="b").perform_bulk([["seen", "b"]] * 200)
    worker(concurrency=1, queues=(("a", 3), ("b", 1)))
    seen = wait_for(lambda: r.llen("seen") == 400 and r.lrange("seen", 0, -1), timeout=60)
    first = seen[:100]
    # With weights 3:1, queue a comes first in 3 of 4 fetches: about 75 of the first 100.
    assert 55 <= first.count("a") <= 95
    assert first.count("b") >= 5


def test_a_failing_job_lands_in_retry_with_sidekiqs_fields(worker, r):
    jid = jobs.fail.perform_later("boom")
    w = worker()
    member, score = wait_for(lambda: r.zrange("retry", 0, -1, withscores=True))[0]
    job = json.loads(member)
    assert job["jid"] == jid
    assert job["class"] == "t.fail"
    assert job["args"] == ["boom"]
    assert job["queue"] == "default"
    assert job["retry"] == 3
    assert job["error_class"] == "ValueError"
    assert job["error_message"] == "boom"
    assert job["retry_count"] == 0
    assert isinstance(job["failed_at"], float)
    assert "retried_at" not in job
    assert decode_backtrace(job["error_backtrace"])[0].endswith(":in `fail'")  # by default
    assert job["failed_at"] + 15 <= score <= job["failed_at"] + 15 + 9
    assert r.llen(f"djqueue:working:{w.identity}:default") == 0
    w.stop()
    assert r.get("stat:failed") == "1"
    assert r.get("stat:processed") == "1"


def test_a_failed_job_keeps_its_traceback_by_default_innermost_first(worker, r):
    jobs.nested.perform_later("order-7")
    jobs.no_backtrace.perform_later("order-8")
    worker()
    entries = wait_for(lambda: r.zcard("retry") == 2 and r.zrange("retry", 0, -1))
    failed = {job["class"]: job for job in map(json.loads, entries)}
    lines = decode_backtrace(failed["t.nested"]["error_backtrace"])
    assert lines[0].endswith(":in `_charge'") and "jobs_for_worker.py:" in lines[0]
    assert lines[1].endswith(":in `nested'")
    # The job's own frames only: the worker's frames around it are left out.
    assert not any("/djqueue/" in line for line in lines), lines
    assert "error_backtrace" not in failed["t.no_backtrace"]  # backtrace: false keeps none


def test_a_runaway_recursion_keeps_a_bounded_traceback(worker, r):
    jobs.recurse.perform_later()
    worker()
    job = json.loads(wait_for(lambda: r.zrange("retry", 0, -1))[0])
    lines = decode_backtrace(job["error_backtrace"])
    assert len(json.dumps(lines, separators=(",", ":"))) <= retry_policy.MAX_BACKTRACE_BYTES
    assert len(job["error_backtrace"]) < 2_000  # compressed, as stored
    assert lines[0].endswith(":in `_deeper'")
    assert re.fullmatch(r"\[previous line repeated \d+ more times\]", lines[1])
    assert lines[2].endswith(":in `recurse'")


def test_retries_then_dead_with_hooks_and_signals(worker, r):
    dead: list[dict] = []
    retried: list[float] = []

    def on_dead(sender, payload, exception, **kw):
        dead.append(payload)

    def on_retry(sender, payload, exception, retry_at, **kw):
        retried.append(retry_at)

    signals.job_dead.connect(on_dead)
    signals.job_retry_scheduled.connect(on_retry)
    try:
        jid = jobs.flaky.perform_later("missing")
        worker()
        member = wait_for(lambda: r.zrange("dead", 0, -1))[0]
    finally:
        signals.job_dead.disconnect(on_dead)
        signals.job_retry_scheduled.disconnect(on_retry)
    job = json.loads(member)
    assert job["jid"] == jid
    assert job["retry_count"] == 1
    assert job["error_class"] == "KeyError"
    assert job["error_message"] == "'missing'"
    assert job["retried_at"] >= job["failed_at"]
    lines = decode_backtrace(job["error_backtrace"])
    assert 1 <= len(lines) <= 5
    assert "jobs_for_worker.py" in lines[0] and "in `flaky'" in lines[0]
    assert r.zcard("retry") == 0
    assert r.lrange("exhausted", 0, -1) == [f"{jid}:KeyError"]
    assert len(retried) == 1
    assert [p["jid"] for p in dead] == [jid]


def test_the_retry_field_is_read_as_sidekiq_reads_it(worker, r):
    """false: dropped (job_dead sent), not buried; 0: straight to dead, unless dead: false;
    "True" (a string some clients write): the default retries; missing: the registered job's
    own option, whoever pushed the payload."""
    dropped = jobs.fail.set(retry=False).perform_later("retry false")
    to_dead = jobs.fail.set(retry=0).perform_later("retry 0")
    dropped_too = jobs.fail.set(retry=0, dead=False).perform_later("retry 0, dead false")
    retried = djqueue.Client().push({"class": "t.fail", "args": ["x"], "retry": "True"})
    for jid, name in (("a" * 24, "t.fail_quietly"), ("b" * 24, "t.fail")):  # no retry field
        r.lpush("queue:default", json.dumps({"class": name, "args": ["x"], "jid": jid}))
    deaths: list[str] = []

    def died(sender, payload, **extra):
        deaths.append(payload["jid"])

    signals.job_dead.connect(died)
    try:
        jobs.record.perform_later("after")
        w = worker(concurrency=1)
        wait_for(lambda: r.llen("after"))
        w.stop()
    finally:
        signals.job_dead.disconnect(died)
    assert [json.loads(m)["jid"] for m in r.zrange("dead", 0, -1)] == [to_dead]
    retries = {json.loads(m)["jid"]: json.loads(m) for m in r.zrange("retry", 0, -1)}
    assert set(retries) == {retried, "b" * 24}
    assert retries[retried]["retry"] == "True" and retries[retried]["retry_count"] == 0
    assert sorted(deaths) == sorted([dropped, to_dead, dropped_too, "a" * 24])
    assert r.get("stat:failed") == "6"


def test_unknown_job_goes_to_retry_and_the_worker_goes_on(worker, r):
    djqueue.Client().push({"class": "nope.Missing", "args": [1]})
    jobs.record.perform_later("after", "ok")
    worker(concurrency=1)
    assert wait_for(lambda: r.lrange("after", 0, -1)) == ["['ok']"]
    job = json.loads(wait_for(lambda: r.zrange("retry", 0, -1))[0])
    assert job["error_class"] == "djqueue.errors.UnknownJob"
    assert "nope.Missing" in job["error_message"]


def test_malformed_payloads_go_to_dead_with_their_text(worker, r):
    """Text that is not JSON is buried as it is; JSON that is not a job is wrapped in a job of
    class djqueue.Malformed with the text as its argument (Sidekiq's Web UI needs objects)."""
    bad = ["[1, 2]", '{"args": [1]}', '{"class": "t.record", "args": "x"}', "42"]
    deep = "[" * 100_000 + "]" * 100_000  # RecursionError, not ValueError, when parsed
    for text in ["not json {", deep, *bad]:
        r.lpush("queue:default", text)
    jobs.record.perform_later("after", "ok")
    worker(concurrency=1)
    assert wait_for(lambda: r.lrange("after", 0, -1)) == ["['ok']"]
    wait_for(lambda: r.zcard("dead") == 6)
    dead = r.zrange("dead", 0, -1)
    assert "not json {" in dead and deep in dead
    wrapped = [json.loads(m) for m in dead if m not in ("not json {", deep)]
    assert sorted(job["args"][0] for job in wrapped) == sorted(bad)
    assert {job["class"] for job in wrapped} == {"djqueue.Malformed"}
    assert {job["queue"] for job in wrapped} == {"default"}


def test_a_scheduled_job_runs_after_its_time_and_not_before(worker, r):
    worker()
    at = time.time() + 1.5
    jobs.when.perform_at(at, "ran")
    ran_at = float(wait_for(lambda: r.lrange("ran", 0, -1))[0])
    assert ran_at >= at
    assert r.zcard("schedule") == 0


def test_heartbeat_shows_the_process_and_its_busy_work(worker, r):
    jid = jobs.slow.perform_later("slow", 2.0)
    w = worker(concurrency=2, tag="web1", labels=("blue",))
    wait_for(lambda: r.lrange("slow", 0, -1))
    wait_for(lambda: r.hget(w.identity, "busy") == "1")
    assert w.identity in r.smembers("processes")
    process = r.hgetall(w.identity)
    info = json.loads(process["info"])
    assert info["identity"] == w.identity
    assert info["concurrency"] == 2 and info["queues"] == ["default"]
    assert info["tag"] == "web1" and info["labels"] == ["blue"]
    assert process["quiet"] == "false"
    assert int(process["rss"]) > 0 and int(process["rtt_us"]) >= 0
    assert 0 < r.ttl(w.identity) <= 60
    for key in (f"{w.identity}:work", f"{w.identity}:workers"):
        (value,) = r.hgetall(key).values()
        work = json.loads(value)
        assert work["queue"] == "default"
        assert json.loads(work["payload"])["jid"] == jid
        assert isinstance(work["run_at"], int)
    w.stop()
    assert w.identity not in r.smembers("processes")
    assert not r.exists(w.identity, f"{w.identity}:work", f"{w.identity}:workers")
    assert r.get("stat:processed") == "1"
    assert r.get(f"stat:processed:{time.strftime('%Y-%m-%d', time.gmtime())}") == "1"


def test_heartbeat_writes_what_sidekiq_8_reads(worker, r):
    """Sidekiq 8.1's readers (checked against its lib/sidekiq/api.rb, launcher.rb, monitor.rb
    and web/views/busy.html.erb): ``ProcessSet#each`` takes ``concurrency`` from the hash, not
    from ``info`` (0 when missing); ``Process#queues`` and ``#weights`` come from each capsule's
    ``weights`` when ``info`` has ``capsules``; ``embedded?`` hides Quiet and Stop."""
    w = worker(concurrency=3, queues=(("critical", 2), ("default", 1)))
    wait_for(lambda: r.hget(w.identity, "concurrency"))
    fields = r.hmget(w.identity, "info", "concurrency", "busy", "beat", "quiet", "rss", "rtt_us")
    info = json.loads(fields[0])
    assert fields[1] == "3" and fields[2] == "0" and fields[4] == "false"
    assert float(fields[3]) > 0 and int(fields[5]) > 0 and int(fields[6]) >= 0
    (capsule,) = info["capsules"].values()
    assert capsule == {
        "concurrency": 3,
        "mode": "weighted",
        "weights": {"critical": 2, "default": 1},
    }
    assert list(capsule["weights"]) == info["queues"] == ["critical", "default"]
    assert info["embedded"] is False and info["concurrency"] == 3
    for name in ("hostname", "started_at", "pid", "tag", "labels", "identity", "version"):
        assert name in info


def test_remote_tstp_quiets_the_process(worker, r):
    w = worker()
    r.lpush(f"{w.identity}-signals", "TSTP")
    wait_for(lambda: r.hget(w.identity, "quiet") == "true")
    jobs.record.perform_later("after")
    time.sleep(1.0)
    assert r.llen("queue:default") == 1
    assert not r.exists("after")


def test_quiet_halts_the_pollers_and_the_process_beats_on(worker, r):
    w = worker()
    w.launcher.quiet()
    wait_for(lambda: r.hget(w.identity, "quiet") == "true")
    pollers = (w.launcher.poller.thread, w.launcher.periodic_poller.thread)
    wait_for(lambda: not any(t.is_alive() for t in pollers), what="the pollers' end")
    beat = r.hget(w.identity, "beat")
    wait_for(lambda: r.hget(w.identity, "beat") != beat, what="a beat after going quiet")


def test_a_stopping_process_beats_on_until_its_running_job_has_finished(worker, r):
    """The manager is stopped first and the heartbeat last: while shutdown waits for a running
    job the process stays listed, quiet and busy, and its beats go on."""
    w = worker(timeout=20)
    jobs.slow.perform_later("slow", 3)
    wait_for(lambda: r.lrange("slow", 0, -1) == ["started"])
    w.launcher.signal("TERM")
    wait_for(lambda: r.hget(w.identity, "quiet") == "true")
    beat = r.hget(w.identity, "beat")
    wait_for(lambda: r.hget(w.identity, "beat") not in (beat, None), what="a beat while stopping")
    assert r.hget(w.identity, "busy") == "1"
    w.thread.join(30)
    assert r.lrange("slow", 0, -1) == ["started", "finished"]
    assert w.identity not in r.smembers("processes")


def test_orphaned_jobs_of_a_dead_process_are_pushed_back(worker, r):
    dead = "gone-host:4242:0123456789ab"
    live = "other-host:4343:ba9876543210"
    r.hset("djqueue:working_lists", mapping={dead: '["default"]', live: '["default"]'})
    r.hset(live, "info", "{}")
    orphan = json.dumps({"class": "t.record", "args": ["orphan"], "jid": "a" * 24})
    kept = json.dumps({"class": "t.record", "args": ["kept"], "jid": "b" * 24})
    r.lpush(f"djqueue:working:{dead}:default", orphan)
    r.lpush(f"djqueue:working:{live}:default", kept)
    worker()
    wait_for(lambda: r.llen("orphan"))
    assert not r.exists(f"djqueue:working:{dead}:default")
    assert not r.hexists("djqueue:working_lists", dead)
    assert r.lrange(f"djqueue:working:{live}:default", 0, -1) == [kept]


def test_jobs_of_a_dead_process_go_back_to_the_front_of_their_queue_oldest_first(worker, r):
    """Pushed back after a crash, a dead process's jobs are the next ones taken, before the
    jobs that were waiting, in the order they were taken."""
    for label in ("waiting-1", "waiting-2"):
        jobs.order.perform_later("ran", label)
    dead = "gone-host:4242:0123456789ab"
    keys = Keys(djqueue.get_settings().namespace)
    for n, label in enumerate(("taken-first", "taken-second")):
        taken = {"class": "t.order", "args": ["ran", label], "jid": f"{n:024x}"}
        r.lpush(keys.working(dead, "default"), json.dumps(taken))  # newest on the left
    assert requeue_process(r, keys, dead, ["default"], crashed=True) == 2
    worker(concurrency=1)
    wait_for(lambda: r.llen("ran") == 4, what="every job")
    assert r.lrange("ran", 0, -1) == ["taken-first", "taken-second", "waiting-1", "waiting-2"]


@pytest.mark.parametrize("job", [jobs.hold_then_fail, jobs.ahold_then_fail], ids=["sync", "async"])
def test_a_job_that_fails_after_it_was_pushed_back_is_not_also_retried(worker, r, job):
    """Its process was judged dead and its jobs pushed back while it ran: the job is in its
    queue again (it runs again from there), so its late failure writes no retry entry."""
    jid = job.perform_later("log")
    w = worker(concurrency=1)
    wait_for(lambda: r.lrange("log", 0, -1) == ["started"], what="start")
    w.launcher.manager.quiet()  # takes nothing more, so the job stays in its queue
    # An idle processor's blocking fetch (the async job leaves the thread free) ends with the
    # quiet; one still waiting would take the job pushed back below.
    wait_for(lambda: r.info("clients")["blocked_clients"] == 0, what="no fetch waiting")
    keys = Keys(djqueue.get_settings().namespace)
    assert requeue_process(r, keys, w.identity, ["default"], drop_index=False, crashed=True) == 1
    assert djqueue.status(jid).state == "pending"
    r.set("release", 1)
    manager = w.launcher.manager
    # Past its steps, the retry write included: no processor holds it, the loop runs nothing.
    wait_for(
        lambda: not any(p.unit for p in manager.processors) and not manager.aio.busy(),
        what="the job's end",
    )
    assert r.zcard("retry") == 0 and r.zcard("dead") == 0
    assert [json.loads(raw)["jid"] for raw in r.lrange("queue:default", 0, -1)] == [jid]
    assert djqueue.status(jid).state == "pending"


def test_a_job_no_processor_holds_is_pushed_back(worker, r):
    w = worker()
    leaked = json.dumps({"class": "t.record", "args": ["leaked"], "jid": "c" * 24})
    r.lpush(f"djqueue:working:{w.identity}:default", leaked)
    wait_for(lambda: r.llen("leaked"))


def test_dead_processes_leave_the_processes_set(worker, r):
    r.sadd("processes", "ghost:1:aaaaaaaaaaaa")
    w = worker()
    wait_for(lambda: r.smembers("processes") == {w.identity})


class Fatal(BaseException):
    """Not an Exception: escapes the job's error handling and ends the processor thread."""


def test_a_processor_that_dies_is_replaced(worker, r):
    fired = []

    def kill_once(job, payload, queue, call_next):
        if not fired:
            fired.append(payload["jid"])
            raise Fatal("processor killed")
        return call_next()

    djqueue.server_middleware.add(kill_once)
    try:
        jobs.record.perform_later("first")
        jobs.record.perform_later("second")
        w = worker(concurrency=1)
        wait_for(lambda: r.llen("second"))
        job = json.loads(wait_for(lambda: r.zrange("retry", 0, -1))[0])
        assert job["jid"] == fired[0]
        assert job["error_class"] == f"{__name__}.Fatal"
        assert len(w.launcher.manager.processors) == 1
    finally:
        djqueue.server_middleware.remove(kill_once)


def remote_process(r, identity: str, beat_ago: float, interval: float, job: str) -> None:
    """A djqueue process on another host, as its heartbeats left it, holding ``job``."""
    host, pid, _ = identity.split(":")
    info = {"hostname": host, "pid": int(pid), "identity": identity, "queues": ["default"]}
    info["heartbeat_interval"] = interval
    r.sadd("processes", identity)
    r.hset(identity, mapping={"info": json.dumps(info), "beat": time.time() - beat_ago})
    r.expire(identity, 60)
    r.hset("djqueue:working_lists", identity, json.dumps(["default"]))
    r.lpush(f"djqueue:working:{identity}:default", job)


def test_a_silent_process_on_another_host_loses_its_jobs_within_three_beats(worker, r):
    """Its hash lives 60 s, but three missed heartbeats are enough to take its jobs back."""
    silent = json.dumps({"class": "t.record", "args": ["after", "recovered"], "jid": "c" * 24})
    busy = json.dumps({"class": "t.record", "args": ["after", "stolen"], "jid": "d" * 24})
    remote_process(r, "elsewhere:4242:abcdefabcdef", beat_ago=2.0, interval=0.5, job=silent)
    remote_process(r, "faraway:4343:abcdefabcdef", beat_ago=0.0, interval=30.0, job=busy)
    worker()
    assert wait_for(lambda: r.lrange("after", 0, -1)) == ["['recovered']"]
    assert not r.hexists("djqueue:working_lists", "elsewhere:4242:abcdefabcdef")
    # The other one beat recently by its own interval: its job stays its own.
    assert r.lrange("djqueue:working:faraway:4343:abcdefabcdef:default", 0, -1) == [busy]


def test_a_queue_key_of_the_wrong_type_is_skipped_and_the_others_served(worker, r, caplog):
    """A string where a list belongs used to fail the fetch after it had moved jobs (Lua does
    not roll back): they leaked, came back, and every healthy queue stalled."""
    r.set("queue:broken", "not a list")
    r.sadd("queues", "broken")
    jobs.record.set(queue="high").perform_later("after", "high")
    jobs.record.perform_later("after", "default")
    djqueue.Client().push(
        {"class": "t.record", "args": ["after", "due"], "queue": "broken", "at": time.time() + 0.5}
    )
    jobs.record.perform_in(1.0, "after", "later")
    worker(queues=(("high", 0), ("broken", 0), ("default", 0)))
    wait_for(lambda: len(r.lrange("after", 0, -1)) == 3, what="the three healthy jobs")
    assert sorted(r.lrange("after", 0, -1)) == ["['default']", "['high']", "['later']"]
    assert r.get("queue:broken") == "not a list"
    assert r.zcard("schedule") == 1  # the job for the broken queue waits in the schedule
    messages = [rec.getMessage() for rec in caplog.records]
    assert sum("bad key queue:broken: it holds a string, not a list" in m for m in messages) == 1
    assert sum("cannot move to their queue" in m for m in messages) == 1
    assert not any("lost Redis" in m for m in messages)


def test_a_process_over_its_memory_limit_starts_no_other_job(worker, r):
    """The job that takes the process over ``max_memory`` is its last: the processor that ends
    it takes no other buffered job, even before the main thread acts on the recycling."""
    from djqueue.worker.heartbeat import rss_kb

    limit = rss_kb() // 1024 + 20  # the first 30 MB job goes over it
    jobs.hog.perform_bulk([["hogged", 30] for _ in range(5)])
    w = worker(concurrency=1, max_memory=limit, heartbeat_interval=60)
    w.thread.join(30)
    assert not w.thread.is_alive()
    assert w.launcher.recycling and "--max-memory" in w.launcher.recycling
    assert r.llen("hogged") == 1
    assert r.llen("queue:default") == 4  # the buffered jobs went back to their queue
