"""Per-job metrics in Redis, in Sidekiq 8's layout, and the one read of them.

The worker counts in memory (`djqueue.worker.metrics`) and the heartbeat hands the counts over
once a beat; `add_writes` queues the writes in the beat's own pipeline, so counting costs no
round trip of its own. The keys are Sidekiq 8's (``lib/sidekiq/metrics/tracking.rb`` and
``shared.rb``), so a Sidekiq 8 Web UI on the same Redis shows djqueue's jobs in its Metrics tab:

- ``j|YYMMDD|H:MM``: per one-minute bucket, fields ``CLASS|p`` (processed), ``CLASS|f``
  (failed) and ``CLASS|ms`` (milliseconds spent in the jobs that succeeded); lives 8 hours.
  djqueue adds where each failure went: ``CLASS|r`` (retried), ``CLASS|d`` (dead: moved to the
  dead set) and ``CLASS|x`` (discarded: kept nowhere), which Sidekiq's readers pass over
  (its ``Query`` splits each field on ``|`` and sums per metric name; its page shows only
  ``p``, ``f`` and ``ms``);
- ``j|YYMMDD|H:M``: the same per ten-minute bucket (the minute's tens digit); lives 3 days;
- ``h|CLASS-D-H:M``: per class and minute, 26 unsigned 16-bit counters (BITFIELD, saturating)
  of the successful jobs' times in `HISTOGRAM_BOUNDS`' buckets; lives 8 hours.

What Sidekiq's layout has no place for (per queue, latency at pickup) goes in djqueue's own
hash for the same buckets, ``djqueue:metrics|YYMMDD|H:MM`` and ``|H:M``, with the same
lifetimes: fields ``q|QUEUE|p``, ``q|QUEUE|f``, ``q|QUEUE|ms``, ``q|QUEUE|r``, ``q|QUEUE|d``,
``q|QUEUE|x``, ``q|QUEUE|lms`` (latency
milliseconds summed), ``q|QUEUE|ln`` (jobs whose latency was known), and ``c|CLASS|lms``,
``c|CLASS|ln`` per class. Times are UTC, buckets are named by the flush's minute (as Sidekiq's).
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import redis.exceptions

from . import bad_keys
from .keys import METRICS_MINUTE_TTL, METRICS_TEN_MINUTE_TTL, Keys
from .replies import text

#: Sidekiq's histogram buckets: a job of ``ms`` milliseconds counts in the first bucket whose
#: bound is above ``ms``; past the last bound, in the 26th ("Slow").
HISTOGRAM_BOUNDS = (
    20, 30, 45, 65, 100, 150, 225, 335, 500, 750, 1100, 1700, 2500, 3800, 5750,
    8500, 13000, 20000, 30000, 45000, 65000, 100000, 150000, 225000, 335000,
)  # fmt: skip
HISTOGRAM_SIZE = len(HISTOGRAM_BOUNDS) + 1

#: A row of the worker's counts, one per (class, queue): these indexes, then the histogram.
#: RETRIED, DEAD and DISCARDED count where the failures went (`djqueue.worker.settle`).
PROCESSED, FAILED, MS, LATENCY_MS, LATENCY_N, RETRIED, DEAD, DISCARDED = range(8)
HISTOGRAM = 8
#: Every field suffix a metrics hash holds (``CLASS|r``, ``q|QUEUE|r``): the row index it is
#: written from and the `Sums` attribute it is read into. The one table of the layout for both.
FIELDS = {
    "p": (PROCESSED, "processed"),
    "f": (FAILED, "failed"),
    "ms": (MS, "ms"),
    "r": (RETRIED, "retried"),
    "d": (DEAD, "dead"),
    "x": (DISCARDED, "discarded"),
    "lms": (LATENCY_MS, "latency_ms"),
    "ln": (LATENCY_N, "latency_n"),
}
#: The latency fields, written only where a latency was known (``ln`` not 0).
LATENCY = ("lms", "ln")
#: The counts written whenever they are not 0, as (row index, suffix).
COUNTED = tuple((index, suffix) for suffix, (index, _) in FIELDS.items() if suffix not in LATENCY)
#: The fields a time series (`Sums.series`) is drawn from, in its order.
SERIES = ("p", "f", "ms")
ROW_SIZE = HISTOGRAM + HISTOGRAM_SIZE
#: (display class, queue) -> row.
Counts = dict[tuple[str, str], list[int]]

#: Sidekiq 8 reads at most 480 one-minute buckets and 72 hours of ten-minute ones.
MAX_MINUTES = 480
MAX_HOURS = 72
_FETCH = [part for i in range(HISTOGRAM_SIZE) for part in ("GET", "u16", f"#{i}")]


def minute_bucket(when: float) -> str:
    """``250214|8:43``: Sidekiq 8's one-minute bucket (``%y%m%d|%-H:%M``, UTC)."""
    t = time.gmtime(when)
    return f"{time.strftime('%y%m%d', t)}|{t.tm_hour}:{t.tm_min:02d}"


def ten_minute_bucket(when: float) -> str:
    """``250214|8:4``: Sidekiq 8's ten-minute bucket (the minute bucket without its last digit)."""
    return minute_bucket(when)[:-1]


def histogram_window(when: float) -> str:
    """``14-8:43``: the minute a histogram key names (``%-d-%-H:%-M``, UTC)."""
    t = time.gmtime(when)
    return f"{t.tm_mday}-{t.tm_hour}:{t.tm_min}"


def add_writes(pipe: Any, keys: Keys, counts: Counts, now: float) -> list[str]:
    """Queue the writes of ``counts`` (flushed at ``now``) on ``pipe``; returns the key each
    queued command writes, in order, for `report` to name a bad one."""
    classes: dict[str, list[int]] = {}
    queues: dict[str, list[int]] = {}
    for (name, queue), row in counts.items():
        for table, key in ((classes, name), (queues, queue)):
            total = table.setdefault(key, [0] * ROW_SIZE)
            for i, value in enumerate(row):
                total[i] += value
    sidekiq: dict[str, int] = {}
    own: dict[str, int] = {}
    for name, row in classes.items():
        # As Sidekiq: ``ms`` whenever a job succeeded, even in 0 ms; other counts when not 0.
        for index, metric in COUNTED:
            if row[index] or (index == MS and row[PROCESSED] > row[FAILED]):
                sidekiq[f"{name}|{metric}"] = row[index]
        if row[LATENCY_N]:
            for metric in LATENCY:
                own[f"c|{name}|{metric}"] = row[FIELDS[metric][0]]
    for queue, row in queues.items():
        for index, metric in COUNTED:
            if row[index]:
                own[f"q|{queue}|{metric}"] = row[index]
        if row[LATENCY_N]:
            for metric in LATENCY:
                own[f"q|{queue}|{metric}"] = row[FIELDS[metric][0]]
    written: list[str] = []
    for bucket, ttl in (
        (minute_bucket(now), METRICS_MINUTE_TTL),
        (ten_minute_bucket(now), METRICS_TEN_MINUTE_TTL),
    ):
        for key, fields in ((keys.job_metrics(bucket), sidekiq), (keys.own_metrics(bucket), own)):
            if not fields:
                continue
            for name, value in fields.items():
                pipe.hincrby(key, name, value)
            pipe.expire(key, ttl)
            written += [key] * (len(fields) + 1)
    window = histogram_window(now)
    for name, row in classes.items():
        bits = [
            part
            for i, value in enumerate(row[HISTOGRAM:])
            if value
            for part in ("INCRBY", "u16", f"#{i}", value)
        ]
        if bits:
            key = keys.histogram(name, window)
            pipe.execute_command("BITFIELD", key, "OVERFLOW", "SAT", *bits)
            pipe.expire(key, METRICS_MINUTE_TTL)
            written += [key, key]
    return written


def report(replies: Iterable[Any], written: list[str]) -> None:
    """Name the keys the writes could not change (of the wrong type: once, by
    `bad_keys`; anything else, out of memory say, as an error line): those counts are lost,
    the beat goes on."""
    found: list[tuple[str, str]] = []
    for key, reply in zip(written, replies, strict=False):
        if not isinstance(reply, redis.exceptions.ResponseError):
            continue
        if bad_keys.is_wrong_type(reply):
            found.append((key, "is of the wrong type; metrics not counted there"))
        else:
            bad_keys.logger.error("metrics not written to %s: %s", key, reply)
    if found:
        bad_keys.report(dict(found).items())


@dataclass
class Sums:
    """One job class's (or queue's) sums over a range of buckets."""

    processed: int = 0
    failed: int = 0
    #: Where the failures went: retried, moved to the dead set, kept nowhere.
    retried: int = 0
    dead: int = 0
    discarded: int = 0
    #: Milliseconds spent in the jobs that succeeded (Sidekiq does not time failures).
    ms: int = 0
    #: Queue latency at pickup: milliseconds summed, and the jobs it was known for.
    latency_ms: int = 0
    latency_n: int = 0
    #: Successful jobs per `HISTOGRAM_BOUNDS` bucket (minute ranges only; empty otherwise).
    histogram: list[int] = field(default_factory=list)
    #: Bucket start (epoch s) -> [processed, failed, ms], for a time series.
    series: dict[int, list[int]] = field(default_factory=dict)


@dataclass
class Read:
    """What `read` found: per class and per queue, the buckets' starts, bad keys met."""

    classes: dict[str, Sums]
    queues: dict[str, Sums]
    starts: list[int]
    stride: int
    problems: list[tuple[str, str]]


def read(
    client: Any,
    keys: Keys,
    now: float,
    minutes: int | None = None,
    hours: int | None = None,
    name: str | None = None,
) -> Read:
    """The figures of the ``minutes`` one-minute buckets (default 60, at most 480) or the
    ``hours`` hours of ten-minute buckets (at most 72) up to ``now``, as Sidekiq 8's
    ``Query#top_jobs`` reads them; ``name`` keeps the classes containing it (case-insensitive).
    Two round trips: the hashes, then (minute ranges only) each class's histograms."""
    if minutes is None and hours is None:
        minutes = 60
    if hours is not None:
        stride, count, bucket = 600, max(1, min(hours, MAX_HOURS)) * 6, ten_minute_bucket
    else:
        stride, count, bucket = 60, max(1, min(minutes or 60, MAX_MINUTES)), minute_bucket
    starts = [int(now - now % stride) - i * stride for i in range(count)]
    pipe = client.pipeline(transaction=False)
    for start in starts:
        pipe.hgetall(keys.job_metrics(bucket(start)))
        pipe.hgetall(keys.own_metrics(bucket(start)))
    replies = pipe.execute(raise_on_error=False)
    problems: list[tuple[str, str]] = []
    classes: dict[str, Sums] = {}
    queues: dict[str, Sums] = {}
    wanted = name.lower() if name else None
    for i, start in enumerate(starts):
        for own, reply in ((False, replies[2 * i]), (True, replies[2 * i + 1])):
            if isinstance(reply, redis.exceptions.ResponseError):
                key = (keys.own_metrics if own else keys.job_metrics)(bucket(start))
                problems.append((key, str(reply)))
                continue
            for raw, value in reply.items():
                _add(text(raw), int(value), start, own, classes, queues)
    if wanted is not None:
        classes = {k: v for k, v in classes.items() if wanted in k.lower()}
    if hours is None and classes:
        pipe = client.pipeline(transaction=False)
        names = sorted(classes)
        for class_name in names:
            for start in starts:
                pipe.execute_command(
                    "BITFIELD_RO", keys.histogram(class_name, histogram_window(start)), *_FETCH
                )
        found = iter(pipe.execute(raise_on_error=False))
        for class_name in names:
            total = [0] * HISTOGRAM_SIZE
            for _ in starts:
                counters = next(found)
                if isinstance(counters, redis.exceptions.ResponseError):
                    problems.append((keys.histogram(class_name, "*"), str(counters)))
                    continue
                for j, value in enumerate(counters):
                    total[j] += int(value)
            classes[class_name].histogram = total
    return Read(classes, queues, sorted(starts), stride, problems)


def _add(
    field_name: str,
    value: int,
    start: int,
    own: bool,
    classes: dict[str, Sums],
    queues: dict[str, Sums],
) -> None:
    kind = "c"
    if own:
        kind, _, field_name = field_name.partition("|")
    subject, _, metric = field_name.rpartition("|")
    found = FIELDS.get(metric)
    if not subject or kind not in ("c", "q") or found is None:
        return
    figures = (classes if kind == "c" else queues).setdefault(subject, Sums())
    attribute = found[1]
    setattr(figures, attribute, getattr(figures, attribute) + value)
    if metric in SERIES:
        figures.series.setdefault(start, [0] * len(SERIES))[SERIES.index(metric)] += value


def percentile(histogram: list[int], fraction: float) -> float | None:
    """The upper bound (ms) of the histogram bucket holding the ``fraction`` quantile of the
    jobs counted; ``math.inf`` past the last bound; None when nothing was counted."""
    total = sum(histogram)
    if not total:
        return None
    target = max(1, math.ceil(fraction * total))
    seen = 0
    for i, value in enumerate(histogram):
        seen += value
        if seen >= target:
            return float(HISTOGRAM_BOUNDS[i]) if i < len(HISTOGRAM_BOUNDS) else math.inf
    return math.inf
