"""Periodic jobs: declaring them, the schedule in Redis, and the periodic poller's decisions.

The poller is driven here with chosen times (``PeriodicPoller.poll(now)``) against a real Redis, so
catch-up, daylight-saving changes and disabled ticks are checked on the dates that matter
without waiting for them; tests/test_periodic_workers.py runs real worker processes.
"""

from __future__ import annotations

import datetime as dt
import json
import time
from zoneinfo import ZoneInfo

import pytest

import djqueue
from djqueue import periodic_declaration
from djqueue.api import PeriodicSet, Queue
from djqueue.config import get_settings
from djqueue.errors import ConfigurationError
from djqueue.periodic_cron import CronExpression, InvalidCron, iso
from djqueue.store import Keys
from djqueue.worker.periodic_poller import PeriodicPoller
from djqueue.worker.periodic_sync import sync

NEW_YORK = ZoneInfo("America/New_York")
PARIS = ZoneInfo("Europe/Paris")


def at(year, month, day, hour=0, minute=0, second=0, tz=dt.UTC) -> float:
    return dt.datetime(year, month, day, hour, minute, second, tzinfo=tz).timestamp()


def local(epoch: float, tz=NEW_YORK) -> str:
    return dt.datetime.fromtimestamp(epoch, tz).isoformat()


def declare(cron, job="t.record", **options) -> periodic_declaration.Periodic:
    options.setdefault("name", "every")
    return periodic_declaration.build(cron=cron, job=job, **options)


def poller(r, reload: float = 10.0) -> PeriodicPoller:
    return PeriodicPoller(get_settings(), r, reload=reload)


def pushed(queue="default") -> list[dict]:
    return [json.loads(record.value) for record in Queue(queue)]


# -- expressions --------------------------------------------------------------------------------


def test_five_fields_six_with_seconds_first_a_zone_and_the_shorthands():
    assert CronExpression("*/5 * * * *").next(at(2027, 1, 1, 10, 2)) == at(2027, 1, 1, 10, 5)
    every_ten_seconds = CronExpression("*/10 * * * * *")
    assert every_ten_seconds.has_seconds
    assert every_ten_seconds.next(at(2027, 1, 1, 10, 2, 3)) == at(2027, 1, 1, 10, 2, 10)
    paris = CronExpression("0 9 * * 1-5 Europe/Paris")
    assert paris.zone_name == "Europe/Paris"
    # Friday 2027-01-01 09:00 in Paris is 08:00 UTC; the next is Monday the 4th.
    assert paris.previous(at(2027, 1, 1, 12)) == at(2027, 1, 1, 8)
    assert paris.next(at(2027, 1, 1, 12)) == at(2027, 1, 4, 8)
    assert CronExpression("@hourly").next(at(2027, 1, 1, 10, 2)) == at(2027, 1, 1, 11)
    assert CronExpression("@daily America/New_York").next(at(2027, 1, 1, 12)) == at(2027, 1, 2, 5)
    # A tick exactly at `at` is the previous one, not the next.
    assert CronExpression("0 * * * *").previous(at(2027, 1, 1, 10)) == at(2027, 1, 1, 10)
    assert CronExpression("0 * * * *").next(at(2027, 1, 1, 10)) == at(2027, 1, 1, 11)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("", "a cron expression is needed"),
        ("* * *", "5 fields"),
        ("61 * * * *", "Bad minute"),
        ("0 9 * * * Mars/Olympus", "Bad day-of-week"),
        ("0 9 * * MON-XYZ", "Bad day-of-week"),
    ],
)
def test_a_bad_expression_says_what_is_wrong(text, says):
    with pytest.raises(InvalidCron, match=says):
        CronExpression(text)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("0 0 LW * *", "'LW' in the day-of-month field"),
        ("0 0 * * 5L", "'5L' in the day-of-week field"),
        ("0 0 * * 1#1,5L", "'1#1,5L' in the day-of-week field"),
        ("0 0 */2 * 1", r"'\*/2' in the day-of-month field beside"),
        ("0 0 1 * */2", r"'\*/2' in the day-of-week field beside"),
    ],
)
def test_a_cron_text_sidekiq_cron_reads_otherwise_is_refused_at_declaration(text, says):
    # cronsim steps these; sidekiq-cron's parser refuses or reads them otherwise (see
    # tests/test_periodic_sidekiq_cron2.py), and the schedule is shared with it.
    CronExpression(text)
    with pytest.raises(InvalidCron, match=f"{says}.*sidekiq-cron"):
        djqueue.periodic(text, "Report", name="shared")
    assert "shared" not in {entry.name for entry in periodic_declaration.declared()}


def test_spring_forward_moves_a_skipped_tick_to_the_change_and_fall_back_runs_it_once():
    # 2027-03-14: New York's clocks go from 02:00 to 03:00; 02:30 does not exist that day.
    daily_0230 = CronExpression("30 2 * * * America/New_York")
    ticks = daily_0230.upcoming(at(2027, 3, 13, 12, tz=NEW_YORK), 2)
    assert [local(t) for t in ticks] == ["2027-03-14T03:00:00-04:00", "2027-03-15T02:30:00-04:00"]
    # 2027-11-07: clocks go from 02:00 back to 01:00; 01:30 happens twice, the job runs once.
    daily_0130 = CronExpression("30 1 * * * America/New_York")
    ticks = daily_0130.upcoming(at(2027, 11, 6, 12, tz=NEW_YORK), 2)
    assert [local(t) for t in ticks] == ["2027-11-07T01:30:00-04:00", "2027-11-08T01:30:00-05:00"]
    # A wildcard hour keeps real time: every 30 minutes through the repeated hour.
    half_hourly = CronExpression("*/30 * * * * America/New_York")
    ticks = half_hourly.upcoming(at(2027, 11, 7, 0, 50, tz=NEW_YORK), 4)
    assert [t - ticks[0] for t in ticks] == [0, 1800, 3600, 5400]


def test_the_poller_fires_a_fixed_time_job_once_on_the_night_clocks_go_back(redis_url, r):
    sync([declare("30 1 * * * America/New_York")], get_settings(), r)
    cron = poller(r)
    start = at(2027, 11, 7, 0, 0, tz=NEW_YORK)
    cron.poll(start)  # catches up the day before's tick: not what this test counts
    r.delete("queue:default")
    for minute in range(0, 4 * 60, 5):  # four real hours, every five minutes
        cron.poll(start + minute * 60)
    assert len(pushed()) == 1
    # 01:30 EDT, the first of the two: 05:30 UTC.
    assert r.zrange(Keys().cron_enqueued("every"), -1, -1) == ["2027-11-07T05:30:00Z"]


def test_the_poller_fires_a_skipped_tick_once_when_clocks_go_forward(redis_url, r):
    sync([declare("30 2 * * * Europe/Paris")], get_settings(), r)
    cron = poller(r)
    start = at(2027, 3, 28, 1, 0, tz=PARIS)  # Paris goes from 02:00 to 03:00 that night
    cron.poll(start)  # catches up the day before's tick
    r.delete("queue:default")
    for minute in range(0, 3 * 60, 5):
        cron.poll(start + minute * 60)
    assert len(pushed()) == 1
    assert r.zrange(Keys().cron_enqueued("every"), -1, -1) == ["2027-03-28T01:00:00Z"]


# -- catch-up, claims, disabled ticks ----------------------------------------------------------


def test_a_new_job_waits_for_its_next_tick(redis_url, r):
    sync([declare("0 * * * *")], get_settings(), r)
    poller(r).poll(time.time())
    assert pushed() == []


def test_a_poller_back_after_a_gap_runs_the_latest_missed_tick_once(redis_url, r):
    start = at(2027, 1, 1, 10, 20)
    sync([declare("0 * * * *")], get_settings(), r)
    poller(r).poll(start)  # running at 10:20 (it catches up 10:00: sync ran at today's time)
    r.delete("queue:default")
    restarted = start + 3 * 3600 + 600  # 13:30: the 11:00, 12:00 and 13:00 ticks were missed
    poller(r).poll(restarted)
    jobs = pushed()
    assert len(jobs) == 1
    claims = r.zrange(Keys().cron_enqueued("every"), 0, -1)
    assert "2027-01-01T13:00:00Z" in claims
    assert not {"2027-01-01T11:00:00Z", "2027-01-01T12:00:00Z"} & set(claims)
    # Another poller looking at the same moment finds the tick claimed.
    poller(r).poll(restarted + 1)
    assert len(pushed()) == 1
    assert PeriodicSet().find("every").last_run == pytest.approx(restarted, abs=1)


def test_without_catch_up_a_missed_tick_is_skipped_but_a_late_poll_within_a_minute_fires(
    redis_url, r
):
    sync([declare("0 * * * *", catch_up=False)], get_settings(), r)
    poller(r).poll(at(2027, 1, 1, 13, 30))
    assert pushed() == []
    poller(r).poll(at(2027, 1, 1, 14, 0, 40))
    assert len(pushed()) == 1


def test_ticks_of_a_disabled_job_are_skipped_for_good(redis_url, r):
    sync([declare("0 * * * *")], get_settings(), r)
    entry = PeriodicSet().find("every")
    assert entry.disable()
    poller(r).poll(at(2027, 1, 1, 14, 0, 5))
    assert pushed() == []
    assert "2027-01-01T14:00:00Z" in r.zrange(Keys().cron_enqueued("every"), 0, -1)
    entry.enable()
    poller(r).poll(at(2027, 1, 1, 14, 30))  # a fresh poller would catch up 14:00: not now
    assert pushed() == []
    poller(r).poll(at(2027, 1, 1, 15, 0, 1))
    assert len(pushed()) == 1


def test_a_job_enabled_since_the_last_read_fires_at_its_next_tick(redis_url, r):
    sync([declare("* * * * *")], get_settings(), r)
    PeriodicSet().find("every").disable()
    cron = poller(r, reload=3600)
    cron.poll(at(2027, 1, 1, 10, 0, 1))  # reads the schedule: disabled
    PeriodicSet().find("every").enable()
    cron.poll(at(2027, 1, 1, 10, 1, 1))  # before the next read: the claim step sees it enabled
    assert len(pushed()) == 1


def test_run_now_pushes_records_the_run_and_leaves_the_ticks_alone(redis_url, r):
    sync([declare("0 3 * * *", args=["nightly", 2], queue="reports")], get_settings(), r)
    entry = PeriodicSet().find("every")
    claims = r.zrange(Keys().cron_enqueued("every"), 0, -1)
    jid = entry.run_now()
    (job,) = pushed("reports")
    assert job["jid"] == jid and job["class"] == "t.record" and job["args"] == ["nightly", 2]
    assert entry.history()[0]["jid"] == jid
    assert PeriodicSet().find("every").last_run is not None
    assert r.zrange(Keys().cron_enqueued("every"), 0, -1) == claims


def test_a_hash_left_without_its_member_of_cron_jobs_never_fires(redis_url, r):
    # What sidekiq-cron 2 leaves of a 1.8 entry it moved (here while another entry keeps
    # cron_jobs in use): the hash, outside the set. A stale read of it must not push.
    sync([declare("0 3 * * *"), declare("0 4 * * *", name="other")], get_settings(), r)
    entry = PeriodicSet().find("every")
    r.srem("cron_jobs", "cron_job:every")
    assert entry is not None and entry.run_now() is None
    assert pushed() == [] and r.exists(Keys().cron_job("every"))


def test_client_middleware_runs_for_periodic_pushes_and_may_stop_one(redis_url, r):
    sync([declare("* * * * *")], get_settings(), r)
    seen = []

    def middleware(job, payload, queue, call_next):
        seen.append(job)
        return None if payload["args"] == [] and seen.count(job) > 1 else call_next()

    djqueue.client_middleware.add(middleware)
    try:
        cron = poller(r)
        cron.poll(at(2027, 1, 1, 10, 0, 1))
        cron.poll(at(2027, 1, 1, 10, 1, 1))
    finally:
        djqueue.client_middleware.remove(middleware)
    assert seen == ["t.record", "t.record"]
    assert len(pushed()) == 1


# -- declaring -----------------------------------------------------------------------------------


def test_job_cron_declares_a_periodic_job_named_after_it(redis_url):
    @djqueue.job(name="t.nightly", cron="0 3 * * * Europe/Paris", queue="reports", retry=3)
    def nightly():
        pass

    try:
        (entry,) = [e for e in periodic_declaration.declared() if e.name == "t.nightly"]
        assert entry.cron == "0 3 * * * Europe/Paris"
        assert entry.message() == {
            "retry": 3,
            "class": "t.nightly",
            "args": [],
            "queue": "reports",
        }
    finally:
        periodic_declaration.forget("t.nightly")
        djqueue.registry.unregister("t.nightly")


def test_periodic_registration_takes_args_a_zone_and_a_name(redis_url):
    entry = djqueue.periodic(
        "0 9 * * 1-5", "Billing::Run", name="billing", args=[1], timezone="America/New_York"
    )
    try:
        assert entry.cron == "0 9 * * 1-5 America/New_York"
        assert entry in periodic_declaration.declared()
        with pytest.raises(ValueError, match="declared twice"):
            djqueue.periodic("0 10 * * *", "Billing::Run", name="billing")
    finally:
        periodic_declaration.forget("billing")


@pytest.mark.parametrize(
    ("entry", "says"),
    [
        ({"cron": "0 3 * * *"}, "'cron' and 'class' are required"),
        ({"cron": "0 3 * * * *x", "class": "A"}, "Bad day-of-week"),
        ({"cron": "0 3 * * *", "class": "A", "timezone": "Nowhere/City"}, "time zone"),
        ({"cron": "0 3 * * *", "class": "A", "args": [object()]}, "JSON"),
        ({"cron": "0 3 * * *", "class": "A", "retries": 3}, "unknown job option"),
    ],
)
def test_a_bad_periodic_setting_names_the_entry_and_the_problem(entry, says):
    with pytest.raises(ConfigurationError, match=says) as caught:
        djqueue.configure(periodic={"nightly": entry})
    assert "nightly" in str(caught.value) and "periodic" in str(caught.value).lower()


def test_settings_entries_are_declared_beside_the_codes(redis_url, r):
    settings = get_settings().replace(
        periodic={"ruby-report": {"cron": "*/5 * * * *", "class": "ReportWorker", "retry": 2}}
    )
    (entry,) = periodic_declaration.declared(settings.periodic)
    assert entry.message() == {"retry": 2, "class": "ReportWorker", "args": [], "queue": "default"}


# -- the schedule in Redis -----------------------------------------------------------------------


def test_a_redeploy_keeps_an_operators_disable_and_a_new_cron_waits_for_its_tick(redis_url, r):
    sync([declare("0 * * * *")], get_settings(), r)
    PeriodicSet().find("every").disable()
    sync([declare("*/10 * * * *")], get_settings(), r)
    entry = PeriodicSet().find("every")
    assert entry.cron == "*/10 * * * *" and not entry.enabled
    entry.enable()
    poller(r).poll(time.time())
    assert pushed() == []  # the new schedule's current tick was claimed when it was saved


def test_a_job_removed_from_the_code_leaves_redis_once_no_running_worker_declares_it(redis_url, r):
    settings = get_settings()
    sync([declare("0 * * * *", name="kept"), declare("0 * * * *", name="old")], settings, r)
    r.sadd("cron_jobs", "cron_job:ruby")  # sidekiq-cron's own entry: never djqueue's to remove
    r.hset("cron_job:ruby", mapping={"name": "ruby", "cron": "* * * * *", "klass": "RubyJob"})
    # A worker of the previous release still runs and declares "old".
    r.sadd("processes", "old-host:1:abc")
    r.hset(
        "old-host:1:abc",
        mapping={"info": json.dumps({"identity": "old-host:1:abc", "periodic": ["kept", "old"]})},
    )
    created, removed = sync([declare("0 * * * *", name="kept")], settings, r)
    assert removed == [] and {e.name for e in PeriodicSet()} == {"kept", "old", "ruby"}
    # It stopped: the next start removes "old", and only that.
    r.srem("processes", "old-host:1:abc")
    r.delete("old-host:1:abc")
    created, removed = sync([declare("0 * * * *", name="kept")], settings, r)
    assert removed == ["old"] and {e.name for e in PeriodicSet()} == {"kept", "ruby"}
    assert not r.exists("cron_job:old", "cron_job:old:enqueued")


def test_a_worker_lists_its_periodic_jobs_in_its_heartbeat(redis_url, r, worker):
    djqueue.periodic("0 3 * * *", "t.record", name="listed")
    try:
        running = worker()
        info = json.loads(r.hget(running.identity, "info"))
        assert info["periodic"] == ["listed"]
        assert PeriodicSet().find("listed").declared
    finally:
        periodic_declaration.forget("listed")


def test_the_stored_entry_is_sidekiq_crons(redis_url, r):
    sync([declare("*/5 * * * *", args=[{"a": 1}], description="five")], get_settings(), r)
    assert r.smembers("cron_jobs") == {"cron_job:every"}
    stored = r.hgetall("cron_job:every")
    assert stored["klass"] == "t.record" and stored["cron"] == "*/5 * * * *"
    assert json.loads(stored["args"]) == [{"a": 1}]
    assert json.loads(stored["message"])["queue"] == "default"
    assert stored["status"] == "enabled" and stored["description"] == "five"
    (claim,) = r.zrange("cron_job:every:enqueued", 0, -1, withscores=True)
    assert claim[0] == iso(claim[1])


# -- the command line ----------------------------------------------------------------------------


def test_djqueue_periodic_lists_and_acts(redis_url, r, capsys):
    from djqueue.worker.cli import main

    sync(
        [declare("0 3 * * * Europe/Paris", name="nightly", args=[1]), declare("* * * * *")],
        get_settings(),
        r,
    )
    r.sadd("cron_jobs", "cron_job:ruby")
    r.hset("cron_job:ruby", mapping={"name": "ruby", "cron": "every 5 minutes", "klass": "R"})

    def run(*args: str) -> tuple[int, str, str]:
        code = main(["periodic", *args, "--redis-url", redis_url])
        out, err = capsys.readouterr()
        return code, out, err

    code, out, _ = run()
    table, bad = out.split("\n\n")
    header, *rows = table.splitlines()
    assert header.split()[:4] == ["name", "status", "cron", "job"]
    assert [row.split()[0] for row in rows] == ["every", "nightly", "ruby"]
    assert "0 3 * * * Europe/Paris" in rows[1] and "never" in rows[1]
    assert "(bad: see below)" in rows[2]
    # The command line says it as the worker's log does (one message, `PeriodicJob.not_fired`).
    assert "ruby: not fired by djqueue: 'every 5 minutes': a cron expression has 5 fields" in bad
    assert bad.rstrip().endswith("(sidekiq-cron may still fire it)")
    assert run("disable", "nightly")[:2] == (0, "nightly: disabled\n")
    code, out, _ = run("run", "nightly")
    assert code == 0 and out.startswith("nightly: pushed ")
    assert pushed()[0]["args"] == [1]
    assert "disabled" in run()[1].splitlines()[2]
    code, _, err = run("enable", "missing")
    assert code == 1 and "no periodic job named 'missing'" in err
    code, out, _ = run("delete", "nightly")
    assert "comes back at the next worker start" in out
    assert PeriodicSet().find("nightly") is None


def test_an_entry_that_cannot_be_pushed_is_reported_and_the_others_still_fire(redis_url, r, caplog):
    sync([declare("* * * * *", name="good")], get_settings(), r)
    r.sadd("cron_jobs", "cron_job:bad")
    r.hset(
        "cron_job:bad",
        mapping={
            "name": "bad",
            "cron": "* * * * *",
            "klass": "X",
            "args": "[1]",
            "message": json.dumps({"class": "X", "queue": "no spaces allowed"}),
        },
    )
    poller(r).poll(at(2027, 1, 1, 10, 0, 1))
    assert [job["class"] for job in pushed()] == ["t.record"]
    assert "periodic bad: tick 2027-01-01T10:00:00Z not pushed" in caplog.text


def test_a_periodic_run_over_the_size_setting_is_reported_and_its_tick_stays_unclaimed(
    redis_url, r, caplog
):
    djqueue.configure(redis_url=redis_url, max_payload_bytes=1000)
    sync([declare("* * * * *", name="big", args=["x" * 990])], get_settings(), r)
    poller(r).poll(at(2027, 1, 1, 10, 0, 1))
    assert pushed() == []
    assert "periodic big: tick 2027-01-01T10:00:00Z not pushed" in caplog.text
    assert "over the max_payload_bytes setting (1,000)" in caplog.text
    assert iso(at(2027, 1, 1, 10)) not in r.zrange(Keys().cron_enqueued("big"), 0, -1)


def test_an_active_job_entry_is_pushed_in_active_jobs_wrapper(redis_url, r):
    r.sadd("cron_jobs", "cron_job:aj")
    r.hset(
        "cron_job:aj",
        mapping={
            "name": "aj",
            "cron": "* * * * *",
            "klass": "CleanupJob",
            "args": "[7]",
            "active_job": "true",
            "message": json.dumps({"queue": "low"}),
        },
    )
    jid = PeriodicSet().find("aj").run_now()
    (job,) = pushed("low")
    assert job["jid"] == jid
    assert job["class"] == "ActiveJob::QueueAdapters::SidekiqAdapter::JobWrapper"
    assert job["wrapped"] == "CleanupJob"
    (wrapped,) = job["args"]
    assert wrapped["job_class"] == "CleanupJob" and wrapped["arguments"] == [7]
    assert wrapped["queue_name"] == "low"


def test_a_job_class_declares_its_schedule_too(redis_url):
    class Nightly(djqueue.Job, name="t.class-nightly", cron="@daily"):
        def perform(self):
            pass

    try:
        (entry,) = [e for e in periodic_declaration.declared() if e.name == "t.class-nightly"]
        assert entry.cron == "@daily" and entry.job == "t.class-nightly"
    finally:
        periodic_declaration.forget("t.class-nightly")
        djqueue.registry.unregister("t.class-nightly")


def test_a_poller_woken_late_fires_every_tick_it_slept_through(redis_url, r):
    sync([declare("* * * * * *")], get_settings(), r)  # every second
    cron = poller(r)
    start = at(2027, 1, 1, 10, 0, 0)
    cron.poll(start + 0.01)
    r.delete("queue:default")
    cron.poll(start + 3.5)  # overslept the wake-ups at 1, 2 and 3
    claims = r.zrange(Keys().cron_enqueued("every"), 0, -1)
    assert {"2027-01-01T10:00:01Z", "2027-01-01T10:00:02Z", "2027-01-01T10:00:03Z"} <= set(claims)
    assert len(pushed()) == 3
    cron.poll(start + 300)  # a gap longer than a minute: the latest tick only
    assert len(pushed()) == 4


def test_a_tick_whose_push_met_a_redis_outage_is_tried_again(tmp_path):
    from djqueue.config import Settings

    from .redis_server import RedisServer

    server = RedisServer(durable=True).start()
    try:
        settings = Settings(redis_url=server.url)
        client = server.client(decode_responses=True)
        sync([declare("0 * * * *")], settings, client)
        cron = PeriodicPoller(settings, server.client(socket_timeout=1), reload=3600)
        cron.poll(at(2027, 1, 1, 10, 0, 5))  # catches up 10:00
        server.stop()
        with pytest.raises(Exception):  # noqa: B017 - the outage, however redis-py words it
            cron.poll(at(2027, 1, 1, 11, 0, 5))
        server.start()
        cron.poll(at(2027, 1, 1, 11, 0, 30))
        claims = server.client(decode_responses=True).zrange("cron_job:every:enqueued", 0, -1)
        assert "2027-01-01T11:00:00Z" in claims
        assert server.client().llen("queue:default") == 2
    finally:
        server.close()


def test_the_poller_sleeps_through_the_hour_clocks_go_back(redis_url, r):
    sync([declare("30 2 * * * Europe/Paris")], get_settings(), r)
    cron = poller(r)
    # 2027-10-31: Paris goes from 03:00 back to 02:00 at 01:00 UTC.
    for minute in range(0, 60, 7):
        now = at(2027, 10, 31, 1, minute)
        assert cron.poll(now) > now, "a wake-up time in the past would spin the poller"


def test_a_disabled_jobs_skipped_ticks_are_trimmed_like_the_others(redis_url, r):
    sync([declare("* * * * * *")], get_settings(), r)
    PeriodicSet().find("every").disable()
    cron = poller(r)
    start = at(2027, 1, 1, 10, 0, 0)
    cron.poll(start)
    cron.poll(start + 2 * 24 * 3600)  # two days later: the claims from back then are gone
    claims = r.zrange(Keys().cron_enqueued("every"), 0, -1, withscores=True)
    assert all(score > start for _, score in claims)


# -- bad entries ----------------------------------------------------------------------------------


def hand_written(r, name: str, **fields: str) -> None:
    """An entry written as sidekiq-cron (or a hand) writes it; a field given as "" is left out."""
    values = {"name": name, "cron": "* * * * *", "klass": "X", **fields}
    r.sadd("cron_jobs", f"cron_job:{name}")
    r.hset(f"cron_job:{name}", mapping={k: v for k, v in values.items() if v})


#: Every way an entry can be bad, and what djqueue says about it.
BAD = {
    "string": "cron_job:string is a string, not a hash",
    "nocron": "no 'cron' field",
    "noclass": "no job class",
    "badargs": "'args' is not JSON",
    "badmessage": "'message' is not a JSON object",
    "english": "'every 5 minutes': a cron expression has 5 fields",
    "claims": "cron_job:claims:enqueued is a string, not a sorted set",
    "history": "cron_job:history:jid_history is a hash, not a list",
}


def write_bad_entries(r) -> None:
    r.sadd("cron_jobs", "cron_job:string")
    r.set("cron_job:string", "not a hash")
    hand_written(r, "nocron", cron="")
    hand_written(r, "noclass", klass="")
    hand_written(r, "badargs", args="[1,")
    hand_written(r, "badmessage", message="{not json")
    hand_written(r, "english", cron="every 5 minutes")
    hand_written(r, "claims")
    r.set("cron_job:claims:enqueued", "not a zset")
    hand_written(r, "history")
    r.hset("cron_job:history:jid_history", "not", "a list")


def test_bad_entries_are_skipped_logged_once_by_name_and_the_healthy_one_fires(
    redis_url, r, caplog
):
    sync([declare("* * * * *", name="good")], get_settings(), r)
    write_bad_entries(r)
    cron = poller(r)
    for minute in range(3):  # three reads of the schedule, three ticks
        cron.poll(at(2027, 1, 1, 10, minute, 1))
    assert [job["class"] for job in pushed()] == ["t.record"] * 3
    for name, says in BAD.items():
        (line,) = [line for line in caplog.messages if line.startswith(f"periodic {name}:")]
        assert says in line and "not fired by djqueue" in line
    assert "Redis" not in caplog.text.replace("cron_job", "")  # no outage reported
    # Nothing was written for them: the wrong-type keys are as they were.
    assert r.get("cron_job:string") == "not a hash"
    assert r.get("cron_job:claims:enqueued") == "not a zset"
    assert r.type("cron_job:history:jid_history") == "hash"


def test_bad_entries_are_shown_as_bad_by_the_listing_the_pages_and_the_command_line(redis_url, r):
    from djqueue import report
    from djqueue.web.periodic import periodic_list, periodic_page

    sync([declare("* * * * *", name="good")], get_settings(), r)
    write_bad_entries(r)
    rows = {row.name: row for row in periodic_list().rows}
    assert rows["good"].error == "" and rows["good"].next_run
    assert rows["good"].status == "enabled" and rows["good"].actions[0].name == "disable"
    summary = periodic_list()
    # An entry whose only fault is a cron text djqueue does not read keeps its status.
    assert (summary.enabled, summary.disabled, summary.bad) == (2, 0, len(BAD) - 1)
    assert rows["english"].status == "enabled" and periodic_page("english").banner is None
    for name, says in BAD.items():
        assert says in rows[name].error, name
        assert rows[name].next_run == ""
        page = periodic_page(name)
        assert page is not None and says in page.row.error
        if name == "english":
            continue
        assert rows[name].status == "bad" and not rows[name].enabled
        assert [a.name for a in rows[name].actions] == ["delete"], name
        assert [a.name for a in page.actions] == ["delete"]
        labels = {f.label for f in page.fields}
        assert not labels & {"Declared in", "Catch up"}, name
        assert page.banner is not None and f"cron_job:{name} " in page.banner.error
        assert page.banner.error.endswith(": delete or fix the key")
    assert periodic_page("string").banner.error.startswith(
        "cron_job:string holds a string, not a hash"
    )
    assert rows["nocron"].cron == "—" and rows["string"].queue == "—"
    assert rows["string"].job_name == "—"
    assert "redis-cli GET cron_job:string," in periodic_page("string").banner.advice
    assert "redis-cli HGETALL cron_job:nocron," in periodic_page("nocron").banner.advice
    listing = report.periodic()
    table, bad = listing.split("\n\n")
    header, *lines = table.splitlines()
    status_at, cron_at, queue_at = (header.index(c) for c in ("status", "cron", "queue"))
    for line in lines:
        name = line.split()[0]
        assert ("(bad: see below)" in line) == (name != "good")
        shown = "enabled" if name in ("good", "english") else "bad "
        assert line[status_at:].startswith(shown), line
        cron = "(bad" if name == "nocron" else ("* * * * *" if name == "good" else "")
        assert line[cron_at - 1] == " " and line[cron_at:].startswith(cron), line
        if name == "string":  # no queue is made up for an entry that is not a hash
            assert line[queue_at:].startswith("- "), line
    for name, says in BAD.items():
        assert f"  {name}: " in bad and says in bad
    # Actions answer instead of failing; delete removes a bad entry whatever its keys hold.
    entry = PeriodicSet().find("string")
    assert entry.run_now() is None and entry.disable() is False
    assert PeriodicSet().find("claims").run_now() is None
    assert entry.delete() and r.exists("cron_job:string") == 0


def test_a_push_refused_by_redis_is_logged_once_and_claims_no_tick(redis_url, r, caplog):
    sync([declare("* * * * *", queue="blocked")], get_settings(), r)
    r.set("queue:blocked", "not a list")
    cron = poller(r)
    for minute in range(3):
        cron.poll(at(2027, 1, 1, 10, minute, 1))
    (line,) = [m for m in caplog.messages if m.startswith("periodic every: tick")]
    assert "queue:blocked is a string, not a list" in line
    # The refused ticks were not claimed (a claim without its push is a lost tick).
    assert not {"2027-01-01T10:01:00Z", "2027-01-01T10:02:00Z"} & set(
        r.zrange(Keys().cron_enqueued("every"), 0, -1)
    )
    r.delete("queue:blocked")
    cron.poll(at(2027, 1, 1, 10, 3, 1))
    assert len(pushed("blocked")) == 1


def test_a_declared_entry_of_the_wrong_type_is_written_again(redis_url, r, caplog):
    r.sadd("cron_jobs", "cron_job:every")
    r.set("cron_job:every", "oops")
    r.set("cron_job:every:enqueued", "oops")
    r.set("cron_job:every:jid_history", "oops")
    sync([declare("* * * * *")], get_settings(), r)
    assert r.hget("cron_job:every", "klass") == "t.record"
    for key in ("cron_job:every", "cron_job:every:enqueued", "cron_job:every:jid_history"):
        assert f"periodic every: {key} was a string; written again as declared" in caplog.text
    poller(r).poll(at(2027, 1, 1, 10, 0, 1))
    assert len(pushed()) == 1


def test_a_declared_entry_gone_bad_under_a_running_poller_is_repaired_at_its_next_read(
    redis_url, r, caplog
):
    declared = [declare("* * * * *")]
    sync(declared, get_settings(), r)
    cron = PeriodicPoller(get_settings(), r, declarations=declared)
    cron.poll(at(2027, 1, 1, 10, 0, 1))
    r.delete("cron_job:every")
    r.set("cron_job:every", "oops")
    cron.poll(at(2027, 1, 1, 10, 1, 1))
    assert r.hget("cron_job:every", "klass") == "t.record"
    assert "periodic every: not fired by djqueue: cron_job:every is a string" in caplog.text
    cron.poll(at(2027, 1, 1, 10, 2, 1))
    assert r.zrange(Keys().cron_enqueued("every"), -1, -1) == ["2027-01-01T10:02:00Z"]


def test_a_cron_jobs_key_of_the_wrong_type_is_reported_once_and_stops_nothing(redis_url, r, caplog):
    from djqueue import report
    from djqueue.web.periodic import periodic_list

    r.set("cron_jobs", "oops")
    declared = [declare("* * * * *")]
    cron = PeriodicPoller(get_settings(), r, declarations=declared)
    cron.declare()
    for minute in range(3):
        cron.poll(at(2027, 1, 1, 10, minute, 1))
    says = "cron_jobs is a string, not a set"
    assert sum(says in m for m in caplog.messages) == 1
    assert says in periodic_list().problem
    assert says in report.periodic()
    r.delete("cron_jobs")
    cron.declare()
    cron.poll(at(2027, 1, 1, 10, 3, 1))
    assert len(pushed()) == 1


# -- Redis's clock -------------------------------------------------------------------------------


def test_declaring_claims_the_tick_current_by_redis_clock_whatever_the_hosts(
    redis_url, r, monkeypatch
):
    real = time.time
    monkeypatch.setattr(time, "time", lambda: real() + 3600)  # this host runs an hour ahead
    sync([declare("* * * * *")], get_settings(), r)
    seconds, _ = r.time()
    ((_, claimed),) = r.zrange(Keys().cron_enqueued("every"), 0, -1, withscores=True)
    assert claimed <= seconds, "the tick of an hour ahead was claimed: it would never fire"
