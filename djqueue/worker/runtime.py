"""What a processor thread and the async runner are given instead of the manager.

They used to reach into ten of the manager's attributes; what they need is this: the buffer
they take jobs from and hand them back to, the steps every job runs through, where a failed
job is settled, and the two moments of a shutdown. The manager builds one and keeps the rest
(starting, replacing and stopping processors) to itself.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .buffer import JobBuffer
from .settle import Settle


@dataclass(frozen=True)
class Runtime:
    buffer: JobBuffer
    #: Every job's runtime steps (`djqueue.pipeline`), thread-run and ``async def`` alike.
    steps: Sequence[Any]
    settle: Settle
    #: Set when going quiet: finish the job in hand, fetch nothing more.
    quieting: threading.Event
    #: Set once shutdown has pushed unfinished jobs back: stop retrying Redis writes.
    hard_stop: threading.Event
