"""What a page says when it cannot show its subject: Redis does not answer (`unavailable_page`,
a 503), or a key it reads holds the wrong type (`bad_key_page`). Both mounts render the one
`ProblemPage` with their frame's ``problem.html``.

A page whose one subject is a bad key (a queue whose key is a string, the retry set stored as
a list) answers with `bad_key_page` instead of a 500. A page that reads many keys (the
dashboard, the queues, the busy page) shows what it can and lists the bad ones as
`problems`: one line per key, naming it and what it holds, in the words the worker's log uses.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from ..errors import BadKey, RedisUnavailable
from .i18n import gettext

#: The redis-cli read that shows a key of each type (as ``TYPE`` names it), whole.
READS = {
    "string": "GET {key}",
    "list": "LRANGE {key} 0 -1",
    "hash": "HGETALL {key}",
    "set": "SMEMBERS {key}",
    "zset": "ZRANGE {key} 0 -1 WITHSCORES",
}


@dataclass
class ProblemPage:
    title: str
    error: str
    advice: str
    status: int = 200


def advice(key: str, held: str = "") -> str:
    """What the reader can do about a bad key, under its name: the redis-cli read that fits
    what it holds (``held``, a ``TYPE`` name), or how to find it when that was not read."""
    read = READS.get(held)
    look = (
        f"redis-cli {read.format(key=shlex.quote(key))}"
        if read
        else gettext(
            "redis-cli (TYPE, then GET for a string, LRANGE for a list, HGETALL for a hash, "
            "SMEMBERS for a set, ZRANGE for a sorted set)"
        )
    )
    return gettext(
        "Workers skip this key and serve everything else. Look at it with %(read)s, then "
        "delete or fix it, and reload this page."
    ) % {"read": look}


def bad_key_page(error: BadKey) -> ProblemPage:
    """The page answered in place of one whose key holds the wrong type."""
    return ProblemPage(
        title=bad_key_title(error.key), error=str(error), advice=advice(error.key, error.held)
    )


def unavailable_page(error: RedisUnavailable, setting: str) -> ProblemPage:
    """The 503 every page answers when Redis does not: the URL (password hidden) and the
    setting, spelt as the framework spells it, that names the Redis."""
    advice = gettext(
        "The page shows what is in Redis, and Redis did not answer. Check that it runs and "
        "that %(setting)s points at it, then reload this page."
    ) % {"setting": setting}
    return ProblemPage(gettext("Redis is unavailable"), str(error), advice, status=503)


def bad_key_title(key: str) -> str:
    """The title of a page, or a banner, about the bad key ``key``."""
    return gettext("Bad key %(key)s") % {"key": key}


def problem(key: str, what: str) -> str:
    """One line of a page's problems: the key and what is wrong with it."""
    return str(BadKey(key, what))
