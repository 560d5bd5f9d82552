"""Cleaning up after processes that died without a clean exit.

Three duties, run at start-up and after every heartbeat (and, at start-up only, the upgrade of
the keys an earlier version wrote: `Janitor.upgrade`):

* **Orphaned jobs.** A process that has not beaten for three of its heartbeat intervals (or
  whose identity hash has expired), or which ran on this host under a pid that no longer
  exists, has its working lists pushed back to the front of their queues, atomically, by
  whichever live process gets there first (an earlier version's process too: its lists keep
  layout 1's names, see `djqueue.store.upgrade`). The periodic
  sweep is guarded by a short lock (``working_sweep``) so a cluster sweeps about once per beat.
* **The processes set.** Members that are dead by the same rule are removed (the store's
  prune, under Sidekiq 7's ``process_cleanup`` lock), so a dead process leaves the UI within
  a minute or so.
* **The batches' listing.** Batches older than their retention leave ``batches`` (their own
  keys expire by themselves), with the sweep: once per beat across the cluster.
* **Parked jobs.** Jobs a concurrency limiter parked go back to their queues when a slot is
  given back; the same sweep (one process per beat) sends them back while their limiters
  have free slots without that: the holder was killed and its lease ran out, the limit was
  raised, the limiter is no longer defined (`djqueue.store.limits.LimitStore.unpark`).
* **Leaked jobs in our own lists.** A reply lost to a dropped connection can leave a job in
  this process's working list that no processor knows about. A job seen there on two
  consecutive beats without a processor holding it is pushed back.
"""

from __future__ import annotations

import json
import os
import socket
import time
from collections import Counter
from collections.abc import Callable

import redis
import redis.exceptions

from ..limits import lease_seconds
from ..store import Keys, ProcessStore, requeue_process, upgrade, working_index
from ..store.batches import BatchStore
from ..store.limits import LimitStore
from .fetch import Fetcher, Unit
from .log import logger

#: Heartbeats a process may miss before its jobs are taken back (from any host).
SILENT_BEATS = 3


def hostname() -> str:
    return os.environ.get("DYNO") or socket.gethostname()


def pid_is_gone(identity: str, host: str) -> bool:
    """True when ``identity`` ran on this host and its pid no longer exists.

    This assumes a host name is not shared by two pid namespaces (true of hosts and of
    containers with their own host name), which is what lets a restarted worker take back its
    predecessor's jobs at once instead of waiting 60 s for the hash to expire.
    """
    ident_host, _, rest = identity.rpartition(":")[0].rpartition(":")
    try:
        pid = int(rest)
    except ValueError:
        return False
    if ident_host != host or pid == os.getpid() or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False
    return False


class Janitor:
    def __init__(
        self,
        redis_client: redis.Redis,
        keys: Keys,
        identity: str,
        fetcher: Fetcher,
        in_hand: Callable[[], Counter[tuple[str, bytes]]],
        lock_seconds: float = 5,
        batch_retention: float = 7 * 24 * 3600.0,
        default_queue: str = "default",
    ) -> None:
        self.redis = redis_client
        self.keys = keys
        self.processes = ProcessStore(redis_client, keys)
        self.limits = LimitStore(redis_client, keys, default_queue)
        self.identity = identity
        self.host = hostname()
        self.fetcher = fetcher
        self.in_hand = in_hand
        self.lock_seconds = lock_seconds
        self.batches = BatchStore(redis_client, keys)
        self.batch_retention = batch_retention
        #: Monotonic time of this process's previous beat, and since when it has beaten
        #: without a gap: another process's silence counts only once this one has been
        #: connected itself for as long (after an outage everybody looks silent).
        self._previous_run: float | None = None
        self._connected_since = time.monotonic()
        self._suspects: Counter[tuple[str, bytes]] = Counter()

    def run(self) -> None:
        """The periodic duties, called after each heartbeat."""
        now = time.monotonic()
        if self._previous_run is None or now - self._previous_run > 2 * self.lock_seconds:
            self._connected_since = now
        self._previous_run = now
        self.reconcile()
        if self.processes.lock(self.keys.working_sweep, self.identity, self.lock_seconds):
            self.sweep()
            self.trim_batches()
            self.unpark()
        self.clean_processes()

    def trim_batches(self) -> int:
        """Drop the batches older than their retention from the ``batches`` listing."""
        try:
            return self.batches.trim(time.time(), self.batch_retention)
        except redis.exceptions.ResponseError as exc:  # a key of another type: said, not fatal
            logger.warning("batches listing %s not trimmed: %s", self.keys.batches, exc)
            return 0

    def _gone(self, identity: str) -> bool:
        return pid_is_gone(identity, self.host)

    def _silent(self, heartbeat: tuple[str, str], now: float) -> bool:
        """True when a process missed three of its own heartbeats (``heartbeat_interval`` in
        its ``info``; a process that does not say keeps the 60 s of its hash's expiry)."""
        info_text, beat_text = heartbeat
        try:
            interval = float(json.loads(info_text).get("heartbeat_interval"))
            beat = float(beat_text)
        except (TypeError, ValueError, AttributeError):
            return False
        return now - beat > SILENT_BEATS * interval

    def sweep(self) -> int:
        """Push back the working lists of every dead process; returns the jobs pushed back."""
        index = working_index(self.redis, self.keys)
        # Processes of an earlier version (running beside this one in a rolling deploy, or
        # dead since) index their lists under layout 1's names: they are swept all the same.
        earlier = working_index(self.redis, self.keys.earlier)
        layout = {ident: self.keys.earlier for ident in earlier if ident not in index}
        index = {**earlier, **index}
        others = [ident for ident in index if ident != self.identity]
        total = 0
        # Silence is judged on Redis's clock (the beats are written with it), and only once
        # this process has itself beaten without a gap for three intervals.
        judge = time.monotonic() - self._connected_since >= SILENT_BEATS * self.lock_seconds
        now = self.processes.server_time() if judge and others else 0.0
        for ident, beat in zip(others, self.processes.heartbeats(others), strict=True):
            silent = judge and beat is not None and self._silent(beat, now)
            if beat is not None and not self._gone(ident) and not silent:
                continue
            moved = requeue_process(
                self.redis, self.keys, ident, index[ident], crashed=True, lists=layout.get(ident)
            )
            if moved:
                logger.warning("pushed back %d job(s) left by dead process %s", moved, ident)
            total += moved
        return total

    def unpark(self) -> int:
        """Send parked jobs back to their queues while their limiters have free slots;
        returns how many went."""
        # A job admitted to its queue holds a slot's room for a lease at most (the heartbeat
        # interval is `lock_seconds`): the bound a parked job already waits after a holder dies.
        moved = self.limits.unpark(lease_seconds(self.lock_seconds))
        if moved:
            logger.info("sent %d parked job(s) back to their queues: slots are free", moved)
        return moved

    def upgrade(self) -> None:
        """At start-up, before the first sweep: move what an earlier version wrote under
        layout 1's key names (`djqueue.store.upgrade`), saying what moved. A refusal (Redis
        out of memory refuses the lock's SET) skips it for this start: the worker must start
        to drain the queues, and the sweep and the status read find layout 1's data anyway."""
        try:
            done = upgrade(self.redis, self.keys)
        except redis.exceptions.ResponseError as exc:
            logger.warning("keys of layout 1 not upgraded at this start (%s); the next tries", exc)
            return
        if done is None:
            return
        if done.recoveries < 0:
            logger.warning(
                "%s or %s is not a hash: crash recoveries not merged",
                self.keys.earlier.recoveries,
                self.keys.recoveries,
            )
        elif done.recoveries:
            logger.info(
                "upgrade: %d crash recoveries merged into %s", done.recoveries, self.keys.recoveries
            )
        if done.statuses or done.statuses_left:
            logger.info(
                "upgrade: %d job statuses moved under %s (%d left where both names held one)",
                done.statuses,
                self.keys.status_prefix,
                done.statuses_left,
            )

    def clean_processes(self) -> int:
        """Prune dead members of ``processes`` (at most once per few seconds, cluster-wide)."""
        return self.processes.prune(also_dead=self._gone, keep=self.identity)

    def reconcile(self) -> int:
        """Push back jobs in our own working lists that no processor has held for a beat."""
        listed: Counter[tuple[str, bytes]] = Counter()
        for name, jobs in self.fetcher.working_jobs().items():
            for raw in jobs:
                listed[(name, raw)] += 1
        loose = listed - self.in_hand()
        stale = loose & self._suspects
        self._suspects = loose - stale
        pushed = 0
        for (name, raw), count in stale.items():
            for _ in range(count):
                pushed += self.fetcher.requeue(Unit(name, raw, self.fetcher.working[name]))
        if pushed:
            logger.warning("pushed back %d job(s) no processor was holding", pushed)
        return pushed
