"""The Redis layout: every key name, every Lua script, every atomic change of a job's state.

Nothing outside this package spells a Redis key or holds a script, and the inspection API,
`djqueue.web` and the core read through its functions. It has no threads, no policy and no
framework: the client, the worker runtime and the inspection API decide *what*
should happen to a job (retry it, bury it, push it back) and call one of the transitions here
to make it happen, the way a Dramatiq broker is the only code that knows its store.

- `keys`: key names and lifetimes (`Keys`).
- `jobs`: push, move to queue, retry later, bury, delete, clear, find (`JobStore`).
- `working`: take and acknowledge, requeue one job or a dead process's jobs (`WorkingLists`).
- `status`: a tracked job's status hash, its end, its cancellation (`StatusStore`).
- `outbox`: the transactional outbox's figures, as the last relay saw them (`OutboxStore`).
- `processes`: beat, clear, prune, remote signals, counters (`ProcessStore`).
- `metrics`: per-job metrics in Sidekiq 8's layout, written with the beat, and their read.
- `paused`: the paused queues' set (pause, resume, read); `expired`: the expired-jobs counters.
- `upgrade`: the worker-start step moving what an earlier layout wrote (`upgrade`).
- `bad_keys`: keys of the wrong type met by the scripts, logged once by name; `checked`, the
  pipeline read that names them.
- `listing`, `figures`, `periodic`: the reads of the inspection API and the pages (a queue's or a
  set's size and slices, the figures `Stats` shows, periodic jobs); `replies`: the one decoder
  of what Redis answers.
"""

from __future__ import annotations

from .jobs import JobStore
from .keys import Keys
from .outbox import OutboxFigures, OutboxStore
from .processes import SIGNALS, ProcessStore
from .status import StatusStore
from .upgrade import Upgraded, upgrade
from .working import WorkingLists, requeue_process, working_index

__all__ = [
    "SIGNALS",
    "JobStore",
    "Keys",
    "OutboxFigures",
    "OutboxStore",
    "ProcessStore",
    "StatusStore",
    "Upgraded",
    "WorkingLists",
    "requeue_process",
    "upgrade",
    "working_index",
]
