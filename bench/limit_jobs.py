"""The jobs of ``bench.limits_bench`` (loaded with ``djqueue worker -r bench.limit_jobs``)."""

from __future__ import annotations

import time

from bench.jobs import _r
from djqueue import job


@job(name="bench.free", retry=False)
def free(total: int) -> None:
    """An unlimited job; the one that completes the count marks the end of the clock."""
    if _r().incr("bench:free") == total:
        _r().set("bench:end", repr(time.time()))


@job(name="bench.limited", retry=False, concurrency=1)
def limited(index: int) -> None:
    """Refused for the whole run: the bench holds its one slot."""
