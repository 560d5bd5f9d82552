"""The launcher: one worker process's runtime, start to finish.

It builds the process's parts from the settings in one place (`Launcher.__init__`) and holds
them in one list, `Launcher.parts`: the manager (with its processors), the time limits'
watchdog, the poller, the periodic poller, the duties and the heartbeat. Every part is
started, quieted and stopped the same way (`djqueue.worker.component.Part`), in that one
order: the manager first, so a stop waits for running jobs before anything else ends, and the
heartbeat last, so the process shows alive until it is gone. The janitor is no part: it runs
on the heartbeat's thread after each beat.

The launcher turns signals (from the OS or popped from ``IDENTITY-signals`` by the heartbeat)
into quiet, stop and thread dumps. `run` blocks until a stop; the CLI installs the OS signal
handlers around it.
"""

from __future__ import annotations

import os
import queue
import secrets
import sys
import threading
import time
import traceback
from typing import Any

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from .. import __version__, connection, periodic_declaration, registry, signals
from ..config import Settings, get_settings
from ..errors import ConfigurationError
from ..store import JobStore, Keys
from . import parent_line
from .backoff import REDIS_ERRORS, GaveUp, keep_trying, outage
from .component import Part
from .duties import DutyThread
from .fetch import Fetcher
from .heartbeat import Heartbeat, HeartbeatThread, capsule
from .janitor import Janitor, hostname
from .log import logger
from .manager import Manager
from .memory import MemoryLimit
from .metrics import MetricsTally
from .periodic_poller import PeriodicPoller
from .poller import Poller
from .tally import Tally

#: Seconds between two looks at the queues of a ``--burst`` worker.
BURST_CHECK = 0.2

#: BLMOVE timeout of idle processors: how long a quiet or stopping worker may wait for them.
BLOCK_TIMEOUT = 2.0
#: Exit code of a process that stopped to be replaced (over ``max_memory`` or ``max_jobs``):
#: the swarm's parent starts a new one at once (EX_TEMPFAIL).
RECYCLED = 75
#: Seconds within which a second TERM/INT counts as the first one delivered twice.
SAME_SIGNAL = 1.0


#: Connections the runtime needs beside one per processor: heartbeat, poller, periodic jobs,
#: janitor, duties, shutdown.
RUNTIME_CONNECTIONS = 8


def runtime_redis(settings: Settings) -> redis.Redis:
    """A client of the runtime's own: no silent retries inside redis-py, since a retried
    fetch could take a second job whose reply is lost; the runtime retries itself. Its pool
    is sized from the workload: every idle processor holds a connection in BLMOVE."""
    return connection.make_redis(
        settings,
        max_connections=max(settings.max_connections, settings.concurrency + RUNTIME_CONNECTIONS),
        retry=Retry(NoBackoff(), 0),
        socket_timeout=max(settings.socket_timeout, BLOCK_TIMEOUT + 3),
    )


class Launcher:
    """``Launcher(settings).run()``; or `start` and later `stop` when embedding it.

    ``block_timeout`` is how long an idle processor waits in BLMOVE before looking again; it
    bounds how long an idle worker takes to stop.
    """

    def __init__(
        self,
        settings: Settings | None = None,
        redis_client: redis.Redis | None = None,
        block_timeout: float = BLOCK_TIMEOUT,
    ) -> None:
        self.settings = settings or get_settings()
        s = self.settings
        self.redis = redis_client or runtime_redis(s)
        self.keys = Keys(s.namespace)
        self.jobs = JobStore(self.redis, self.keys, s.dead_max_jobs, s.dead_timeout)
        self.hostname = hostname()
        self.identity = f"{self.hostname}:{os.getpid()}:{secrets.token_hex(6)}"
        self.started_at = time.time()
        #: Signal names to act on, put by OS signal handlers and by the heartbeat.
        self.signals: queue.SimpleQueue[str] = queue.SimpleQueue()
        #: Set by the first TERM/INT: every wait of the start-up gives up, the run loop stops.
        self.stopping = threading.Event()
        #: Set by a second TERM/INT during shutdown: stop waiting for running jobs.
        self.forced = threading.Event()
        self.stopped = threading.Event()
        #: Why the process is being replaced, once it is (`over_limit`).
        self.recycling: str | None = None
        self._recycle_lock = threading.Lock()
        #: Set once the parts were told to go quiet (`quiet` acts once).
        self._quieted = False
        self._stop_asked = 0.0
        #: The process this one stops without (a swarm's parent, a reloader), else None.
        self.parent: int | None = None
        #: ``--burst``: stop, as on TERM, once the queues are empty and nothing runs.
        self.burst = False
        self._drained_once = False

        # -- the parts, built from the settings ------------------------------------------------
        self.tally = Tally(MetricsTally() if s.metrics else None)
        try:
            #: The periodic jobs this process declares (code and settings).
            self.periodic = periodic_declaration.declared(s.periodic)
        except (TypeError, ValueError) as exc:
            raise ConfigurationError("periodic", str(exc)) from None
        self.fetcher = Fetcher(self.redis, self.keys, self.identity, s.queues, block_timeout)
        self.memory = MemoryLimit(s.max_memory, self.recycle) if s.max_memory else None
        self.manager = Manager(s, self.jobs, self.fetcher, self.tally, self.memory, self.forced)
        self.poller = Poller(self.jobs, self.keys, s, self._slot)
        self.periodic_poller = PeriodicPoller(s, self.redis, declarations=self.periodic)
        #: The frameworks' periodic duties (the outbox relay), read once, here.
        self.duties = DutyThread(s.poll_interval)
        self.heartbeat = Heartbeat(
            self.redis,
            self.keys,
            self.identity,
            self.info,
            self.tally,
            self.fetcher,
            self.manager.quieting.is_set,
        )
        self.janitor = Janitor(
            self.redis,
            self.keys,
            self.identity,
            self.fetcher,
            self.manager.in_hand,
            lock_seconds=s.heartbeat_interval,
            batch_retention=s.batch_retention,
            default_queue=s.default_queue,
        )
        self.beats = HeartbeatThread(self.heartbeat, s.heartbeat_interval, self._after_beat)
        #: Started, quieted and stopped in this order (see the module's docstring).
        self.parts: list[Part] = [
            self.manager,
            self.manager.time_limit,
            self.poller,
            self.periodic_poller,
            self.duties,
            self.beats,
        ]

    @property
    def info(self) -> dict[str, Any]:
        """The ``info`` JSON of the process hash (the fields Sidekiq's UI reads)."""
        s = self.settings
        weights = {name: weight for name, weight in s.queues}
        info: dict[str, Any] = {
            "hostname": self.hostname,
            "started_at": self.started_at,
            "pid": os.getpid(),
            "tag": s.tag or os.path.basename(os.getcwd()),
            "concurrency": s.concurrency,
            "queues": list(self.fetcher.names),
            "weights": [weights],
            "capsules": {"default": capsule(s.concurrency, weights)},
            "labels": list(s.labels),
            "identity": self.identity,
            "embedded": False,
            "heartbeat_interval": s.heartbeat_interval,
            "version": f"djqueue {__version__}",
            "periodic": [entry.name for entry in self.periodic],
        }
        if self.duties.duties:
            info["duties"] = sorted(self.duties.duties)
        return info

    def _after_beat(self, signal: str | None) -> None:
        if signal:
            self.signal(signal)
        if self.heartbeat.renewed and self.periodic:
            logger.warning(
                "this process's entry was gone from Redis (restarted empty, or flushed): "
                "declaring its periodic jobs again"
            )
            self.periodic_poller.redeclare()
        self.manager.tidy(self.fetcher.paused)
        self.janitor.run()
        if self.parent is not None and os.getppid() != self.parent and not self.stopping.is_set():
            logger.warning("the parent process is gone: stopping")
            self.signal("TERM")
        if self.recycling is None:
            reason = self.over_limit()
            if reason:
                self.recycle(reason)

    def recycle(self, reason: str) -> None:
        """Stop to be replaced, for ``reason`` (once: the heartbeat and every processor that
        ends a job may find the process over its limit)."""
        with self._recycle_lock:
            if self.recycling is not None:
                return
            self.recycling = reason
        # At once, from the thread that found it: a processor ending a job takes its next
        # buffered job before the main thread handles the signal below, and a process over
        # its memory limit must not start another job.
        self.manager.quieting.set()
        logger.warning(
            "recycling: %s; finishing the running jobs, then a new process takes over", reason
        )
        self.signal("RECYCLE")

    def over_limit(self) -> str | None:
        """Why this process should be replaced (``max_memory``, ``max_jobs``), or None."""
        s = self.settings
        if s.max_jobs and self.tally.total >= s.max_jobs:
            return f"{self.tally.total} jobs run (--max-jobs {s.max_jobs})"
        return self.memory.over() if self.memory else None

    def _slot(self) -> tuple[int, int]:
        peers = self.heartbeat.peers
        return peers.index(self.identity), len(peers)

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        """Announce the process, take back orphaned jobs, then start every part.

        Raises `GaveUp` when told to stop while Redis has never answered.
        """
        self.log_banner()
        outage.connecting(self.settings.safe_redis_url)
        try:
            first = keep_trying(self.heartbeat.beat, "first heartbeat", self.stopping)
        finally:
            outage.connected()
        try:
            keep_trying(self.janitor.upgrade, "upgrading the keys", self.stopping)
            keep_trying(self.janitor.sweep, "start-up sweep", self.stopping)
        except GaveUp:
            pass
        try:
            keep_trying(self.periodic_poller.declare, "periodic jobs", self.stopping)
        except GaveUp:
            pass
        for part in self.parts:
            part.start()
        if signals.worker_started.receivers:
            signals.worker_started.send(self.identity, info=self.info)
        if first:
            self.signal(first)

    def quiet(self) -> None:
        if self._quieted:
            return
        self._quieted = True
        logger.info("quiet: finishing running jobs, fetching no more")
        for part in self.parts:
            part.quiet()

    def stop(self) -> None:
        """Quiet, wait up to ``timeout`` for running jobs, push the rest back, leave."""
        if self.stopped.is_set():
            return
        logger.info("shutting down (waiting up to %.0f s for running jobs)", self.settings.timeout)
        if signals.worker_stopping.receivers:
            signals.worker_stopping.send(self.identity, info=self.info)
        deadline = time.monotonic() + self.settings.timeout
        self.quiet()
        for part in self.parts:
            part.stop(deadline)
        try:
            # Our working-lists entry stays when the push-back failed, so that a live worker
            # finds the jobs once our identity hash is gone.
            self.heartbeat.clear(drop_index=self.manager.pushed is not None)
        except REDIS_ERRORS as exc:
            logger.warning("could not remove this process from Redis (%s); it will expire", exc)
        self.stopped.set()
        logger.info("bye")

    def run(self) -> int:
        """Start, then obey signals until told to stop; returns the exit code (0)."""
        try:
            self.start()
        except GaveUp:
            logger.info("stopped before Redis could be reached; bye")
            return 0
        while True:
            try:
                name = self.signals.get(timeout=BURST_CHECK if self.burst else None)
            except queue.Empty:
                if self.drained() and not self.stopping.is_set():
                    logger.info("burst: the queues are empty and no job runs; stopping")
                    self.signal("TERM")
                continue
            if name in ("TERM", "INT"):
                self.stop()
                return 0
            if name == "RECYCLE":
                self.stop()
                return RECYCLED
            self.handle(name)

    def drained(self) -> bool:
        """``--burst``'s test: nothing waits in the queues (paused ones are not waited for:
        this process takes nothing from them) and nothing is in hand, seen twice
        in a row, `BURST_CHECK` apart (a job between its queue and a processor's hands is in
        neither for an instant). Redis unreachable: not drained; the worker waits for it."""
        try:
            empty = (
                not self.manager.in_hand()
                and not self.manager.aio.busy()
                and self.fetcher.queued() == 0
            )
        except REDIS_ERRORS:
            empty = False
        drained, self._drained_once = empty and self._drained_once, empty
        return drained

    def signal(self, name: str) -> None:
        """Ask the run loop to act on ``name`` (safe from signal handlers and other threads).

        The first TERM or INT starts the shutdown (and ends any start-up wait); a second one
        during the shutdown stops waiting for running jobs: they are pushed back to their
        queues at once, as when the timeout runs out. In a swarm's worker process, a second one
        within `SAME_SIGNAL` seconds of the first is the same request delivered twice (Ctrl-C
        and systemd reach it directly and through its parent), not an impatient operator.
        """
        if name in ("TERM", "INT"):
            if self.stopping.is_set():
                if self.parent is not None and time.monotonic() - self._stop_asked < SAME_SIGNAL:
                    return
                if not self.forced.is_set():
                    logger.warning(
                        "%s again: stopping now; unfinished jobs go back to their queues", name
                    )
                    self.forced.set()
                return
            self._stop_asked = time.monotonic()
            self.stopping.set()
            # A swarm's parent replaces a child that exits, unless it was told to stop.
            parent_line.tell(parent_line.STOP)
        self.signals.put(name)

    def handle(self, name: str) -> None:
        if name == "TSTP":
            self.quiet()
            # Only when told to: the quiet that starts a stop or a recycling is no news.
            parent_line.tell(parent_line.QUIET)
        elif name == "TTIN":
            self.dump_threads()
        else:
            logger.warning("ignoring unknown signal %r", name)

    # -- reporting ---------------------------------------------------------------------------

    def log_banner(self) -> None:
        s = self.settings
        queues = ", ".join(f"{n},{w}" if w else n for n, w in s.queues)
        lines = [
            f"djqueue {__version__} starting: {self.identity}",
            f"redis: {s.safe_redis_url}  namespace: {s.namespace or '(none)'}",
            f"queues: {queues} ({'strict order' if self.fetcher.strict else 'weighted'})",
            f"concurrency: {s.concurrency}  timeout: {s.timeout:g} s  "
            f"max retries: {s.max_retries}  poll: {s.poll_interval:g} s  "
            f"heartbeat: {s.heartbeat_interval:g} s",
            f"jobs registered: {len(registry.names())}  periodic: {len(self.periodic)}",
        ]
        for line in lines:
            logger.info(line)
        if not registry.names():
            hint = registry.missing_hint("the modules that define them")
            logger.warning("no jobs are registered: %s", hint)

    def dump_threads(self) -> None:
        frames = sys._current_frames()
        names = {t.ident: t.name for t in threading.enumerate()}
        logger.warning("thread dump: %d threads", len(frames))
        for ident, frame in frames.items():
            # One line per record: a text log escapes line breaks inside a message.
            logger.warning("thread %s (%s):", names.get(ident, "?"), ident)
            for entry in traceback.format_stack(frame):
                for text in entry.rstrip().splitlines():
                    logger.warning("  %s", text)
