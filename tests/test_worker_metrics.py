"""Per-job metrics: real workers count per class and queue in memory and write them with the
heartbeat in Sidekiq 8's layout; the keys, the API's read and Sidekiq 7.3.10's own result
objects agree on the numbers."""

from __future__ import annotations

import json
import math
import re
import time
from typing import Any

import pytest

import djqueue
from djqueue.api.metrics import job_metrics
from djqueue.store.keys import METRICS_MINUTE_TTL, METRICS_TEN_MINUTE_TTL
from djqueue.store.metrics import HISTOGRAM_SIZE, percentile

from . import jobs_for_worker as jobs
from .sidekiq_support import THIRD_PARTY, require_sidekiq7, ruby, ruby7
from .worker_support import wait_for

MINUTE = re.compile(r"^j\|(\d{6})\|(\d{1,2}):(\d{2})$")
TEN_MINUTES = re.compile(r"^j\|(\d{6})\|(\d{1,2}):(\d)$")
SHOWN = "billing.tasks.SendInvoice"


def push_raw(r, klass: str, display: str | None = None) -> None:
    """A job as any client may write it (``display_class`` is what UIs show)."""
    payload = {
        "class": klass,
        "args": ["metrics", "x"],
        "jid": f"{time.time_ns():024x}"[-24:],
        "queue": "default",
        "retry": False,
        "created_at": time.time(),
        "enqueued_at": time.time(),
    }
    if display:
        payload["display_class"] = display
    r.lpush("queue:default", json.dumps(payload))


def sums(r, pattern: re.Pattern[str]) -> dict[str, int]:
    """Every field of every Sidekiq metrics hash whose name matches ``pattern``, summed."""
    found: dict[str, int] = {}
    for key in r.scan_iter("j|*"):
        if pattern.match(key):
            for field, value in r.hgetall(key).items():
                found[field] = found.get(field, 0) + int(value)
    return found


def histogram_sum(r, name: str) -> list[int]:
    total = [0] * HISTOGRAM_SIZE
    for key in r.scan_iter(f"h|{name}-*"):
        fetch = [p for i in range(HISTOGRAM_SIZE) for p in ("GET", "u16", f"#{i}")]
        for i, value in enumerate(r.execute_command("BITFIELD_RO", key, *fetch)):
            total[i] += value
        assert 0 < r.ttl(key) <= METRICS_MINUTE_TTL
    return total


N, M = 5, 3


def run_jobs(worker, r, **settings) -> None:
    """N jobs of A (t.record), M failures of B (t.fail_quietly, not retried), one job shown
    as `SHOWN`, on two workers; waits until every job has ended and been flushed."""
    worker(**settings)
    worker(**settings)
    for i in range(N):
        jobs.record.perform_later("metrics", i)
    for i in range(M):
        jobs.fail_quietly.perform_later(f"boom {i}")
    push_raw(r, "t.record", SHOWN)
    wait_for(lambda: int(r.get("stat:processed") or 0) == N + M + 1, what="all jobs counted")


def test_counts_per_class_and_queue_in_sidekiq_8s_keys_and_the_api_agree(worker, r):
    run_jobs(worker, r)
    expected = {
        "t.record|p": N,
        "t.fail_quietly|p": M,
        "t.fail_quietly|f": M,
        f"{SHOWN}|p": 1,
    }

    def flushed():
        minute = sums(r, MINUTE)
        return minute if all(minute.get(k) == v for k, v in expected.items()) else None

    minute = wait_for(flushed, what="metrics flushed")
    # The one-minute and the ten-minute buckets hold the same counts.
    assert sums(r, TEN_MINUTES) == minute
    # Only successes are timed (as in Sidekiq): no ms field for a class that only failed.
    assert "t.fail_quietly|ms" not in minute and "t.record|ms" in minute
    assert "t.record|f" not in minute
    today = time.strftime("%y%m%d", time.gmtime())
    for key in r.scan_iter("j|*"):
        assert MINUTE.match(key) or TEN_MINUTES.match(key), key
        assert key.split("|")[1] in (today, time.strftime("%y%m%d", time.gmtime(time.time() - 60)))
        ttl = METRICS_MINUTE_TTL if MINUTE.match(key) else METRICS_TEN_MINUTE_TTL
        assert ttl - 60 < r.ttl(key) <= ttl
    grams = histogram_sum(r, "t.record")
    assert sum(grams) == N and sum(histogram_sum(r, SHOWN)) == 1
    assert sum(histogram_sum(r, "t.fail_quietly")) == 0

    report = job_metrics(minutes=60)
    a, b, shown = report.job("t.record"), report.job("t.fail_quietly"), report.job(SHOWN)
    assert a is not None and b is not None and shown is not None
    assert (a.processed, a.failed, a.total_ms) == (N, 0, minute["t.record|ms"])
    assert (b.processed, b.failed, b.failure_rate) == (M, M, 1.0)
    assert b.mean_ms is None and b.p50_ms is None
    assert shown.processed == 1 and shown.failed == 0
    assert list(a.histogram) == grams
    assert a.mean_ms == minute["t.record|ms"] / N
    assert (a.p50_ms, a.p99_ms) == (percentile(grams, 0.5), percentile(grams, 0.99))
    assert a.latency_ms is not None and a.latency_ms >= 0
    assert sum(p for _, p, _, _ in a.series) == N
    (queue,) = report.queues
    assert (queue.name, queue.processed, queue.failed) == ("default", N + M + 1, M)
    assert queue.latency_ms is not None
    assert report.ends_at - report.starts_at == 3600 and report.stride == 60
    # Ranges in hours read the ten-minute buckets: the same counts, without histograms.
    longer = job_metrics(hours=2)
    assert longer.stride == 600
    assert [(j.name, j.processed, j.failed, j.total_ms) for j in longer.jobs] == [
        (j.name, j.processed, j.failed, j.total_ms) for j in report.jobs
    ]
    assert longer.job("t.record").histogram == ()  # type: ignore[union-attr]
    assert [j.name for j in job_metrics(name="FAIL").jobs] == ["t.fail_quietly"]


def test_metrics_off_writes_none_and_the_counters_still_count(worker, r):
    run_jobs(worker, r, metrics=False)
    time.sleep(0.7)  # two more beats: nothing is written late either
    assert list(r.scan_iter("j|*")) == [] and list(r.scan_iter("h|*")) == []
    assert list(r.scan_iter("djqueue:metrics*")) == []
    assert job_metrics().jobs == ()


def test_a_wrong_range_is_refused_with_its_name(redis_url):
    with pytest.raises(ValueError, match="minutes must be 1 or more"):
        job_metrics(minutes=0)
    with pytest.raises(ValueError, match="minutes or hours"):
        job_metrics(minutes=5, hours=1)


def test_percentiles_are_the_bounds_of_sidekiqs_buckets():
    histogram = [0] * HISTOGRAM_SIZE
    assert percentile(histogram, 0.5) is None
    histogram[0], histogram[3], histogram[-1] = 90, 9, 1
    assert percentile(histogram, 0.5) == 20.0
    assert percentile(histogram, 0.95) == 65.0
    assert percentile(histogram, 0.99) == 65.0
    assert percentile(histogram, 1.0) == math.inf


def test_the_metrics_flag_takes_on_or_off(redis_url):
    from djqueue.worker.cli import build_parser  # noqa: PLC0415 - the one test that needs it

    parser = build_parser()
    assert parser.parse_args(["worker", "--metrics", "off"]).metrics is False
    with pytest.raises(SystemExit):
        parser.parse_args(["worker", "--metrics", "maybe"])
    assert djqueue.get_settings().metrics is True


RUBY_READ = """require "sidekiq/metrics/query"
# Sidekiq 7.3.10's own result object, fed every one-minute bucket the way its Query#top_jobs
# feeds it (field "CLASS|METRIC", split on "|"); only the bucket key names differ (Sidekiq 8's).
result = Sidekiq::Metrics::Query::Result.new
now = Time.now.utc
Sidekiq.redis do |conn|
  conn.scan(match: "j|*").select { |k| k =~ /\\Aj\\|\\d{6}\\|\\d+:\\d\\d\\z/ }.each do |key|
    conn.hgetall(key).each do |k, v|
      kls, metric = k.split("|")
      result.job_results[kls].add_metric metric, now, v.to_i
    end
  end
end
gram = Sidekiq::Metrics::Histogram.new(ARGV[0])
hist = Array.new(gram.buckets.size, 0)
Sidekiq.redis do |conn|
  conn.scan(match: "h|#{ARGV[0]}-*").each do |key|
    conn.call("BITFIELD_RO", key, *Sidekiq::Metrics::Histogram::FETCH).each_with_index do |v, i|
      hist[i] += v
    end
  end
end
puts JSON.generate(result.job_results.to_h { |k, jr| [k, jr.totals.merge("avg" => jr.total_avg)] }
  .merge("_hist" => hist, "_labels" => Sidekiq::Metrics::Histogram::LABELS))"""


def test_sidekiq_7_result_objects_read_the_same_numbers(worker, redis_url, r):
    require_sidekiq7()
    run_jobs(worker, r)
    wait_for(lambda: sums(r, MINUTE).get(f"{SHOWN}|p") == 1, what="metrics flushed")
    seen = json.loads(ruby7(redis_url, RUBY_READ, "t.record"))
    report = job_metrics()
    for figures in report.jobs:
        ruby = seen[figures.name]
        assert ruby["p"] == figures.processed and ruby.get("f", 0) == figures.failed
        assert ruby.get("ms", 0) == figures.total_ms
        assert ruby["avg"] == (figures.mean_ms or 0)
    assert seen["_hist"] == list(report.job("t.record").histogram)  # type: ignore[union-attr]
    assert len(seen["_labels"]) == HISTOGRAM_SIZE


def test_counts_are_written_once_when_redis_has_forgotten_the_beat_script(worker, r):
    """After SCRIPT FLUSH (a Redis restart) the beat's pipeline meets NOSCRIPT: the metrics
    written in that pipeline stand, and the beat alone runs again."""
    run_jobs(worker, r)
    wait_for(lambda: sums(r, MINUTE).get(f"{SHOWN}|p") == 1, what="metrics flushed")
    r.script_flush()
    for i in range(N):
        jobs.record.perform_later("metrics", i)
    wait_for(lambda: int(r.get("stat:processed") or 0) == 2 * N + M + 1, what="all counted")
    wait_for(lambda: sums(r, MINUTE).get("t.record|p") == 2 * N, what="flushed again")
    time.sleep(0.7)  # two more beats
    assert sums(r, MINUTE)["t.record|p"] == 2 * N == sums(r, TEN_MINUTES)["t.record|p"]


R, D, X = 3, 2, 2


def run_failures(worker, r) -> None:
    """On two workers: R failures of t.fail retried, D sent to the dead set, X discarded by
    t.discarded's retry_in hook, one t.fail_quietly dropped (retry: false), N of t.record;
    waits until every failure's fate is counted and flushed."""
    worker()
    worker()
    for i in range(R):
        jobs.fail.set(retry=3).perform_later(f"again {i}")
    for i in range(D):
        jobs.fail.set(retry=0).perform_later(f"dead {i}")
    for i in range(X):
        jobs.discarded.perform_later(f"gone {i}")
    jobs.fail_quietly.perform_later("dropped")
    for i in range(N):
        jobs.record.perform_later("metrics", i)

    def flushed() -> bool:
        queue = job_metrics().queue("default")
        fates = (R, D, X + 1, R + D + X + 1 + N)
        return (
            queue is not None
            and (
                queue.retried,
                queue.dead,
                queue.discarded,
                queue.processed,
            )
            == fates
        )

    # Both workers' beats: the fates and every job run (the t.record ones included).
    wait_for(flushed, what="every failure's fate counted and every job flushed")


def test_retried_dead_and_discarded_per_class_and_queue(worker, r):
    run_failures(worker, r)
    # Each fate happened: the retries wait in the retry set, the dead in the dead set.
    assert (r.zcard("retry"), r.zcard("dead")) == (R, D)
    report = job_metrics()
    fail, gone, dropped = (
        report.job("t.fail"),
        report.job("t.discarded"),
        report.job("t.fail_quietly"),
    )
    assert fail is not None and gone is not None and dropped is not None
    assert (fail.processed, fail.failed, fail.retried, fail.dead, fail.discarded) == (
        R + D,
        R + D,
        R,
        D,
        0,
    )
    assert (gone.processed, gone.failed, gone.retried, gone.dead, gone.discarded) == (X, X, 0, 0, X)
    assert (dropped.failed, dropped.retried, dropped.dead, dropped.discarded) == (1, 0, 0, 1)
    record = report.job("t.record")
    assert record is not None and (record.retried, record.dead, record.discarded) == (0, 0, 0)
    (queue,) = report.queues
    assert (queue.processed, queue.failed) == (R + D + X + 1 + N, R + D + X + 1)
    # In Sidekiq's hash, beside its own fields: CLASS|r, CLASS|d, CLASS|x; none for a zero.
    minute = sums(r, MINUTE)
    assert (minute["t.fail|r"], minute["t.fail|d"], minute["t.discarded|x"]) == (R, D, X)
    assert minute["t.fail_quietly|x"] == 1
    assert "t.fail|x" not in minute and "t.record|r" not in minute
    assert sums(r, TEN_MINUTES) == minute
    longer = job_metrics(hours=1).job("t.fail")
    assert longer is not None and (longer.retried, longer.dead) == (R, D)


def sidekiq7_page(redis_url: str, path: str) -> dict[str, Any]:
    """One page of Sidekiq 7.3.10's Web UI: its status and body (the last line printed; its
    client logs its connection first)."""
    out = ruby(redis_url, "web_page.rb", path, command=str(THIRD_PARTY / "bin" / "ruby7"))
    return json.loads(out.splitlines()[-1])


def test_sidekiq_7_web_ui_renders_metrics_holding_djqueues_extra_fields(worker, redis_url, r):
    """Sidekiq 7.3.10's Metrics tab and a job's metrics page, on hashes holding what djqueue
    writes (``|r``, ``|d``, ``|x`` beside ``|p``, ``|f``, ``|ms``) under Sidekiq 7's key names
    (``j|YYYYMMDD|H:M``; Sidekiq 8 renamed them, and needs a newer Ruby than this machine's)."""
    require_sidekiq7()
    run_failures(worker, r)
    now = time.gmtime()
    sidekiq7 = f"j|{time.strftime('%Y%m%d', now)}|{now.tm_hour}:{now.tm_min}"
    for key in r.scan_iter("j|*"):
        if MINUTE.match(key):
            for field, value in r.hgetall(key).items():
                r.hincrby(sidekiq7, field, int(value))
    assert r.hget(sidekiq7, "t.fail|r") == str(R)
    tab = sidekiq7_page(redis_url, "/metrics")
    assert tab["status"] == 200, tab["body"][:2000]
    for name in ("t.fail", "t.discarded", "t.fail_quietly", "t.record"):
        assert f">{name}</a>" in tab["body"], name
    # t.record's row: N successes, 0 failures (the columns Sidekiq shows).
    row = tab["body"][tab["body"].index(">t.record</a>") :].split("</tr>")[0]
    assert re.findall(r'<td class="num"><span[^>]*>([^<]*)<', row)[:2] == [str(N), "0"], row
    job = sidekiq7_page(redis_url, "/metrics/t.fail")
    assert job["status"] == 200, job["body"][:2000]
    assert "t.fail" in job["body"]
