"""Cleaning up after processes that died without a clean exit.

Three duties, run at start-up and after every heartbeat:

* **Orphaned jobs.** A process whose identity hash has expired (no beat for 60 s), or which ran
  on this host under a pid that no longer exists, has its working lists pushed back to the
  front of their queues, atomically, by whichever live process gets there first. The periodic
  sweep is guarded by a short ``SET NX EX`` lock so a cluster sweeps about once per beat.
* **The processes set.** Members whose hash is gone are removed (Sidekiq 7's rule, under the
  same ``process_cleanup`` lock key), so a dead process leaves the UI within a minute or so.
* **Leaked jobs in our own lists.** A reply lost to a dropped connection can leave a job in
  this process's working list that no processor knows about. A job seen there on two
  consecutive beats without a processor holding it is pushed back.
"""

from __future__ import annotations

import json
import os
import socket
from collections import Counter
from collections.abc import Callable

import redis

from ..keys import Keys
from .fetch import Fetcher, index_key, requeue_identity
from .log import logger

SWEEP_LOCK = "working_sweep"
CLEANUP_LOCK = "process_cleanup"


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


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
        lock_seconds: int = 5,
    ) -> None:
        self.redis = redis_client
        self.keys = keys
        self.identity = identity
        self.host = hostname()
        self.fetcher = fetcher
        self.in_hand = in_hand
        self.lock_seconds = max(1, lock_seconds)
        self._suspects: Counter[tuple[str, bytes]] = Counter()

    def run(self) -> None:
        """The periodic duties, called after each heartbeat."""
        self.reconcile()
        if self._lock(SWEEP_LOCK):
            self.sweep()
        if self._lock(CLEANUP_LOCK):
            self.clean_processes()

    def _lock(self, name: str) -> bool:
        return bool(
            self.redis.set(self.keys.prefix + name, self.identity, nx=True, ex=self.lock_seconds)
        )

    def _dead(self, identities: list[str]) -> list[str]:
        pipe = self.redis.pipeline(transaction=False)
        for ident in identities:
            pipe.hexists(self.keys.process(ident), "info")
        alive = pipe.execute()
        return [
            ident
            for ident, has_info in zip(identities, alive, strict=True)
            if not has_info or pid_is_gone(ident, self.host)
        ]

    def sweep(self) -> int:
        """Push back the working lists of every dead process; returns the jobs pushed back."""
        entries = self.redis.hgetall(index_key(self.keys))
        others = {_text(k): v for k, v in entries.items() if _text(k) != self.identity}
        total = 0
        for ident in self._dead(list(others)):
            try:
                names = [str(n) for n in json.loads(others[ident])]
            except (ValueError, TypeError):
                names = []
            moved = requeue_identity(self.redis, self.keys, ident, names)
            if moved:
                logger.warning("pushed back %d job(s) left by dead process %s", moved, ident)
            total += moved
        return total

    def clean_processes(self) -> int:
        members = [_text(m) for m in self.redis.smembers(self.keys.processes)]
        dead = self._dead([m for m in members if m != self.identity])
        if dead:
            self.redis.srem(self.keys.processes, *dead)
        return len(dead)

    def reconcile(self) -> int:
        """Push back jobs in our own working lists that no processor has held for a beat."""
        listed: Counter[tuple[str, bytes]] = Counter()
        for key, jobs in self.fetcher.working_jobs().items():
            for raw in jobs:
                listed[(key, raw)] += 1
        loose = listed - self.in_hand()
        stale = loose & self._suspects
        self._suspects = loose - stale
        pushed = 0
        names = {w: n for n, w in self.fetcher.working.items()}
        for (key, raw), count in stale.items():
            for _ in range(count):
                from .fetch import Unit

                pushed += self.fetcher.requeue(Unit(names[key], raw, key))
        if pushed:
            logger.warning("pushed back %d job(s) no processor was holding", pushed)
        return pushed
