"""The retry and dead sets' counts kept as entries come and go (`djqueue.store.tallies`): what
the counts page and a job or queue filter's total read instead of every entry.

Each test compares what the tallies give with what reading every entry gives (`scan_page`,
the walk the pages made before), after entries came and went by every path that writes the
sets: djqueue's transitions (which must count, so the hash is not counted again) and writers
that do not count (a Ruby process's ZADD, redis-cli), which the reader must notice.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
import redis

import djqueue
from djqueue.api import DeadSet, RetrySet
from djqueue.api.sorted_set import SortedSet
from djqueue.store import tallies
from djqueue.store.jobs import JobStore
from djqueue.store.keys import Keys
from djqueue.store.listing import Filter, counted_page, scan_page
from djqueue.store.status import StatusStore
from djqueue.web.lists import job_list
from djqueue.web.query import ListQuery

KEYS = Keys()


def job(n: int, **fields: Any) -> dict[str, Any]:
    found = {"class": "Mailer", "args": [n], "jid": f"{n:024x}", "queue": "default"}
    found.update(fields)
    return {k: v for k, v in found.items() if v is not None}


#: Entries of every shape the lists read: plain, Active Job (wrapped), display_class,
#: retry_queue (also empty), no queue, an argument object with a class of its own (before
#: and after the job's), quotes and unicode in names, and entries that are not job objects.
SHAPES: list[Any] = [
    job(1),
    job(2, queue="mail"),
    job(3, **{"class": "Sidekiq::ActiveJob::Wrapper", "wrapped": "SendWelcome"}),
    job(4, display_class="Shown", queue="low"),
    job(5, retry_queue="slow", queue="mail"),
    job(6, retry_queue=""),
    job(7, queue=None),
    job(8, args=[{"class": "Inner", "queue": "inner"}]),
    {"args": [{"class": "Inner"}], "class": "Outer", "jid": "9" * 24, "queue": "q9"},
    job(10, **{"class": 'Say "hi"', "queue": "ünï"}),
    job(11, **{"class": "Ünicode::Jöb"}),
    "not json at all",
    '["a", "list"]',
]


def raw(entry: Any) -> str:
    return entry if isinstance(entry, str) else json.dumps(entry, separators=(",", ":"))


def fill(r: redis.Redis, key: str, copies: int = 3) -> list[str]:
    members = []
    for c in range(copies):
        for n, entry in enumerate(SHAPES):
            if isinstance(entry, dict):
                entry = {**entry, "jid": f"{c}{n:023x}"}
            elif c:
                entry = f"{entry} {c}"
            members.append(raw(entry))
    base = time.time() - 1000
    r.zadd(key, {m: base + i for i, m in enumerate(members)})
    return members


#: Pages of every filter: the first, one in the middle, and near the far end.
PAGES = ((0, 25), (2, 3), (14, 4), (17, 5), (40, 5))

FILTERS = [
    Filter(),
    Filter(job="Mailer"),
    Filter(job="SendWelcome"),
    Filter(job="Sidekiq::ActiveJob::Wrapper"),
    Filter(job="Outer"),
    Filter(job="Inner"),
    Filter(job='Say \\"hi\\"'),
    Filter(queue="default"),
    Filter(queue="slow"),
    Filter(queue=""),
    Filter(queue="\\u00fcn\\u00ef"),
    Filter(queue="ünï"),
    Filter(job="Mailer", queue="mail"),
    Filter(job="nothing"),
]


def assert_counts_agree(r: redis.Redis, where: SortedSet, expect_recount: bool | None) -> None:
    """The tallies give the page's size, matches, counts and rows as the whole walk does."""
    tally = KEYS.tally(where.key)
    if expect_recount is not None:
        assert tallies.read(r, where.key, tally).recounted is expect_recount
    for keep in FILTERS:
        keep = where._destined(keep)
        for offset, limit in PAGES:
            counted = counted_page(r, where.key, tally, offset, limit, True, keep, facets=True)
            walked = scan_page(r, where.key, "zset", offset, limit, True, keep, facets=True)
            got = (counted.size, counted.matches, counted.names, counted.queues, counted.rows)
            want = (walked.size, walked.matches, walked.names, walked.queues, walked.rows)
            assert got == want, keep
    assert tallies.read(r, where.key, tally).recounted is False


@pytest.mark.parametrize("kind", [RetrySet, DeadSet])
def test_counts_of_every_shape_of_entry_are_those_of_reading_each(redis_url, r, kind) -> None:
    where = kind()
    fill(r, where.key)
    assert_counts_agree(r, where, expect_recount=True)  # first read: counted whole
    # ...and the page draws them: the sidebar's counts are the tallies'.
    page = job_list("retries" if kind is RetrySet else "dead", ListQuery(facets=True))
    walked = scan_page(r, where.key, "zset", 0, 25, True, where._destined(Filter()), True)
    shown = {c.label: c.count for c in page.job_choices[1:]}
    assert shown == {(name or "(none)"): count for name, count in walked.names.items()}
    assert shown["Mailer"] == 18 and shown["(none)"] == 6
    assert page.size == 3 * len(SHAPES)


def retry_job(n: int, **fields: Any) -> str:
    return raw(job(n, **fields))


def test_every_djqueue_path_counts_its_entries(redis_url, r) -> None:
    store = JobStore(r, KEYS, dead_max_jobs=6, dead_timeout=3600)
    retry, dead = RetrySet(), DeadSet()
    fill(r, "retry", copies=1)
    fill(r, "dead", copies=1)
    now = time.time()
    r.zadd("dead", {raw(job(900 + n)): now - 7200 + n for n in range(3)})  # past the timeout
    for where in (retry, dead):
        assert_counts_agree(r, where, expect_recount=True)

    # A worker's retry: from its working list to the retry set (and again: counted once).
    working = "working:test"
    member = retry_job(100, queue="w")
    r.lpush(working, member)
    again = retry_job(100, queue="w", retry_count=0)
    assert store.retry_later(working, member, again, now)
    r.lpush(working, member)  # the same JSON again (a retried call): its score moves
    assert store.retry_later(working, member, again, now + 1)
    assert_counts_agree(r, retry, expect_recount=False)

    # A worker's bury out of its working list, then a trim by time and by size (janitor).
    r.lpush(working, retry_job(101))
    assert store.bury([(retry_job(101), retry_job(101, queue="dead-q"))], now, working, "list")
    assert r.zcard("dead") == 6  # the three past the timeout, then all but the newest 6
    assert_counts_agree(r, dead, expect_recount=False)
    JobStore(r, KEYS, dead_max_jobs=4, dead_timeout=3600).trim_dead(now)  # the janitor's
    assert r.zcard("dead") == 4
    assert_counts_agree(r, dead, expect_recount=False)

    # The poller moving a due entry, and the API: retry now, kill, delete, DeadSet.kill.
    first = r.zrange("retry", 0, 0)[0]
    assert store.move_to_queue("retry", [(first, "default", first)]).moved == 1
    entries = retry.jobs(0, 4)
    assert entries[0].retry() and entries[1].kill() and entries[2].delete()
    dead.kill(job(102, queue="killed"))
    dead.kill(job(102, queue="killed"))  # already there: buried once
    for where in (retry, dead):
        assert_counts_agree(r, where, expect_recount=False)

    # Cancel of a waiting job (djqueue.cancel's store call) takes it out of the retry set.
    member = r.zrange("retry", 0, 0)[0]
    assert StatusStore(r, KEYS).remove("retry", "zset", member)
    assert_counts_agree(r, retry, expect_recount=False)

    # Clearing forgets the counts with the set; the next read counts nothing again.
    dead.clear()
    assert r.exists(KEYS.tally("dead")) == 0
    assert_counts_agree(r, dead, expect_recount=True)


def test_writers_that_do_not_count_are_noticed(redis_url, r) -> None:
    retry = RetrySet()
    fill(r, "retry", copies=1)
    assert_counts_agree(r, retry, expect_recount=True)

    r.zadd("retry", {retry_job(200, **{"class": "Ruby"}): 5})  # a Ruby process's retry
    assert_counts_agree(r, retry, expect_recount=True)
    r.zrem("retry", r.zrange("retry", 0, 0)[0])  # redis-cli
    assert_counts_agree(r, retry, expect_recount=True)

    # One added and one removed: the total holds, so only the age of the count tells.
    r.zadd("retry", {retry_job(201, **{"class": "Ruby"}): 6})
    r.zrem("retry", r.zrange("retry", 0, 0)[0])
    r.hset(KEYS.tally("retry"), "@", int(time.time()) - tallies.MAX_AGE - 1)
    assert_counts_agree(r, retry, expect_recount=True)


def test_bad_tally_hashes_are_counted_again_and_never_stop_a_move(redis_url, r, caplog) -> None:
    retry = RetrySet()
    fill(r, "retry", copies=1)
    tally = KEYS.tally("retry")
    assert_counts_agree(r, retry, expect_recount=True)

    def named() -> list[str]:
        found = [rec.getMessage() for rec in caplog.records if tally in rec.getMessage()]
        caplog.clear()
        return found

    r.hset(tally, "#", "many")  # a hand-edited total: moves go on, the reader names it
    assert retry.jobs(0, 1)[0].delete()
    assert r.hget(tally, "#") == "many"
    with caplog.at_level("WARNING", logger="djqueue.store"):
        assert_counts_agree(r, retry, expect_recount=True)
    assert ['not a whole number (# = "many")' in text for text in named()] == [True]

    field = next(f for f in r.hkeys(tally) if f not in ("#", "@"))
    for bad in ("-1", "1.5"):  # below zero, or a fraction: not trusted, and named
        r.hset(tally, field, bad)
        assert retry.jobs(0, 1)[0].delete()  # a move beside it still moves
        with caplog.at_level("WARNING", logger="djqueue.store"):
            assert_counts_agree(r, retry, expect_recount=True)
        # Named with its field (the move may have counted into it: -1 is then -2).
        assert [f"not a whole number ({field} = " in text for text in named()] == [True]

    r.delete(tally)
    r.set(tally, "a string")  # another type: moves go on, the reader replaces it
    store = JobStore(r, KEYS)
    working = "working:test"
    r.lpush(working, retry_job(300))
    assert store.retry_later(working, retry_job(300), retry_job(300), time.time())
    assert r.type(tally) == "string"  # left for the reader, which names it
    with caplog.at_level("WARNING", logger="djqueue.store"):
        assert_counts_agree(r, retry, expect_recount=True)
    found = named()
    assert len(found) == 1 and "holds a string, not a hash" in found[0], found
    assert r.type(tally) == "hash"


def test_search_text_is_not_counted(redis_url, r) -> None:
    fill(r, "retry", copies=1)
    with pytest.raises(ValueError, match="search text"):
        counted_page(r, "retry", KEYS.tally("retry"), 0, 25, False, Filter(text="Mailer"))
    listing = RetrySet().page(0, 25, Filter(text="mailer"), facets=True)
    assert listing.matches == 7 and r.exists(KEYS.tally("retry")) == 0


def test_the_schedule_is_not_counted(redis_url, r) -> None:
    djqueue.Client().push({"class": "S", "args": [1], "at": time.time() + 60})
    assert KEYS.tally("schedule") == ""
    from djqueue.api import ScheduledSet

    listing = ScheduledSet().page(0, 25, Filter(), facets=True)
    assert listing.names == {"S": 1} and not r.keys("*tally*")


def build_step(r: redis.Redis, per_call: int) -> tuple[int, float | None]:
    """One call of the reader: its state (2 while a build goes on) and the score reached."""
    from djqueue.store.scripts import TALLY_READ

    state, *_ = TALLY_READ(r, ["retry", KEYS.tally("retry")], [tallies.MAX_AGE, per_call])
    bound = r.hget(KEYS.tally("retry"), ">")
    return int(state), (None if bound is None else float(bound))


def test_a_count_built_over_many_calls_stays_exact_while_jobs_move(redis_url, r) -> None:
    store = JobStore(r, KEYS)
    retry = RetrySet()
    members = fill(r, "retry", copies=3)
    r.zadd("retry", {retry_job(400 + n): 2000.0 for n in range(6)})  # one run of equal scores
    base = r.zscore("retry", members[0])
    state, bound = build_step(r, 20)  # the run of six, then 14 of the 39 filled
    assert state == 2 and bound == base + 13
    states = [state]
    working = "working:test"

    def retried(member: str, at: float) -> None:
        r.lpush(working, member)
        assert store.retry_later(working, member, member, at)

    # Moves on both sides of the score the build has reached, between its calls.
    retried(retry_job(500), bound - 1)  # passed: counted by the move
    retried(retry_job(501), bound + 100)  # ahead: counted by the build
    retried(retry_job(502), bound)  # at the score reached: counted by the move
    below, above = members[0], members[-1]
    assert store.delete_from_set("retry", [below, above]) == 2
    retried(members[1], bound + 200)  # already counted, moved ahead: counted out
    retried(members[-2], bound - 2)  # not yet counted, moved back: counted in
    first = r.zrangebyscore("retry", "-inf", bound)[0]
    assert store.move_to_queue("retry", [(first, "default", first)]).moved == 1
    state, bound = build_step(r, 4)
    states.append(state)
    assert store.bury([(members[-3], members[-3])], time.time(), "retry", "zset") == 1
    low = r.zrangebyscore("retry", "-inf", bound)[0]
    assert StatusStore(r, KEYS).remove("retry", "zset", low)
    while state == 2:
        state, bound = build_step(r, 4)
        states.append(state)
    assert state == 1 and bound is None  # complete: the bound is gone
    assert set(states) == {1, 2}  # never started again: the moves kept the build exact
    assert_counts_agree(r, retry, expect_recount=False)


def test_a_build_that_a_writer_not_counting_upset_starts_again(redis_url, r) -> None:
    fill(r, "retry", copies=1)
    state, bound = build_step(r, 4)
    assert state == 2 and bound is not None
    r.zrem("retry", r.zrangebyscore("retry", "-inf", bound)[0])  # redis-cli, behind the build
    states = []
    while state in (2, 3):
        state, _ = build_step(r, 4)
        states.append(state)
    assert 3 in states and state == 1  # the end's total differed: counted again from the start
    assert_counts_agree(r, RetrySet(), expect_recount=False)


def test_the_reader_builds_in_calls_of_its_size(redis_url, r, monkeypatch) -> None:
    monkeypatch.setattr(tallies, "BUILD_PER_CALL", 3)
    fill(r, "retry", copies=2)
    scores = [float("-inf"), float("-inf"), 5.0, 5.0, 5.0, 5.0, float("inf")]  # ends and a run
    r.zadd("retry", {retry_job(700 + n): score for n, score in enumerate(scores)})
    calls = []
    real = tallies.TALLY_READ
    monkeypatch.setattr(tallies, "TALLY_READ", lambda *a: calls.append(1) or real(*a))
    entries = r.zcard("retry")
    assert tallies.read(r, "retry", KEYS.tally("retry")).recounted
    assert len(calls) >= entries // 4  # 3 entries a call, a run of equal scores whole
    assert_counts_agree(r, RetrySet(), expect_recount=False)


def test_a_set_that_keeps_changing_under_the_build_is_walked(redis_url, r, monkeypatch) -> None:
    monkeypatch.setattr(tallies, "BUILD_PER_CALL", 4)
    fill(r, "retry", copies=1)
    real = tallies.TALLY_READ
    added = []

    def and_a_ruby_retry(client, keys, args):  # a writer that does not count, every call
        added.append(1)
        r.zadd("retry", {retry_job(600 + len(added)): 1.0})
        return real(client, keys, args)

    monkeypatch.setattr(tallies, "TALLY_READ", and_a_ruby_retry)
    keep = RetrySet()._destined(Filter())
    assert tallies.read(r, "retry", KEYS.tally("retry")).tallies is None
    counted = counted_page(r, "retry", KEYS.tally("retry"), 0, 25, True, keep, facets=True)
    monkeypatch.setattr(tallies, "TALLY_READ", real)
    walked = scan_page(r, "retry", "zset", 0, 25, True, keep, facets=True)
    assert (counted.matches, counted.names, counted.queues) == (
        walked.matches,
        walked.names,
        walked.queues,
    )


def test_counts_are_read_when_redis_is_out_of_memory(redis_url, r) -> None:
    """Out of memory is when someone opens the dead set to delete jobs: its counts page and
    filters still answer (the count script may write its hash, as other allow-oom scripts)."""
    where = DeadSet()
    fill(r, where.key)
    r.config_set("maxmemory-policy", "noeviction")
    r.config_set("maxmemory", 1)
    try:
        with pytest.raises(redis.exceptions.OutOfMemoryError):
            r.set("some", "thing")  # Redis refuses writes indeed
        page = job_list("dead", ListQuery(facets=True, job="Mailer"))
    finally:
        r.config_set("maxmemory", 0)
    mailers = scan_page(r, where.key, "zset", 0, 25, True, where._destined(Filter(job="Mailer")))
    assert page.matches == mailers.matches > 0
    walked = scan_page(r, where.key, "zset", 0, 25, True, where._destined(Filter()), True)
    shown = {c.label: c.count for c in page.job_choices[1:]}
    assert shown == {(name or "(none)"): count for name, count in walked.names.items()}
