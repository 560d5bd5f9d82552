"""Keys of the wrong kind: logged once by name, however often they are met.

A key holding the wrong type (a string where ``recoveries`` should be a hash), or a counter
that is not a number, must never stop a subsystem: the store's scripts check before they
write, skip or repair the bad entry, and return what they found as (key, problem) pairs
(``lua/bad_keys.lua``). A worker meets the same bad key on every fetch and every beat, so
this module remembers what it has logged, process-wide: one line per key and problem (what
the key holds, whatever the caller does about it), then quiet until the problem changes, or
until a check that covers the key finds it sound again (one line saying so).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import redis.exceptions

from .calls import Steps, execute
from .replies import text

logger = logging.getLogger("djqueue.store")

#: Keys remembered at most; the oldest are forgotten first (a flood of distinct bad status
#: keys must not grow the process).
MEMORY = 1000

_lock = threading.Lock()
_logged: dict[str, str] = {}

#: Redis type names as a person reads them, where they differ (``TYPE`` says "zset").
_TYPE_WORDS = {"zset": "sorted set"}


def type_name(kind: str) -> str:
    """A Redis type (as ``TYPE`` names it) with its article: "a string", "a sorted set"."""
    return f"a {_TYPE_WORDS.get(kind, kind)}"


def kind_problem(kind: str, wanted: str) -> str | None:
    """What is wrong with a key holding a ``kind`` where a ``wanted`` belongs (both as
    ``TYPE`` names them): ``"holds a list, not a sorted set"``, or None when it holds one or
    nothing. The scripts say the same in the same words (``key_is`` in ``lua/bad_keys.lua``)."""
    return None if kind in (wanted, "none") else f"holds {type_name(kind)}, not {type_name(wanted)}"


def held(redis_client: Any, key: str) -> str:
    """The Redis type ``key`` holds, as ``TYPE`` names it ("none" when absent)."""
    return text(redis_client.type(key))


def wrong_type(redis_client: Any, key: str, wanted: str) -> str | None:
    """What is wrong with ``key`` when it should hold a ``wanted`` (a Redis type name), or
    None when it holds one or nothing (`kind_problem`)."""
    return execute(redis_client, wrong_type_steps(key, wanted))


def wrong_type_steps(key: str, wanted: str) -> Steps[str | None]:
    """`wrong_type` as `djqueue.store.calls` steps, for a sync or an asyncio client."""
    return kind_problem(text((yield ("TYPE", key))), wanted)


def met(redis_client: Any, key: str, wanted: str, doing: str) -> tuple[str, str]:
    """``key`` answered WRONGTYPE where a ``wanted`` belongs: the (key, problem) pair to
    `report`, with what the caller does about it (``doing``: "skipped: ...")."""
    return key, f"{wrong_type(redis_client, key, wanted) or 'is not ' + type_name(wanted)}; {doing}"


def tolerate(
    redis_client: Any, key: str, wanted: str, doing: str, call: Callable[[], Any], default: Any
) -> Any:
    """``call()``, a read of ``key``; ``default`` when ``key`` answers WRONGTYPE (it does not
    hold a ``wanted``), the key reported once by name with what is done (``doing``)."""
    try:
        return call()
    except redis.exceptions.ResponseError as exc:
        if not is_wrong_type(exc):
            raise
    report([met(redis_client, key, wanted, doing)])
    return default


def checked(
    redis_client: Any, pipe: Any, wanted: Sequence[tuple[str, str]]
) -> tuple[list[Any], list[tuple[str, str]]]:
    """Run ``pipe``, one command per (key, Redis type) of ``wanted``, in that order; a key of
    the wrong type reads as None and is returned among the problems, (key, what is wrong),
    so a page reading many keys shows the others. A counter (type ``"count"``: a string
    holding an integer) that does not hold one is a problem too; type ``""`` checks nothing."""
    replies = pipe.execute(raise_on_error=False) if wanted else []
    problems: list[tuple[str, str]] = []
    for i, ((key, kind), reply) in enumerate(zip(wanted, replies, strict=True)):
        if isinstance(reply, redis.exceptions.ResponseError) and is_wrong_type(reply):
            problem = wrong_type(redis_client, key, "string" if kind == "count" else kind)
            problems.append((key, problem or str(reply)))
            replies[i] = None
        elif isinstance(reply, Exception):
            raise reply
        elif kind == "count" and (problem := not_a_count(reply)):
            problems.append((key, problem))
            replies[i] = None
    return replies, problems


def not_a_count(value: Any) -> str | None:
    """What is wrong with a counter's value (None: absent or an integer), in the words of
    ``key_is_count`` in ``lua/bad_keys.lua``."""
    if value is None:
        return None
    shown = text(value)
    try:
        int(shown)
    except ValueError:
        return f"holds {quoted(shown)}, not an integer"
    return None


def quoted(value: str) -> str:
    """A value as a problem's text quotes it, cut short."""
    cut = value[:40].replace("\\", "\\\\").replace('"', '\\"')
    return f'"{cut}"'


def is_wrong_type(exc: BaseException) -> bool:
    """True for Redis's WRONGTYPE error (a pipeline's error names its command first)."""
    return "WRONGTYPE" in str(exc)


def pairs(flat: Sequence[Any] | None) -> list[tuple[str, str]]:
    """A script's flat ``{key, problem, key, problem, ...}`` reply as (key, problem) pairs."""
    if not flat:
        return []
    return [(text(flat[i]), text(flat[i + 1])) for i in range(0, len(flat) - 1, 2)]


def report(found: Iterable[tuple[str, str]], checked: Iterable[str] = ()) -> None:
    """Log each (key, problem) not logged yet with that problem. ``checked``: keys the caller
    verified this time; those not in ``found`` are sound again (logged once if they were
    reported)."""
    found = list(found)
    news: list[tuple[str, str]] = []
    healed: list[str] = []
    with _lock:
        for key, problem in found:
            held = problem.split(";")[0]  # what is wrong, not what this caller does about it
            if _logged.get(key) != held:
                _logged.pop(key, None)
                _logged[key] = held
                news.append((key, problem))
        bad = {key for key, _ in found}
        for key in checked:
            if key not in bad and _logged.pop(key, None) is not None:
                healed.append(key)
        while len(_logged) > MEMORY:
            del _logged[next(iter(_logged))]
    for key, problem in news:
        logger.error("bad key %s: it %s (delete or fix the key)", key, problem)
    for key in healed:
        logger.info("key %s is sound again", key)


def forget() -> None:
    """Forget every key logged (tests, and a fresh start)."""
    with _lock:
        _logged.clear()
