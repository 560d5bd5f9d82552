"""Periodic jobs shared with a Ruby app's sidekiq-cron 1.8 (Debian's ruby-sidekiq-cron).

Both sides keep one schedule in sidekiq-cron's layout and both pollers fire it: a schedule
loaded by Ruby fires in djqueue, djqueue's fires in Sidekiq, and with both pollers running each
tick is pushed once, because both claim a tick with the same ZADD of the same member
(``cron_job:NAME:enqueued``) before pushing. sidekiq-cron's own API reads, disables and
enables djqueue's entries, and each side's disable stops the other side's poller.

Telling the pushers apart: the two sides' payloads carry the same fields (retry, queue, class,
args, jid, created_at, enqueued_at; Ruby puts args before class when it knows the class, which
is no mark to rely on), so the Sidekiq app here tags its own pushes with a client middleware
(``pushed_by``, and the jid in ``ruby:pushed``; tests/ruby/cron_app.rb).

What the runs show of sidekiq-cron's timing: its poller wakes every 0.5-1.5 s and names the
latest tick as the one strictly before the current second (Fugit's ``previous_time``), so it
pushes a tick one to two seconds late, while djqueue's poller wakes at the tick. With both
running, djqueue's poller wins nearly every tick and Ruby's finds it claimed (or already run,
by ``last_enqueue_time``); Ruby's pushes are seen while no djqueue worker runs.
"""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import pytest

from djqueue.api import PeriodicSet
from djqueue.config import get_settings
from djqueue.periodic_cron import CronExpression
from djqueue.periodic_declaration import build
from djqueue.worker.periodic_poller import PeriodicPoller
from djqueue.worker.periodic_sync import sync

from .sidekiq_support import require_sidekiq_cron, ruby, sidekiq_process
from .worker_support import wait_for

require_sidekiq_cron()
pytestmark = [pytest.mark.slow, pytest.mark.long]

EVERY_SECOND = "* * * * * *"
#: A schedule that never fires during a test: keeps tests.periodic_jobs' own entry quiet.
NEVER_HERE = "0 0 1 1 *"


def claims(r, name: str) -> list[str]:
    """The ticks claimed for ``name`` (ISO times), oldest first."""
    return r.zrange(f"cron_job:{name}:enqueued", 0, -1)


def ticks_run(r) -> list[str]:
    """The jids ``p.tick`` ran, in order (tests/periodic_jobs.py)."""
    return [entry.split()[0] for entry in r.lrange("ticks", 0, -1)]


def stop(worker) -> None:
    """TERM a ``djqueue worker`` subprocess and wait for it to exit."""
    worker.send(signal.SIGTERM)
    assert worker.wait(30) == 0, worker.output()


def test_a_schedule_loaded_by_ruby_fires_in_djqueue_each_tick_once(
    spawn, redis_url, r, monkeypatch
):
    monkeypatch.setenv("DJQ_TEST_CRON", NEVER_HERE)
    errors = ruby(redis_url, "cron_load.rb", "ruby-tick", EVERY_SECOND, "p.tick", "default")
    assert json.loads(errors) == {}
    # sidekiq-cron's save claims the tick before it, so that loading never fires at once.
    loaded = set(claims(r, "ruby-tick"))

    # The Sidekiq process serves only "ruby": what it pushes for p.tick waits in "default".
    with sidekiq_process(redis_url, "cron_app.rb", "ruby"):
        wait_for(lambda: r.llen("ruby:pushed") >= 2, timeout=15, what="Ruby alone pushing")
        worker = spawn(redis_url, "-r", "tests.periodic_jobs", "-c", "2")
        wait_for(lambda: len(ticks_run(r)) >= 2, timeout=15, what="djqueue running the ticks")
        # Both pollers on the same schedule for a while.
        time.sleep(6)
    stop(worker)

    pushed_by_ruby = set(r.lrange("ruby:pushed", 0, -1))
    ran = ticks_run(r)
    waiting = [json.loads(job)["jid"] for job in r.lrange("queue:default", 0, -1)]
    pushed = ran + waiting
    assert len(set(pushed)) == len(pushed), "a job ran twice"
    assert pushed_by_ruby <= set(pushed)
    pushed_by_djqueue = set(pushed) - pushed_by_ruby
    assert len(pushed_by_ruby) >= 2 and len(pushed_by_djqueue) >= 5
    # One push per tick claimed, whichever side claimed it.
    fired = [tick for tick in claims(r, "ruby-tick") if tick not in loaded]
    assert len(fired) == len(pushed)
    # sidekiq-cron's history holds the last ten pushes, whichever side pushed them.
    history = json.loads(ruby(redis_url, "cron_inspect.rb", "ruby-tick"))["jid_history"]
    assert len(history) == min(10, len(pushed))
    assert {entry["jid"] for entry in history} <= set(pushed)


def test_djqueues_schedule_fires_in_sidekiq_each_tick_once_and_its_disable_stops_ruby(
    spawn, redis_url, r, tmp_path: Path
):
    settings = tmp_path / "cron_settings.py"
    settings.write_text(
        "import djqueue\n"
        "djqueue.configure(periodic={'ruby-recorder': {'cron': '* * * * * *', "
        "'class': 'CronRecorder', 'queue': 'ruby', 'args': [7]}})\n"
    )
    worker = spawn(redis_url, "-r", str(settings), "-c", "2")
    # djqueue alone: its pushes wait in "ruby" for Sidekiq.
    wait_for(lambda: r.llen("queue:ruby") >= 2, timeout=15, what="djqueue pushing")
    with sidekiq_process(redis_url, "cron_app.rb", "ruby"):
        wait_for(lambda: r.llen("ruby:ran") >= 4, timeout=15, what="Sidekiq running them")
        time.sleep(3)
        stop(worker)
        # Ruby's poller alone keeps the schedule going.
        wait_for(lambda: r.llen("ruby:pushed") >= 2, timeout=15, what="Ruby taking over")
        # Disabled through djqueue's API: sidekiq-cron's poller pushes no more.
        entry = PeriodicSet().find("ruby-recorder")
        assert entry is not None and entry.declared
        assert entry.disable()
        before = r.zcard("cron_job:ruby-recorder:enqueued")
        pushed_before = r.llen("ruby:pushed")
        time.sleep(3)
        assert r.llen("ruby:pushed") == pushed_before
        assert r.zcard("cron_job:ruby-recorder:enqueued") == before
        wait_for(lambda: r.llen("ruby:ran") >= before - 1, what="Sidekiq running every push")

    ran = [json.loads(job) for job in r.lrange("ruby:ran", 0, -1)]
    jids = [job["jid"] for job in ran]
    assert len(set(jids)) == len(jids), "a job ran twice"
    assert all(job["class"] == "CronRecorder" and job["args"] == [7] for job in ran)
    from_ruby = [job for job in ran if job.get("pushed_by") == "sidekiq-cron"]
    assert len(from_ruby) >= 2 and len(ran) - len(from_ruby) >= 4
    # One push per tick claimed; the first claim is the declaration's own (never fired).
    assert len(ran) == before - 1


def test_sidekiq_crons_api_reads_djqueues_entry_and_its_disable_stops_djqueue(spawn, redis_url, r):
    worker = spawn(redis_url, "-r", "tests.periodic_jobs", "-c", "2")
    wait_for(lambda: len(ticks_run(r)) >= 2, timeout=15, what="djqueue firing p.tick")

    seen = json.loads(ruby(redis_url, "cron_inspect.rb", "p.tick"))
    assert seen["found"] and seen["valid"] and seen["errors"] == []
    assert seen["all"] == ["p.tick"]
    assert seen["cron"] == EVERY_SECOND and seen["klass"] == "p.tick"
    assert seen["status"] == "enabled" and seen["args"] == []
    assert seen["message"]["queue"] == "default" and seen["message"]["class"] == "p.tick"
    assert abs(seen["last_enqueue_time"] - time.time()) < 3
    assert seen["jid_history"][0]["jid"] in ticks_run(r)

    # Disabled from Ruby (Job#disable! saves the whole entry again): djqueue fires no more.
    assert ruby(redis_url, "cron_toggle.rb", "p.tick", "disable") == "disabled"
    time.sleep(1.2)  # a push already past its claim may still run
    stopped_at = len(ticks_run(r))
    time.sleep(3)
    assert len(ticks_run(r)) == stopped_at
    entry = PeriodicSet().find("p.tick")
    assert entry is not None and not entry.enabled
    # Ruby's save kept djqueue's own fields, and its last run reads back.
    assert entry.declared and entry.last_run is not None

    # Enabled again from Ruby: djqueue fires at the next tick.
    assert ruby(redis_url, "cron_toggle.rb", "p.tick", "enable") == "enabled"
    wait_for(lambda: len(ticks_run(r)) >= stopped_at + 2, timeout=10, what="firing again")
    stop(worker)
    assert len(set(ticks_run(r))) == len(ticks_run(r))


def test_sidekiq_crons_web_tab_lists_djqueues_entry_and_its_buttons_act_on_it(redis_url, r):
    sync([build(name="nightly", cron="0 3 * * *", job="Nightly")], get_settings(), r)
    tab = json.loads(ruby(redis_url, "cron_web.rb", "nightly", "disable"))
    assert tab == {"listed": True, "status": 302}
    entry = PeriodicSet().find("nightly")
    assert entry is not None and not entry.enabled and entry.declared
    assert json.loads(ruby(redis_url, "cron_web.rb", "nightly", "enable"))["status"] == 302
    assert PeriodicSet().find("nightly").enabled  # type: ignore[union-attr]


# -- one tick decided by both pollers at a chosen time -----------------------------------------

HOURLY = "0 * * * *"


def next_hour() -> float:
    return CronExpression(HOURLY).next(time.time())


def test_a_tick_ruby_pushed_is_not_pushed_again_by_djqueue(redis_url, r):
    assert json.loads(ruby(redis_url, "cron_load.rb", "hourly", HOURLY, "p.tick", "default")) == {}
    tick = next_hour()
    assert ruby(redis_url, "cron_tick.rb", "hourly", repr(tick + 30)) == "pushed"
    PeriodicPoller(get_settings(), r).poll(tick + 30)
    assert r.llen("queue:default") == 1


def test_a_ruby_entrys_tick_missed_by_more_than_a_minute_is_not_fired_by_djqueue(redis_url, r):
    assert json.loads(ruby(redis_url, "cron_load.rb", "hourly", HOURLY, "p.tick", "default")) == {}
    late = next_hour() + 300
    # sidekiq-cron's own rule: five minutes after the tick, it is not pushed.
    assert ruby(redis_url, "cron_tick.rb", "hourly", repr(late)) == "skipped"
    PeriodicPoller(get_settings(), r).poll(late)
    assert r.llen("queue:default") == 0
