"""The runtime seen from Ruby: Sidekiq 6.4's client pushes a job and djqueue runs it;
Sidekiq::API reads djqueue's process, busy work, retries and stats; a quiet sent through the API
reaches the djqueue process (Debian's ruby-sidekiq)."""

from __future__ import annotations

import json

from . import jobs_for_worker as jobs
from .sidekiq_support import require_sidekiq, ruby
from .worker_support import wait_for

require_sidekiq()


def test_a_job_pushed_by_sidekiqs_client_runs(worker, redis_url, r):
    worker(queues=(("critical", 0), ("default", 0)))
    jid = ruby(redis_url, "push.rb", "t.record", "critical", '["from ruby", 2]')
    assert wait_for(lambda: r.lrange("from ruby", 0, -1)) == ["[2]"]
    assert len(jid) == 24


def test_sidekiq_api_reads_process_busy_work_retries_and_stats(worker, redis_url, r):
    jobs.fail.perform_later("boom")
    jid = jobs.hold.perform_later("held", 1)  # runs until released: busy while Ruby reads
    w = worker(concurrency=3, tag="compat")
    wait_for(lambda: r.zcard("retry") == 1 and r.hget(w.identity, "busy") == "1")
    wait_for(lambda: r.get("stat:processed") == "1")
    seen = json.loads(ruby(redis_url, "inspect.rb"))
    (process,) = seen["processes"]
    assert process["identity"] == w.identity
    assert process["concurrency"] == 3 and process["queues"] == ["default"]
    assert process["tag"] == "compat" and process["busy"] == 1
    assert process["quiet"] == "false"
    (work,) = seen["work"]
    assert work["process"] == w.identity
    assert work["jid"] == jid and work["class"] == "t.hold" and work["queue"] == "default"
    (failed,) = seen["retries"]
    assert failed["class"] == "t.fail" and failed["error_class"] == "ValueError"
    assert failed["error_message"] == "boom" and failed["retry_count"] == 0
    assert failed["at"] >= failed["failed_at"] + 15
    # The traceback kept by default, decoded by Sidekiq's own API: innermost frame first.
    assert failed["error_backtrace"][0].endswith(":in `fail'")
    assert seen["processed"] == 1 and seen["failed"] == 1
    r.set("release", "1")


def test_quiet_from_sidekiqs_api_reaches_the_process(worker, redis_url, r):
    w = worker()
    ruby(redis_url, "quiet.rb")
    wait_for(lambda: r.hget(w.identity, "quiet") == "true")
    assert w.launcher.manager.quieting.is_set()
