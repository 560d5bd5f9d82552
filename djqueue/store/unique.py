"""Reading a unique job's lock (`djqueue.unique`): who holds it and for how long.

The lock is taken and freed inside the job transitions (``lua/unique.lua``); this is the one
read of it, for the job pages.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import redis.exceptions

from .bad_keys import is_wrong_type
from .keys import Keys
from .replies import text


class Lock(NamedTuple):
    """``holder``: the jid holding the lock (``""``: free); ``ttl``: seconds it lives on
    (None when free); ``problem``: what is wrong with the key, or ``""``."""

    holder: str
    ttl: float | None
    problem: str = ""


def read_lock(redis_client: Any, keys: Keys, digest: str) -> Lock:
    """The lock named ``digest``, in one round trip (GET and PTTL pipelined)."""
    key = keys.unique(digest)
    pipe = redis_client.pipeline(transaction=False)
    pipe.get(key)
    pipe.pttl(key)
    holder, ttl = pipe.execute(raise_on_error=False)
    if isinstance(holder, redis.exceptions.ResponseError):
        if not is_wrong_type(holder):
            raise holder
        return Lock("", None, f"{key} is not a string; the next push of this job replaces it")
    if holder is None:
        return Lock("", None)
    return Lock(text(holder), ttl / 1000.0 if isinstance(ttl, int) and ttl >= 0 else None)
