"""Find-by-jid for queues and sorted sets, scanned inside Redis by ``find_jid.lua``.

One script call looks at up to `SCAN_PER_CALL` entries, so Redis is never busy for long
(about 10 ms per 10,000 jobs of 300 bytes on a small machine), and a queue of a few thousand
jobs costs one round trip. Sidekiq instead copies the queue page by page to the client.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..scripts import Script

_find_jid = Script("djqueue.api", "find_jid")

#: Entries one script call scans before handing back to the caller.
SCAN_PER_CALL = 10_000
#: Most candidates one call returns; a jid quoted in more arguments than this is unheard of.
CANDIDATES = 50


def candidates(redis: Any, key: str, jid: str, kind: str) -> Iterator[tuple[Any, Any]]:
    """``(member, position)`` pairs that contain ``jid`` as text, in order (``kind`` is
    ``"list"`` or ``"zset"``; the position is the list index or the score)."""
    start = 0
    while start >= 0:
        reply = _find_jid(redis, [key], [jid, kind, CANDIDATES, start, SCAN_PER_CALL])
        start = int(reply[0])
        for index in range(1, len(reply), 2):
            yield reply[index], reply[index + 1]
