"""The line from a swarm's worker process to its parent: what the worker was told.

A parent that forks ``--processes N`` sees its children only through their exit codes, which
come too late and say too little: a child that was quieted from the Busy page and then died
must not be replaced by a fresh child that takes jobs mid-deploy, and a child stopped from the
Busy page must not come back under a new identity. So each child holds the write end of a pipe
to its parent (`attach`, done by `djqueue.worker.swarm` right after the fork) and says, one
byte each, when it is told to quiet (`QUIET`) or to stop (`STOP`), whoever told it: an OS
signal, its parent passing one on, or ``IDENTITY-signals`` popped by its heartbeat. Outside a
swarm there is no line and `tell` does nothing.

The other way round, the parent must see a child stuck in a job past its hard time limit even
when the child can run no Python at all: the child keeps its jobs' earliest hard deadline in a
cell of memory shared with the parent (`Deadlines`), read at every pass of the parent's loop.
"""

from __future__ import annotations

import mmap
import os
import struct

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


# -- the hard deadline of the jobs a child runs ------------------------------------------------

#: The shared cell of this child (the parent's `Deadlines` and this child's slot), if any.
_cell: tuple[Deadlines, int] | None = None


class Deadlines:
    """One shared memory cell per slot of a swarm, made by the parent before it forks: the
    earliest hard deadline (``time.monotonic()``, which every process of a host shares) of the
    jobs the slot's child is running, 0 for none. A child writes its cell when a job with a
    time limit starts or ends (`djqueue.worker.time_limit`), from the job's own thread, so a
    job that then holds the interpreter in C code cannot keep its deadline from the parent;
    the parent reads every cell at each pass and replaces a child that is past its own."""

    def __init__(self, slots: int) -> None:
        self.memory = mmap.mmap(-1, 8 * max(1, slots))

    def write(self, slot: int, deadline: float) -> None:
        struct.pack_into("d", self.memory, 8 * slot, deadline)

    def read(self, slot: int) -> float:
        value: float = struct.unpack_from("d", self.memory, 8 * slot)[0]
        return value


def attach_deadline(deadlines: Deadlines, slot: int) -> None:
    """In a swarm's child: publish hard deadlines in ``slot`` of ``deadlines``."""
    global _cell
    _cell = (deadlines, slot)


def attached() -> bool:
    """Whether this process is a swarm's child whose parent watches its deadlines."""
    return _cell is not None


def publish_deadline(deadline: float) -> None:
    """Tell the parent the earliest hard deadline of this process's jobs (0: none)."""
    if _cell is not None:
        _cell[0].write(_cell[1], deadline)
