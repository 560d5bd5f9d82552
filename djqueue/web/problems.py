"""Bad keys on the pages: what a page says when a key it reads holds the wrong type.

A page whose one subject is a bad key (a queue whose key is a string, the retry set stored as
a list) answers with `bad_key_page` instead of a 500. A page that reads many keys (the
dashboard, the queues, the busy page) shows what it can and lists the bad ones as
`problems`: one line per key, naming it and what it holds, in the words the worker's log uses.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import BadKey

#: What the reader can do about a bad key, under its name.
ADVICE = (
    "Workers skip this key and serve everything else. Look at it with redis-cli (TYPE, then "
    "GET, LRANGE, HGETALL...), then delete or fix it, and reload this page."
)


@dataclass
class BadKeyPage:
    title: str
    error: str
    advice: str


def bad_key_page(error: BadKey) -> BadKeyPage:
    """The page answered in place of one whose key holds the wrong type."""
    return BadKeyPage(title=f"Bad key {error.key}", error=str(error), advice=ADVICE)


def problem(key: str, what: str) -> str:
    """One line of a page's problems: the key and what is wrong with it."""
    return str(BadKey(key, what))
