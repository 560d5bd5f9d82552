"""The line from a swarm's worker process to its parent: what the worker was told.

A parent that forks ``--processes N`` sees its children only through their exit codes, which
come too late and say too little: a child that was quieted from the Busy page and then died
must not be replaced by a fresh child that takes jobs mid-deploy, and a child stopped from the
Busy page must not come back under a new identity. So each child holds the write end of a pipe
to its parent (`attach`, done by `djqueue.worker.swarm` right after the fork) and says, one
byte each, when it is told to quiet (`QUIET`) or to stop (`STOP`), whoever told it: an OS
signal, its parent passing one on, or ``IDENTITY-signals`` popped by its heartbeat. Outside a
swarm there is no line and `tell` does nothing.
"""

from __future__ import annotations

import os

#: The worker was told to quiet (TSTP): it fetches no more jobs.
QUIET = b"q"
#: The worker was told to stop (TERM, INT): it is on its way out and must not be replaced.
STOP = b"s"

_line: int | None = None


def attach(fd: int) -> None:
    """In a swarm's child: ``fd`` is the write end of the pipe its parent reads."""
    global _line
    _line = fd


def tell(word: bytes) -> None:
    """Say ``word`` to the parent, if this process has one that listens. A parent gone is no
    error here: the worker notices at its next heartbeat and stops."""
    if _line is None:
        return
    try:
        os.write(_line, word)
    except OSError:
        pass
