"""Paused queues: a set of queue names that no djqueue worker takes jobs from.

Pausing is a flag, not a move: the queue's jobs stay where they are and pushes still land
there. Workers read the set with every heartbeat, inside ``beat.lua`` (`ProcessStore.beat`),
so a pause reaches every worker within one beat without a round trip of its own, and the
fetch (`djqueue.worker.fetch`) leaves those queues out of its order. The set lives under
djqueue's own prefix (``NS:djqueue:paused``): Sidekiq Pro keeps its pauses in a layout of its
own, which a plain Sidekiq process ignores anyway, so the flag is djqueue's alone.
"""

from __future__ import annotations

import redis

from . import bad_keys
from .keys import Keys
from .replies import texts

#: What is done when the set holds another type: nothing counts as paused.
SKIPPED = "skipped: no queue counts as paused"


def pause(client: redis.Redis, keys: Keys, name: str) -> bool:
    """Pause queue ``name``; True when it was not paused yet."""
    return bool(client.sadd(keys.paused, name))


def resume(client: redis.Redis, keys: Keys, name: str) -> bool:
    """Resume queue ``name``; True when it was paused."""
    return bool(client.srem(keys.paused, name))


def is_paused(client: redis.Redis, keys: Keys, name: str) -> bool:
    """Whether queue ``name`` is paused (never, while the set is not a set: logged once)."""
    found = bad_keys.tolerate(
        client, keys.paused, "set", SKIPPED, lambda: client.sismember(keys.paused, name), 0
    )
    return bool(found)


def paused_names(client: redis.Redis, keys: Keys) -> list[str]:
    """The paused queues' names, sorted (none while the set is not a set: logged once)."""
    found = bad_keys.tolerate(
        client, keys.paused, "set", SKIPPED, lambda: client.smembers(keys.paused), set()
    )
    return texts(found)
