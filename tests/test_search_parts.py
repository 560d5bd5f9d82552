"""A filter that reads entries to count its matches reads one part of a long list
(`djqueue.store.listing.SEARCH_PART` entries), so a search page costs the same on a set of any
size: the matches, pages and counts are the part's, the page says which entries it searched
and links the parts beside it, and an action on every match still reaches the whole list.
The part is made small here (100 entries) so a few hundred jobs make several parts."""

from __future__ import annotations

import dataclasses
import json
from typing import Any
from urllib.parse import parse_qsl

import pytest
import redis
from werkzeug.datastructures import MultiDict

from djqueue.api import Filter, Queue, RetrySet, ScheduledSet
from djqueue.store import listing, tallies
from djqueue.web.forms import list_action
from djqueue.web.lists import job_list
from djqueue.web.query import ListQuery

from .test_web import fill, shown

PART = 100


@pytest.fixture(autouse=True)
def small_parts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(listing, "SEARCH_PART", PART)


def mailers(items: list[dict]) -> list[str]:
    return [i["jid"] for i in items if shown(i) == "Mailer"]


def everyone(_: object) -> bool:
    return True


def test_a_search_counts_and_pages_the_part_it_reads(r: redis.Redis) -> None:
    items = fill(r, "retry", 250)  # the retry set lists the soonest first: items in order
    for part, (first, end) in enumerate([(0, 100), (100, 200), (200, 250)], start=1):
        wanted = mailers(items[first:end])
        page = job_list("retries", ListQuery.parse({"q": "Mailer", "part": str(part)}))
        assert page.matches == len(wanted) and page.size == 250
        assert [row.jid for row in page.rows] == wanted[:25]
        assert page.searched == (first + 1, end)
        last = job_list("retries", ListQuery(q="Mailer", part=part, page=page.paging.pages))
        assert [row.jid for row in last.rows] == wanted[(page.paging.pages - 1) * 25 :]
    first_part = job_list("retries", ListQuery(q="Mailer"))
    assert first_part.previous_part is None
    assert first_part.next_part == (101, 200, "?q=Mailer&part=2")
    middle = job_list("retries", ListQuery(q="Mailer", part=2))
    assert middle.previous_part == (1, 100, "?q=Mailer")
    assert middle.next_part == (201, 250, "?q=Mailer&part=3")
    end = job_list("retries", ListQuery(q="Mailer", part=3))
    assert end.previous_part == (101, 200, "?q=Mailer&part=2") and end.next_part is None


def test_a_list_of_one_part_is_searched_whole(r: redis.Redis) -> None:
    items = fill(r, "retry", PART)
    page = job_list("retries", ListQuery(q="Mailer", facets=True))
    assert page.matches == len(mailers(items))
    assert page.searched is None and page.next_part is None and page.previous_part is None
    beyond = job_list("retries", ListQuery(q="Mailer", part=2))
    assert beyond.matches == 0 and beyond.searched is None and beyond.next_part is None
    assert beyond.previous_part == (1, PART, "?q=Mailer")


def test_a_part_past_the_end_links_back_to_the_last_part(r: redis.Redis) -> None:
    fill(r, "queue:x", 150)
    for query in (ListQuery(q="Mailer", part=5), ListQuery(facets=True, part=5)):
        page = job_list("queue", query, queue="x")
        assert page.searched is None and page.next_part is None
        assert page.previous_part == (101, 150, query.url(part=2))


def test_a_queue_is_searched_a_part_at_a_time_newest_first(r: redis.Redis) -> None:
    items = fill(r, "queue:x", 230)[::-1]  # a queue lists the newest first
    page = job_list("queue", ListQuery(q="Mailer", part=2, facets=True), queue="x")
    assert page.matches == len(mailers(items[100:200]))
    assert [row.jid for row in page.rows] == mailers(items[100:200])[:25]
    counted = {c.label: c.count for c in page.job_choices if c.count is not None}
    assert counted["Mailer"] == page.matches
    assert page.searched == (101, 200) and page.next_part == (
        201,
        230,
        "?q=Mailer&_facets=1&part=3",
    )


def test_counts_kept_by_the_retry_set_are_never_a_part(r: redis.Redis) -> None:
    items = fill(r, "retry", 250)
    page = job_list("retries", ListQuery(job="Mailer"))
    assert page.matches == len(mailers(items)) and page.searched is None
    r.zadd("schedule", {m: s for m, s in r.zrange("retry", 0, -1, withscores=True)})
    scheduled = job_list("scheduled", ListQuery(job="Mailer"))
    assert scheduled.searched == (1, 100) and scheduled.matches == len(mailers(items[:100]))


def test_the_api_reads_a_part_or_every_entry(r: redis.Redis) -> None:
    items = fill(r, "retry", 250)
    keep = Filter(text="Mailer")
    part = RetrySet().page(0, 25, keep, first=200)
    assert part.part == (200, 250) and part.matches == len(mailers(items[200:]))
    whole = RetrySet().page(0, 25, keep, all_entries=True)
    assert whole.part is None and whole.matches == len(mailers(items))
    fill(r, "queue:x", 150)
    assert Queue("x").page(0, 25, keep).part == (0, 100)
    assert ScheduledSet().page(0, 25, keep).part is None  # empty: nothing to part


def test_an_action_on_every_match_asks_about_and_reaches_the_whole_list(r: redis.Redis) -> None:
    items = fill(r, "retry", 250)
    wanted = len(mailers(items))
    params = ListQuery(q="Mailer")
    form = MultiDict({"action": "kill", "select_across": "1"})
    asked = list_action("retries", form, params, everyone)
    assert f"{wanted:,}" in asked.question
    form["confirm"] = "yes"
    done = list_action("retries", form, params, everyone)
    assert done.ok and RetrySet().size == 250 - wanted


def test_the_part_is_kept_by_paging_and_dropped_by_a_new_filter() -> None:
    query = ListQuery.parse({"q": "x", "part": "3", "p": "2"})
    assert (query.part, query.page, query.first) == (3, 2, 2 * PART)
    assert query.url(page=3) == "?q=x&part=3&p=3"
    assert query.url(facets=True) == "?q=x&_facets=1&part=3"
    assert query.url(job="J") == "?q=x&job=J&part=3"  # a choice among the part's counts
    assert query.url(q="y") == "?q=y"  # new search text: from the start
    assert ListQuery(part=2).url() == "?"  # no filter: no part
    assert ListQuery.parse({"part": "none"}).part == 1


def test_counts_alone_count_a_part_and_leave_the_rows_and_pages_whole(r: redis.Redis) -> None:
    items = fill(r, "queue:x", 230)[::-1]
    page = job_list("queue", ListQuery(facets=True, page=9, part=2), queue="x")
    assert page.matches is None and page.paging.pages == 10  # 230 jobs, 25 a page
    assert [row.jid for row in page.rows] == [i["jid"] for i in items[200:225]]
    counted = {c.label: c.count for c in page.job_choices if c.count is not None}
    assert counted == {n: sum(shown(i) == n for i in items[100:200]) for n in counted}
    assert sum(counted.values()) == 100
    assert page.searched == (101, 200) and page.next_part == (201, 230, "?_facets=1&part=3")
    assert page.facets_url == "?p=9"  # counts off: no part


def test_a_choice_in_the_sidebar_stays_in_the_part_it_counted(r: redis.Redis) -> None:
    fill(r, "retry", 250)
    page = job_list("retries", ListQuery(q="user", part=2, facets=True))
    mailer = next(c for c in page.job_choices if c.label == "Mailer")
    chosen = job_list("retries", ListQuery.parse(dict(parse_qsl(mailer.url[1:]))))
    assert chosen.searched == (101, 200) and chosen.matches == mailer.count


def test_a_list_that_grew_while_searched_links_its_new_part(
    r: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    fill(r, "queue:x", 95)
    scan = listing._scan

    def pushed_meanwhile(*args: Any) -> Any:  # 20 pushes land as the walk starts
        if r.llen("queue:x") == 95:
            r.lpush("queue:x", *[json.dumps({"class": "Late", "args": [n]}) for n in range(20)])
        return scan(*args)

    monkeypatch.setattr(listing, "_scan", pushed_meanwhile)
    page = job_list("queue", ListQuery(q="Mailer"), queue="x")
    assert page.size == 115 and page.next_part == (101, 115, "?q=Mailer&part=2")


def test_a_counted_set_that_cannot_be_counted_is_walked_whole(
    r: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    items = fill(r, "dead", 250)
    read = tallies.read
    monkeypatch.setattr(
        tallies, "read", lambda *args: dataclasses.replace(read(*args), tallies=None)
    )
    page = job_list("dead", ListQuery(job="Mailer"))
    assert page.searched is None and page.matches == len(mailers(items))
