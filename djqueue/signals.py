"""Signals sent by djqueue, for code that wants to watch jobs without writing middleware.

All signals are blinker signals in one namespace. Connect with ``signal.connect(receiver)``;
receivers are called with the sender first and keyword arguments after. Receivers that raise
are not shielded: a failing ``job_enqueued`` receiver fails the push, as in blinker's design.

=====================  ====================  ==============================================
signal                 sender                keyword arguments
=====================  ====================  ==============================================
job_enqueued           the job's name        ``payload`` (dict as written to Redis)
job_not_unique         the job's name        ``payload`` (dict not written), ``holder`` (jid
                                             of the job holding the unique lock)
job_started            the job's name        ``payload``
job_succeeded          the job's name        ``payload``, ``elapsed`` (float seconds)
job_failed             the job's name        ``payload``, ``exception``, ``elapsed``
job_retry_scheduled    the job's name        ``payload``, ``exception``, ``retry_at`` (epoch s)
job_dead               the job's name        ``payload``, ``exception`` (None for bad data)
job_expired            the job's name        ``payload``, ``late`` (seconds past ``expires_at``)
worker_preparing       the worker's app,     (none)
                       or None
worker_started         the worker's identity ``info`` (dict written to the process hash)
worker_stopping        the worker's identity ``info``
worker_forking         the swarm             (none)
=====================  ====================  ==============================================

``job_not_unique`` is sent by the client for each unique job it did not write because another
job holds its lock (`djqueue.unique`), a periodic run included (``holder`` is ``""`` there).
``job_enqueued`` is sent by the client for each job written (scheduled ones, periodic runs and
relayed outbox rows included; not for a job moved back from a set, announced when first
pushed: `djqueue.client.Client.send`); the others by the worker runtime. ``job_failed`` is
sent for every failed attempt, before it is decided whether the job is retried or dead.
``job_expired`` is sent for a job taken after its deadline (``expires_in``), which does not
run: no ``job_started`` nor any other job signal is sent for that attempt.

``worker_preparing`` is sent by ``run_worker`` once the modules given with ``-r`` are imported
and the app given with ``--app`` (or by a framework's own worker command) is loaded, before the
worker reads its settings. A framework integration that owns the app makes it the worker's app
there (flask_djqueue: its settings, its context around every job) and returns True;
``djqueue worker --app`` fails when no receiver returns True.

``worker_forking`` is sent in the parent of ``--processes N`` before each fork: close there
what a child must not share with the parent and its siblings (database connections, sockets);
the Django app closes its database connections.
"""

from __future__ import annotations

from blinker import Namespace

_signals = Namespace()

job_enqueued = _signals.signal("job-enqueued")
job_not_unique = _signals.signal("job-not-unique")
job_started = _signals.signal("job-started")
job_succeeded = _signals.signal("job-succeeded")
job_failed = _signals.signal("job-failed")
job_retry_scheduled = _signals.signal("job-retry-scheduled")
job_dead = _signals.signal("job-dead")
job_expired = _signals.signal("job-expired")
worker_preparing = _signals.signal("worker-preparing")
worker_started = _signals.signal("worker-started")
worker_stopping = _signals.signal("worker-stopping")
worker_forking = _signals.signal("worker-forking")

__all__ = [
    "job_enqueued",
    "job_not_unique",
    "job_started",
    "job_succeeded",
    "job_failed",
    "job_retry_scheduled",
    "job_dead",
    "job_expired",
    "worker_preparing",
    "worker_started",
    "worker_stopping",
    "worker_forking",
]
