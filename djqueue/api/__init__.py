"""The inspection API: what is in Redis, read and changed the way Sidekiq's API does.

Queues, the scheduled / retry / dead sets, worker processes, busy work and the counters, for
admin pages, dashboards, scripts and a shell. It reads data written by djqueue and by Sidekiq
6.4 to 8 alike (integer-millisecond timestamps included)::

    from djqueue.api import DeadSet, Queue, Stats

    Stats().enqueued
    Queue("mailers").find_job(jid).delete()
    DeadSet().retry_all()

Every object takes optional ``settings`` and ``redis_client``; by default it uses the process
settings and connection pool. Nothing is read until a property or method asks.
"""

from __future__ import annotations

from .batches import Batch, Batches
from .listing import Filter, Listing
from .periodic import PeriodicJob, PeriodicSet
from .process import Process, ProcessSet
from .queue import Queue, QueueSummary
from .record import JobRecord, SortedEntry
from .server import RedisInfo
from .sorted_set import DeadSet, RetrySet, ScheduledSet, SortedSet
from .stats import History, Stats
from .work import Work, WorkSet

__all__ = [
    "Batch",
    "Batches",
    "DeadSet",
    "Filter",
    "PeriodicJob",
    "PeriodicSet",
    "History",
    "JobRecord",
    "Listing",
    "Process",
    "ProcessSet",
    "Queue",
    "QueueSummary",
    "RedisInfo",
    "RetrySet",
    "ScheduledSet",
    "SortedEntry",
    "SortedSet",
    "Stats",
    "Work",
    "WorkSet",
]
