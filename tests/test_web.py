"""`djqueue.web` without a framework: listings filtered inside Redis agree with the same filter
applied in Python, bulk actions on a filter reach every match, and the page arithmetic and
display helpers read as a person expects."""

from __future__ import annotations

import json
import random
from collections import Counter
from zoneinfo import ZoneInfo

import redis

from djqueue.api import DeadSet, Filter, Queue, RetrySet
from djqueue.web import display, frames
from djqueue.web.actions import run
from djqueue.web.chart import history_svg, nice_ceiling
from djqueue.web.lists import job_list
from djqueue.web.paging import Paging
from djqueue.web.query import ListQuery

NAMES = ["Mailer", "Billing", "Report"]


def fill(r: redis.Redis, key: str, n: int, seed: int = 1) -> list[dict]:
    """``n`` varied jobs in a set (``key`` "retry"/"dead") or a queue ("queue:x")."""
    rng = random.Random(seed)
    items = []
    for i in range(n):
        item = {
            "class": rng.choice(NAMES),
            "args": [f"user{i}@example.com", rng.randint(0, 9)],
            "jid": f"{i:024x}",
            "queue": rng.choice(["mail", "bill"]),
            "error_class": "IOError",
            "error_message": f"timeout {rng.randint(0, 3)}",
        }
        if i % 7 == 0:
            item["display_class"], item["class"] = item["class"], "Wrapper"
        items.append(item)
        raw = json.dumps(item, separators=(",", ":"))
        if key.startswith("queue:"):
            r.lpush(key, raw)
        else:
            r.zadd(key, {raw: 1000.0 + i})
    return items


def shown(item: dict) -> str:
    return item.get("display_class") or item["class"]


def test_a_filtered_page_is_the_python_filter_of_the_set(r: redis.Redis) -> None:
    items = fill(r, "retry", 2500)  # more than one scan call's chunk
    cases = [
        (Filter(text="user1"), lambda i: "user1" in json.dumps(i, separators=(",", ":"))),
        (Filter(job="Billing"), lambda i: shown(i) == "Billing"),
        (Filter(job="Wrapper"), lambda i: i["class"] == "Wrapper"),
        (
            Filter(queue="mail", job="Report"),
            lambda i: i["queue"] == "mail" and shown(i) == "Report",
        ),
        (
            Filter(text="timeout 2", queue="bill"),
            lambda i: i["error_message"] == "timeout 2" and i["queue"] == "bill",
        ),
    ]
    for keep, want in cases:
        expected = [i["jid"] for i in items if want(i)]
        for offset in (0, 25, len(expected) - 5):
            listing = RetrySet().page(max(0, offset), 25, keep)
            assert listing.matches == len(expected), keep
            assert [e.jid for e in listing.records] == expected[
                max(0, offset) : max(0, offset) + 25
            ]


def test_search_text_is_matched_as_json_spells_it(r: redis.Redis) -> None:
    for n, text in enumerate(['say "hi"', "naïve café", "plain"]):
        item = {"class": "J", "args": [text], "jid": f"{n:024x}"}
        r.zadd("retry", {json.dumps(item, ensure_ascii=False, separators=(",", ":")): n})
    for text, jid in (('"hi"', 0), ("café", 1)):
        page = job_list("retries", ListQuery(q=text))
        assert [row.jid for row in page.rows] == [f"{jid:024x}"], text


def test_fields_only_search_ignores_the_arguments(r: redis.Redis) -> None:
    fill(r, "retry", 50)
    assert RetrySet().page(0, 25, Filter(text="user7@")).matches == 1
    assert RetrySet().page(0, 25, Filter(text="USER7@")).matches == 1
    assert RetrySet().page(0, 25, Filter(text="user7@", fields_only=True)).matches == 0
    assert RetrySet().page(0, 25, Filter(text=f"{7:024x}", fields_only=True)).matches == 1
    assert RetrySet().page(0, 25, Filter(text=f"{10:024X}", fields_only=True)).matches == 0
    assert RetrySet().page(0, 25, Filter(text=f"{10:024X}")).matches == 0  # a jid as written


def test_facets_count_each_filter_as_if_it_were_not_set(r: redis.Redis) -> None:
    items = fill(r, "dead", 300)
    listing = DeadSet().page(0, 25, Filter(job="Mailer", queue="bill"), facets=True)
    bill = [i for i in items if i["queue"] == "bill"]
    assert dict(listing.names) == {
        n: sum(shown(i) == n for i in bill) for n in {shown(i) for i in bill}
    }
    mailer = [i for i in items if shown(i) == "Mailer"]
    assert listing.queues["mail"] == sum(i["queue"] == "mail" for i in mailer)


def test_a_queue_page_is_newest_first_with_its_size(r: redis.Redis) -> None:
    items = fill(r, "queue:x", 60)
    listing = Queue("x").page(25, 25)
    assert listing.size == 60 and listing.matches is None
    assert [j.jid for j in listing.records] == [i["jid"] for i in reversed(items)][25:50]
    assert [j.index for j in listing.records] == list(range(25, 50))


def test_an_action_on_every_match_reaches_all_of_them(r: redis.Redis) -> None:
    items = fill(r, "retry", 2300)
    billing = sum(shown(i) == "Billing" for i in items)
    result = run("retries", "kill", every=True, keep=Filter(job="Billing"))
    assert result.done == billing and DeadSet().size == billing
    assert RetrySet().page(0, 1, Filter(job="Billing")).matches == 0
    assert RetrySet().size == 2300 - billing
    deleted = run("queue", "delete", every=True, keep=Filter(), queue="nothing")
    assert deleted.done == 0


def test_a_queue_filter_delete_reaches_all_matches(r: redis.Redis) -> None:
    items = fill(r, "queue:x", 1500)
    reports = sum(shown(i) == "Report" for i in items)
    assert Queue("x").delete_matching(Filter(job="Report")) == reports
    assert Queue("x").size == 1500 - reports


def test_job_list_numbers_pages_and_links_filters(r: redis.Redis) -> None:
    fill(r, "retry", 80)
    page = job_list("retries", ListQuery.parse({"p": "2", "job": "Mailer", "_facets": "1"}))
    assert page.paging.number == 2 and page.total == page.matches
    mailer = next(c for c in page.job_choices if c.label == "Mailer")
    assert mailer.selected and mailer.count == page.matches
    assert page.rows[0].filter_url == "?job=Mailer&_facets=1"
    assert page.facets_url == "?job=Mailer&p=2" and page.clear_url == "?_facets=1"


def test_paging_arithmetic() -> None:
    paging = Paging(7, 100_000)
    assert paging.pages == 4000 and paging.offset == 150
    assert paging.links() == [1, None, 5, 6, 7, 8, 9, None, 4000]
    assert Paging(2, 60).links() == [1, 2, 3]
    assert Paging(1, 0).pages == 1 and Paging(1, 0).first_row == 0
    assert Paging(4, 60).beyond_end and not Paging(3, 60).beyond_end
    assert Paging(4, 200, 25).links() == [1, 2, 3, 4, 5, 6, 7, 8]  # a gap of one is shown


def test_a_hand_edited_query_falls_back_to_defaults() -> None:
    query = ListQuery.parse({"p": "minus one", "q": "  x  ", "job": ["a list"]})
    assert (query.page, query.q, query.job) == (1, "x", "")
    assert ListQuery.parse({"q": "z" * 999}).q == "z" * 200
    assert ListQuery(page=3, q="a b&c").url(page=4) == "?q=a+b%26c&p=4"
    assert ListQuery(page=3, q="x").url(job="J") == "?q=x&job=J"  # a new filter: page 1


def test_display_helpers() -> None:
    assert display.relative(100.0, now=160.0) == "1 minute ago"
    assert display.relative(3700.0, now=100.0) == "in 1 hour"
    assert display.relative(100.2, now=100.0) == "just now"
    assert display.relative(None) == ""
    assert display.number(1234567) == "1,234,567"
    assert display.kilobytes(153_600) == "150.0 MB"
    assert display.latency(0) == "0 s" and display.latency(1.26) == "1.3 s"
    spans = [(0.012, "12 ms"), (3.41, "3.4 s"), (42, "42 s"), (150, "2 min")]
    spans += [(3600, "1 h"), (3900, "1 h 5 min"), (3 * 86400 + 4 * 3600, "3 d 4 h")]
    assert [display.span(seconds) for seconds, _ in spans] == [text for _, text in spans]
    at = 1_795_000_000.0  # 2026-11-18 11:06:40 UTC
    assert display.timestamp(at) == "2026-11-18 11:06:40 UTC"
    with display.in_zone(ZoneInfo("Europe/Paris")):
        assert display.timestamp(at) == "2026-11-18 12:06:40 CET"
        assert display.exact(at) == "2026-11-18 12:06:40 CET (UTC 2026-11-18T11:06:40.000Z)"
    assert display.timestamp(at) == "2026-11-18 11:06:40 UTC"  # the zone ends with the block
    args = [{"user": 3, "api_key": "k", "nested": [{"Password": "p"}]}, "x" * 300]
    text = display.args_text(args, show=True)
    assert '"api_key": "********"' in text and '"Password": "********"' in text
    assert len(text) == display.ARGS_IN_LIST and text.endswith("…")
    assert display.args_text(args, show=False) == "(2 arguments hidden)"
    whole = display.payload_text({"class": "J", "args": args}, show_args=False)
    assert "api_key" not in whole and "(2 arguments hidden)" in whole


def test_chart_scale_and_escaping() -> None:
    scales = [nice_ceiling(n) for n in (1, 3, 7, 40, 41, 999, 5001)]
    assert scales == [4, 4, 8, 40, 80, 1000, 8000]
    svg = history_svg(["2026-11-22", "2026-11-23"], [10, 0], [1, 2])
    assert svg.startswith("<svg") and svg.endswith("</svg>")
    assert "2026-11-23: 0 processed, 2 failed" in svg
    assert "<script" not in history_svg(["<script>"], [1], [1])


def test_names_are_read_as_sidekiq_writes_them(r: redis.Redis) -> None:
    """Sidekiq writes "args" before "class", and an argument may have a "class" of its own;
    errors may hold quotes and backslashes."""
    sidekiq = (
        '{"retry":true,"queue":"default","args":[{"class":"Account","id":1}],"class":"HardJob",'
        '"jid":"aaaaaaaaaaaaaaaaaaaaaaaa","error_class":"PG::Error",'
        '"error_message":"relation \\"users\\" does not exist\\n"}'
    )
    r.zadd("retry", {sidekiq: 1.0})
    listing = RetrySet().page(0, 25, Filter(job="HardJob"), facets=True)
    assert listing.matches == 1 and dict(listing.names) == {"HardJob": 1}
    hidden = job_list("retries", ListQuery(q='relation "users"'), settings=None)
    assert [row.jid for row in hidden.rows] == ["a" * 24]
    keep = ListQuery(q='relation "users"').filter(show_args=False)
    assert RetrySet().page(0, 25, keep).matches == 1
    assert RetrySet().page(0, 25, ListQuery(q="Account").filter(show_args=False)).matches == 0
    # The fields are searched whatever the case: the error's "users", the job's name.
    for q in ('RELATION "USERS', "hardjob"):
        assert RetrySet().page(0, 25, ListQuery(q=q).filter(show_args=False)).matches == 1, q


def test_names_and_queues_are_the_top_level_fields_however_the_entry_is_written(
    r: redis.Redis,
) -> None:
    """scan.lua reads a field by finding its key as text: a key inside an argument, a key
    ending like the one looked for, a brace inside a string, spaces, escapes and the order of
    the keys must not change what a job is called or where it goes."""
    entries = [
        # (stored JSON, the name the list shows, the queue it shows)
        ('{"class":"Real","queue":"a","args":[{"class":"Fake","queue":"b"}]}', "Real", "a"),
        ('{"args":[{"class":"Fake","queue":"b"}],"queue":"a","class":"Late"}', "Late", "a"),
        ('{"class":"W","wrapped":"Wrapped","queue":"a","args":[]}', "Wrapped", "a"),
        ('{"class":"W","wrapped":"X","display_class":"Shown","queue":"a","args":[]}', "Shown", "a"),
        (
            '{"class":"Plain","queue":"q","args":[{"unwrapped":"No","redisplay_class":"No",'
            '"my_retry_queue":"No"}]}',
            "Plain",
            "q",
        ),
        ('{"queue":"q","retry_queue":"rq","class":"Moved","args":[]}', "Moved", "rq"),
        ('{"error_class":"E","class":"AfterError","queue":"a","args":[]}', "AfterError", "a"),
        ('{"note":"{","class":"Braced","args":[{"class":"Fake"}]}', "Braced", "default"),
        ('{"class": "Spaced", "queue": "s", "args": [{"class": "Fake"}]}', "Spaced", "s"),
        ('{"class":"Odd\\"Name","queue":"a","args":[]}', 'Odd\\"Name', "a"),
        (' {"class":"Padded","args":[{"class":"Fake"}]}', "Padded", "default"),
        ('not json "class":"Junk","class":"Junk",', "", "default"),
    ]
    for n, (raw, _, _) in enumerate(entries):
        r.zadd("retry", {raw[:-1] + f',"jid":"{n:024x}"}}': n})
    listing = RetrySet().page(0, 25, Filter(), facets=True)
    assert dict(listing.names) == dict(Counter(name for _, name, _ in entries))
    assert dict(listing.queues) == dict(Counter(queue for _, _, queue in entries))
    for n, (_, name, queue) in enumerate(entries[:-1]):
        for keep in (Filter(job=name), Filter(job=name, queue=queue)):
            found = [e.jid for e in RetrySet().page(0, 25, keep).records]
            assert f"{n:024x}" in found, (keep, entries[n][0])
    assert RetrySet().page(0, 25, Filter(job="Fake")).matches == 0
    assert RetrySet().page(0, 25, Filter(job="No")).matches == 0


def test_the_queue_filter_reads_the_queue_the_list_shows(r: redis.Redis) -> None:
    for n, extra in enumerate([{"queue": "high", "retry_queue": "low"}, {}]):
        item = {"class": "J", "args": [], "jid": f"{n:024x}", **extra}
        r.zadd("retry", {json.dumps(item): n})
    shown = {row.jid: row.queue for row in job_list("retries", ListQuery()).rows}
    assert shown == {f"{0:024x}": "low", f"{1:024x}": "default"}
    for queue, jid in (("low", 0), ("default", 1)):
        found = job_list("retries", ListQuery(queue=queue)).rows
        assert [row.jid for row in found] == [f"{jid:024x}"]


def test_entries_without_a_jid_are_named_by_their_bytes(r: redis.Redis) -> None:
    job = {"class": "J", "args": [], "jid": "c" * 24}
    r.zadd("dead", {json.dumps(job): 5000.0, '{"x":1}': 5000.0})
    r.lpush("queue:default", "not json at all", json.dumps(job))
    rows = job_list("dead", ListQuery()).rows
    bad = next(row for row in rows if not row.jid)
    assert run("dead", "delete", [bad.key]).done == 1
    assert [e.jid for e in DeadSet()] == ["c" * 24]
    queued = next(
        row for row in job_list("queue", ListQuery(), queue="default").rows if row.problem
    )
    assert run("queue", "delete", [queued.key], queue="default").done == 1
    assert [j.jid for j in Queue().jobs()] == ["c" * 24]


def test_entries_with_impossible_times_still_list(r: redis.Redis) -> None:
    item = {"class": "J", "args": [], "jid": "d" * 24, "enqueued_at": 1e17, "failed_at": 1.8e12}
    r.zadd("dead", {json.dumps(item): float("inf")})
    r.lpush("queue:default", json.dumps(item))
    assert job_list("dead", ListQuery()).rows[0].when == ""
    assert job_list("queue", ListQuery(), queue="default").rows[0].when == ""
    assert DeadSet().entry("nan-x") is None and DeadSet().entry("inf-" + "d" * 24) is None
    assert ListQuery.parse({"p": "9" * 40}).page == 1_000_000


def test_backtrace_lines_read_as_frames_with_source_from_python_files_only() -> None:
    here = frames.source_line(__file__, 1)
    assert here.startswith('"""`djqueue.web` without a framework')
    read = frames.frames(
        [
            f"{__file__}:1:in `module'",
            "app/jobs/charge.rb:12:in 'Charge#perform'",  # Ruby 3.4's quotes
            "/etc/passwd:1:in `x'",  # a hostile entry: not a Python file, not read
            "[previous line repeated 3 more times]",
        ]
    )
    assert (read[0].line, read[0].function, read[0].source) == (1, "module", here)
    assert (read[1].file, read[1].line, read[1].function) == (
        "app/jobs/charge.rb",
        12,
        "Charge#perform",
    )
    assert read[1].source == "" and read[2].source == ""
    assert (read[3].function, read[3].text) == ("", "[previous line repeated 3 more times]")
