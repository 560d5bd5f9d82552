"""The runtime beside the current Sidekiq (7.3.10, from ``../shared/third_party``): a job its
client pushes with ``retry_for`` stops retrying when the window is over, and its
``Sidekiq::ProcessSet`` shows a djqueue process as it shows its own."""

from __future__ import annotations

import json
import os
import subprocess

from . import jobs_for_worker as jobs
from .sidekiq_support import THIRD_PARTY, require_sidekiq7, ruby7
from .worker_support import wait_for

require_sidekiq7()

PUSH = 'puts Sidekiq::Client.push("class" => ARGV[0], "args" => [ARGV[1]], "retry_for" => 3)'
DEAD = 'require "sidekiq/api"; puts JSON.generate(Sidekiq::DeadSet.new.map(&:item))'


def test_a_job_pushed_with_retry_for_is_dead_at_its_first_failure_after_the_window(
    worker, redis_url, r
):
    """Sidekiq 7.1+'s rule: retried while ``failed_at + retry_for`` is ahead, then dead, though
    ``retry: true`` would allow 25 retries (the job retries each second). The payload's window
    (3 s) wins over the registered job's (2 s)."""
    worker()
    jid = ruby7(redis_url, PUSH, "t.windowed", "from ruby")
    wait_for(lambda: r.zcard("dead") == 1, timeout=30)
    (dead,) = json.loads(ruby7(redis_url, DEAD))
    assert dead["jid"] == jid and dead["retry_for"] == 3 and dead["retry"] is True
    assert dead["retried_at"] >= dead["failed_at"] + 3
    assert 2 <= dead["retry_count"] < 25
    assert r.zcard("retry") == 0


def test_a_djqueue_job_with_the_retry_for_option_is_dead_when_its_window_is_over(worker, r):
    """``retry_for=2`` with ``retry=1``: the window, not the count, ends the retries."""
    worker()
    jid = jobs.windowed.perform_later("mine")
    wait_for(lambda: r.zcard("dead") == 1, timeout=30)
    (raw,) = r.zrange("dead", 0, -1)
    dead = json.loads(raw)
    assert dead["jid"] == jid and dead["retry_for"] == 2 and dead["retry"] == 1
    assert dead["retry_count"] >= 2 and dead["retried_at"] >= dead["failed_at"] + 2
    assert r.zcard("retry") == 0


PROCESSES = """require "sidekiq/api"
puts JSON.generate(Sidekiq::ProcessSet.new.map { |p|
  {"identity" => p.identity, "concurrency" => p["concurrency"], "queues" => p.queues,
   "weights" => p.weights, "busy" => p["busy"], "tag" => p.tag, "labels" => p.labels,
   "stopping" => p.stopping?, "embedded" => p.embedded?, "version" => p.version,
   "started_at" => p["started_at"], "total" => Sidekiq::ProcessSet.new.total_concurrency}
})"""


def test_sidekiq_7_process_set_and_sidekiqmon_show_a_djqueue_process(worker, redis_url, r):
    jobs.hold.perform_later("held", 1)  # runs until released: busy while Ruby reads
    w = worker(
        concurrency=3, tag="compat", labels=("blue",), queues=(("critical", 2), ("default", 1))
    )
    wait_for(lambda: r.hget(w.identity, "busy") == "1")
    (seen,) = json.loads(ruby7(redis_url, PROCESSES))
    assert seen["identity"] == w.identity and seen["concurrency"] == 3 and seen["total"] == 3
    assert seen["queues"] == ["critical", "default"]
    assert seen["weights"] == [{"critical": 2, "default": 1}]
    assert seen["busy"] == 1 and seen["tag"] == "compat" and seen["labels"] == ["blue"]
    assert seen["stopping"] is False and seen["embedded"] is False
    assert seen["version"].startswith("djqueue ") and seen["started_at"] > 0
    shown = subprocess.run(
        [str(THIRD_PARTY / "bin" / "sidekiqmon7"), "processes"],
        env={**os.environ, "REDIS_URL": redis_url},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    assert f"{w.identity} [compat] [blue]" in shown
    assert "Threads: 3 (1 busy)" in shown and "Queues: critical: 2, default: 1" in shown
    r.set("release", "1")
