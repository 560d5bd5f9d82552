"""Periodic jobs shared with a Ruby app's sidekiq-cron 2.3.1 on Sidekiq 7.3.10 (their public
sources in ``../shared/third_party``).

sidekiq-cron 2 keeps its schedule in namespaces (``cron_jobs:default``, ``cron_job:default:NAME``)
and, when its server starts, moves every entry of 1.8's ``cron_jobs`` there, leaving the old
hashes behind. djqueue follows the move (`djqueue.store.periodic_layout`): its API keeps listing
the entry, its poller claims ticks in the same sorted set as Ruby's, and a tick is pushed once.
"""

from __future__ import annotations

import json
import signal

import pytest

from djqueue.api import PeriodicSet
from djqueue.config import get_settings
from djqueue.periodic_cron import CronExpression, InvalidCron, parse
from djqueue.periodic_declaration import build
from djqueue.worker.periodic_sync import sync

from .sidekiq_support import (
    RUBY7_CRON2,
    SIDEKIQ7_CRON2,
    require_sidekiq7_cron2,
    ruby,
    sidekiq_process,
)
from .worker_support import wait_for

require_sidekiq7_cron2()


def claims(r, key: str) -> list[str]:
    """The ticks claimed in ``key`` (ISO times), oldest first."""
    return r.zrange(key, 0, -1)


def ticks_run(r) -> list[str]:
    """The jids ``p.tick`` ran, in order (tests/periodic_jobs.py)."""
    return [entry.split()[0] for entry in r.lrange("ticks", 0, -1)]


def stop(worker) -> None:
    """TERM a ``djqueue worker`` subprocess and wait for it to exit."""
    worker.send(signal.SIGTERM)
    assert worker.wait(30) == 0, worker.output()


@pytest.mark.slow
@pytest.mark.long
def test_after_sidekiq_cron_2_moves_djqueues_entry_it_is_listed_and_each_tick_runs_once(
    spawn, redis_url, r
):
    first = spawn(redis_url, "-r", "tests.periodic_jobs", "-c", "2")
    wait_for(lambda: len(ticks_run(r)) >= 2, timeout=15, what="djqueue firing p.tick")
    assert r.sismember("cron_jobs", "cron_job:p.tick")

    # The Sidekiq process serves only "ruby": what it pushes for p.tick waits in "default".
    with sidekiq_process(redis_url, "cron_app.rb", "ruby", sidekiq=SIDEKIQ7_CRON2):
        wait_for(lambda: r.exists("cron_jobs:default"), timeout=30, what="sidekiq-cron 2's move")
        # djqueue's API follows the move: the entry is still listed, as djqueue's own.
        assert [entry.name for entry in PeriodicSet().all()] == ["p.tick"]
        entry = PeriodicSet().find("p.tick")
        assert entry is not None and entry.enabled
        # The running worker writes its declaration again in the new layout.
        wait_for(
            lambda: r.hget("cron_job:default:p.tick", "declared_by") == "djqueue",
            timeout=15,
            what="djqueue writing its fields again",
        )
        assert PeriodicSet().find("p.tick").declared  # type: ignore[union-attr]
        stop(first)
        wait_for(lambda: r.llen("ruby:pushed") >= 2, timeout=15, what="Ruby alone pushing")
        # A djqueue worker starting after the Ruby deploy: both pollers on one schedule.
        second = spawn(redis_url, "-r", "tests.periodic_jobs", "-c", "2")
        ran_before = len(ticks_run(r))
        wait_for(lambda: len(ticks_run(r)) >= ran_before + 6, timeout=20, what="both running")
        stop(second)
    assert not r.exists("cron_jobs"), "djqueue wrote sidekiq-cron 1.8's set again"

    ran = ticks_run(r)
    waiting = [json.loads(job)["jid"] for job in r.lrange("queue:default", 0, -1)]
    pushed = ran + waiting
    assert len(set(pushed)) == len(pushed), "a job ran twice"
    assert set(r.lrange("ruby:pushed", 0, -1)) <= set(pushed)
    # Each push has its tick claimed, in one layout or the other, and no tick twice: the first
    # 1.8 claim is djqueue's declaration's own, the first 2.x one the move's (never pushed).
    before, after = (
        claims(r, "cron_job:p.tick:enqueued"),
        claims(r, "cron_job:default:p.tick:enqueued"),
    )
    fired = before[1:] + after[1:]
    assert len(set(fired)) == len(fired), "a tick was pushed by both sides"
    assert len(pushed) == len(fired)


def test_sidekiq_cron_2s_disable_and_enable_act_on_djqueues_entry(redis_url, r):
    declaration = build(name="nightly", cron="0 3 * * *", job="Nightly", catch_up=False)
    sync([declaration], get_settings(), r)
    # sidekiq-cron 2's API (its Cron tab's Disable button) on djqueue's entry, after its move.
    toggled = ruby(
        redis_url, "cron_toggle.rb", "nightly", "disable", "migrate", command=RUBY7_CRON2
    )
    assert toggled == "disabled"
    # The move kept sidekiq-cron's fields only: listed and disabled, not yet known as declared.
    entry = PeriodicSet().find("nightly")
    assert entry is not None and not entry.enabled and not entry.declared
    # djqueue writes its declaration again (a worker's start, or its poller seeing the move):
    # the operator's choice stays, in sidekiq-cron 2's layout, with djqueue's own fields back.
    sync([declaration], get_settings(), r)
    assert not r.exists("cron_jobs")
    entry = PeriodicSet().find("nightly")
    assert entry is not None and not entry.enabled and entry.declared and not entry.catch_up
    seen = json.loads(ruby(redis_url, "cron_inspect.rb", "nightly", command=RUBY7_CRON2))
    assert seen["found"] and seen["valid"] and seen["status"] == "disabled"
    assert seen["namespace"] == "default" and seen["all"] == ["nightly"]
    # Enabled from djqueue: Ruby reads it enabled.
    assert entry.enable()
    assert (
        json.loads(ruby(redis_url, "cron_inspect.rb", "nightly", command=RUBY7_CRON2))["status"]
        == "enabled"
    )
    # And from the Cron tab of its Web UI (its save writes ``source`` as "dynamic"): still
    # djqueue's own, and disabled for djqueue's poller too.
    tab = json.loads(ruby(redis_url, "cron_web.rb", "nightly", "disable", command=RUBY7_CRON2))
    assert tab == {"listed": True, "status": 302}
    entry = PeriodicSet().find("nightly")
    assert entry is not None and not entry.enabled and entry.declared and not entry.catch_up


#: Cron texts compared with sidekiq-cron's parser; the last ones are refused at declaration.
SHARED = [
    "*/5 * * * *",
    "0 9 * * 1-5",
    "0 0 L * *",
    "0 0 L * 5",
    "0 0 * * 5#3",
    "0 0 * * MON#2",
    "0 0 * * 7",
    "0 0 1-7 * 1",
    "0 0 1 JAN-MAR *",
    "0 0 */2 * *",
    "0 0 * * */2",
    "*/10 * * * * *",
    "0 9 * * * Europe/Paris",
    "0 2 * * * America/New_York",
]
REFUSED = ["0 0 LW * *", "0 0 * * 5L", "0 0 * * 1L", "0 0 */2 * 1", "0 0 1 * */2"]


def test_what_djqueue_accepts_sidekiq_crons_parser_reads_alike_and_what_it_refuses_it_does_not(
    redis_url,
):
    start, count = 1767225600, 8  # 2026-01-01, UTC
    fugit = json.loads(
        ruby(
            redis_url,
            "fugit_next.rb",
            str(start),
            str(count),
            stdin="\n".join(SHARED + REFUSED),
            command=RUBY7_CRON2,
        )
    )
    for text in SHARED:
        periodic = build(name="shared", cron=text, job="Report")
        assert fugit[text] == [int(t) for t in parse(periodic.cron).upcoming(start, count)], text
    for text in REFUSED:
        cronsim = [int(t) for t in CronExpression(text).upcoming(start, count)]
        assert fugit[text] != cronsim, text
        with pytest.raises(InvalidCron, match="sidekiq-cron"):
            build(name="shared", cron=text, job="Report")


def test_a_bad_entry_in_sidekiq_cron_2s_layout_is_named_by_its_own_keys(redis_url, r):
    sync([build(name="nightly", cron="0 3 * * *", job="Nightly")], get_settings(), r)
    ruby(redis_url, "cron_toggle.rb", "nightly", "enable", "migrate", command=RUBY7_CRON2)
    r.delete("cron_job:default:nightly:jid_history")
    r.set("cron_job:default:nightly:jid_history", "oops")
    entry = PeriodicSet().find("nightly")
    assert entry is not None and entry.key == "cron_job:default:nightly"
    assert entry.error == "cron_job:default:nightly:jid_history is a string, not a list"


def test_a_tick_fired_as_sidekiq_cron_2_moves_the_entry_is_claimed_in_its_keys(r):
    """The race a worker met while a Ruby server started: it read 1.8's layout, then the
    sidekiq-cron 2 server made its set, and the tick was claimed in 1.8's keys while Ruby's
    poller claimed it in its own: pushed twice. The fire script reads the layout again."""
    from djqueue.store import Keys
    from djqueue.store.periodic import FIRED, PeriodicStore
    from djqueue.store.periodic_layout import layouts

    sync([build(name="beat", cron="* * * * *", job="Beat")], get_settings(), r)
    old, new = layouts("")
    assert r.sismember(old.jobs, old.member("beat"))
    # sidekiq-cron 2's move has begun: its set and hash exist, 1.8's set still names the job.
    r.hset(new.job("beat"), mapping=r.hgetall(old.job("beat")))
    r.sadd(new.jobs, new.member("beat"))
    claimed_before = claims(r, old.enqueued("beat"))
    store = PeriodicStore(r, Keys())
    reads = iter([old])  # the worker's read of the layout, made before the move began
    store.layout = lambda: next(reads, new)  # type: ignore[method-assign]
    iso = "2026-11-26T10:00:00Z"
    payload = json.dumps({"class": "Beat", "args": [], "jid": "a" * 24, "queue": "default"})
    fired = store.fire("beat", "default", payload, "a" * 24, "x", (1795687200.0, iso))
    assert fired == FIRED
    assert claims(r, old.enqueued("beat")) == claimed_before
    assert iso in claims(r, new.enqueued("beat"))
    # Ruby's poller, claiming the same tick in its keys, finds it taken: pushed once.
    assert r.zadd(new.enqueued("beat"), {iso: 1795687200.0}, nx=True) == 0
    assert r.llen("queue:default") == 1
