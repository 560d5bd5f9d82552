"""Search text a person may type that means something to a matcher: glob specials (``*?[]\\``),
Lua pattern specials (``%.()-^$``), quotes, letters beyond ASCII and any case. Each is found
as the plain text it is, in a set and in a queue, by the rule the search box states: a
substring of the job's JSON as JSON spells the text inside a string, whatever the case of
its ASCII letters, and a jid only as written."""

from __future__ import annotations

import json

import pytest
import redis

from djqueue.api import Filter, Queue, RetrySet
from djqueue.web.lists import job_list
from djqueue.web.query import ListQuery, spelled

#: Arguments of the stored jobs, one job each.
TEXTS = [
    "a*b",
    "what?",
    "[x] done",
    "back\\slash",
    'say "hi"',
    "it's",
    "École",
    "naïve CAFÉ",
    "100% sure",
    "f(x).y - z^2$",
    "plain",
    "PLAIN words",
]

#: What is typed into the box: each text, parts of them, other cases, and glob-only input.
TYPED = [
    *TEXTS,
    "*",
    "?",
    "[",
    "]",
    "\\",
    "[x]",
    "a*",
    '"hi"',
    'SAY "HI"',
    "'",
    "école",
    "ÉCOLE",
    "Café",
    "café",
    "%",
    "% s",
    "(x).",
    "^2$",
    "-",
    "Plain",
    "plain words",
    "[[:alpha:]]",
    "\\u00e9",
    "zzz",
]

_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def stored(n: int, ascii_only: bool) -> tuple[str, str]:
    jid = f"{n:024x}"
    item = {"class": "Hostile", "args": [TEXTS[n]], "jid": jid, "queue": "default"}
    return jid, json.dumps(item, ensure_ascii=ascii_only, separators=(",", ":"))


def found_by_rule(raw: str, jid: str, typed: str) -> bool:
    """The stated rule: the text as JSON spells it, exact, or in any ASCII case outside the
    jid (Redis's Lua lowers ASCII letters only)."""
    text = spelled(typed)
    if text in raw:
        return True
    rest = raw.replace(f'"jid":"{jid}"', "")
    return text.translate(_ASCII_LOWER) in rest.translate(_ASCII_LOWER)


@pytest.mark.parametrize("ascii_only", [False, True], ids=["utf-8", "ascii-escaped"])
def test_typed_text_is_found_as_plain_text_in_a_set_and_a_queue(
    r: redis.Redis, ascii_only: bool
) -> None:
    entries = [stored(n, ascii_only) for n in range(len(TEXTS))]
    r.zadd("retry", {raw: n for n, (_, raw) in enumerate(entries)})
    for _, raw in reversed(entries):
        r.lpush("queue:default", raw)
    for typed in TYPED:
        want = [jid for jid, raw in entries if found_by_rule(raw, jid, typed)]
        in_set = RetrySet().page(0, 50, Filter(text=spelled(typed)))
        assert [e.jid for e in in_set.records] == want, typed
        assert in_set.matches == len(want), typed
        in_queue = Queue("default").page(0, 50, Filter(text=spelled(typed)))
        assert sorted(e.jid for e in in_queue.records) == sorted(want), typed
        page = job_list("retries", ListQuery(q=typed))  # what the box sends, unescaped
        assert [row.jid for row in page.rows] == want, typed


def test_the_search_rule_finds_what_a_person_expects(r: redis.Redis) -> None:
    entries = [stored(n, False) for n in range(len(TEXTS))]
    r.zadd("retry", {raw: n for n, (_, raw) in enumerate(entries)})

    def found(typed: str) -> list[str]:
        return [TEXTS[int(row.jid, 16)] for row in job_list("retries", ListQuery(q=typed)).rows]

    assert found("*") == ["a*b"] and found("?") == ["what?"]  # no glob: plain characters
    assert found("[x]") == ["[x] done"] and found("\\") == ["back\\slash"]
    assert found('SAY "HI"') == ['say "hi"'] and found("%") == ["100% sure"]
    assert found("plain") == ["plain", "PLAIN words"]  # any ASCII case
    assert found("école") == [] and found("École") == ["École"]  # beyond ASCII: as written
    assert found("naïve café") == []  # É is not lowered, so CAFÉ is not café
    assert found("[[:alpha:]]") == [] and found("zzz") == []
