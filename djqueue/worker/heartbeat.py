"""The heartbeat: every few seconds, tell Redis this process is alive and what it is doing.

One script call per beat (`djqueue.store.ProcessStore.beat`, Sidekiq's layout, docs/design.md):
the stats counted since the last beat, the busy-work hash, the ``processes`` set, the identity
hash, this process's entry in the working-lists index, and one remote signal popped from
``IDENTITY-signals``; what comes back also names the paused queues, which the fetch then
leaves out (`Fetcher.pause`); while it holds concurrency slots (`djqueue.limits`), a second
call renews their leases. A process that stops beating disappears: its hashes expire after
60 s and the janitor removes it from ``processes``.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from typing import Any

import redis

from .. import health, limits, running
from ..payload import dumps
from ..store import Keys, ProcessStore, StatusStore
from ..store.limits import LimitStore
from .backoff import REDIS_ERRORS
from .component import Component
from .fetch import Fetcher
from .log import logger
from .tally import Tally


def rss_kb() -> int:
    try:
        with open(f"/proc/{os.getpid()}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    try:
        import resource

        return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
    except (ImportError, OSError):
        return 0


def capsule(concurrency: int, weights: dict[str, int]) -> dict[str, Any]:
    """The process's one capsule as Sidekiq 8 describes its own in ``info["capsules"]``
    (``Capsule#to_h``), from which its UI and ``Process#queues`` take the queue names:
    ``mode`` is ``strict`` when no queue has a weight, ``random`` when each has 1."""
    if all(weight == 0 for weight in weights.values()):
        mode = "strict"
    elif all(weight == 1 for weight in weights.values()):
        mode = "random"
    else:
        mode = "weighted"
    return {"concurrency": concurrency, "mode": mode, "weights": weights}


class Heartbeat:
    def __init__(
        self,
        redis_client: redis.Redis,
        keys: Keys,
        identity: str,
        info: dict[str, Any],
        tally: Tally,
        fetcher: Fetcher,
        quiet: Callable[[], bool],
    ) -> None:
        self.redis = redis_client
        self.store = ProcessStore(redis_client, keys)
        self.status = StatusStore(redis_client, keys)
        self.limits = LimitStore(redis_client, keys)
        self.identity = identity
        self.info_json = json.dumps(info, separators=(",", ":"))
        #: Also a field of its own: Sidekiq 8.1.2+ reads the threads there, not in ``info``.
        self.concurrency = int(info.get("concurrency") or 0)
        self.tally = tally
        self.fetcher = fetcher
        self.quiet = quiet
        #: djqueue processes known from the last beat (sorted identities), for the poller.
        self.peers: list[str] = [identity]
        self.rtt_us = 0
        #: Whether the last beat found this process's hash missing: after the first beat,
        #: Redis lost it (restarted empty, flushed), and what the worker declares must be
        #: written again (the launcher's periodic jobs).
        self.renewed = False
        #: ``--health-file``: where each beat is written first, Redis or not (`djqueue.health`).
        self.health_file: str | None = None
        self.interval = float(info.get("heartbeat_interval") or 5.0)

    def beat(self) -> str | None:
        """Write one beat; returns the remote signal popped (``TSTP``, ``TERM``, ``TTIN``)."""
        processed, failed = self.tally.take()
        expired = self.tally.take_expired()
        metrics = self.tally.metrics.take() if self.tally.metrics is not None else None
        busy = self.tally.busy()
        if self.health_file:
            self.write_health(busy)
        work = {
            tid: dumps({**w, "payload": w["payload"].decode("utf-8", "replace")})
            for tid, w in busy.items()
        }
        try:
            started = time.perf_counter()
            self.redis.ping()
            self.rtt_us = int((time.perf_counter() - started) * 1_000_000)
            fields = {
                "info": self.info_json,
                "concurrency": self.concurrency,
                "busy": len(busy),
                "beat": time.time(),
                "quiet": "true" if self.quiet() else "false",
                "rss": rss_kb(),
                "rtt_us": self.rtt_us,
            }
            found = self.store.beat(
                self.identity,
                fields,
                work,
                self.fetcher.index_value,
                processed,
                failed,
                metrics,
                expired,
            )
        except REDIS_ERRORS:
            self.tally.give_back(processed, failed, expired)
            if metrics and self.tally.metrics is not None:
                self.tally.metrics.give_back(metrics)
            raise
        self.renewed = found.renewed
        self.peers = sorted(set(found.peers) | {self.identity})
        self.fetcher.pause(found.paused)
        held = limits.held()
        if held:
            self.limits.renew(held, limits.lease_seconds(self.interval))
        tracked = [w["payload"] for w in busy.values() if b'"retention":' in w["payload"]]
        if tracked:
            self.check_cancels(tracked)
        return found.signal

    def write_health(self, busy: dict[str, dict[str, Any]]) -> None:
        """Write the health file; a failure is logged, and the beat goes on."""
        assert self.health_file
        beat = health.Beat(
            identity=self.identity,
            pid=os.getpid(),
            beat=time.time(),
            heartbeat_interval=self.interval,
            quiet=self.quiet(),
            running_since=tuple(float(w["run_at"]) for w in busy.values()),
        )
        try:
            health.write_file(self.health_file, beat)
        except OSError as exc:
            logger.warning("cannot write the health file %s: %s", self.health_file, exc)

    def check_cancels(self, raws: list[bytes]) -> None:
        """Read the cancel flags of the tracked jobs running here (one round trip, only while
        some run), so ``current_job().cancelled`` turns true within a beat of `cancel`."""
        jids = []
        for raw in raws:
            try:
                jid = json.loads(raw).get("jid")
            except (ValueError, AttributeError, RecursionError):
                continue
            if isinstance(jid, str):
                jids.append(jid)
        running.request_stop(self.status.cancel_requested(jids))

    def clear(self, drop_index: bool = True) -> None:
        """Leave cleanly: flush the last counts and remove every trace of this process
        (but its working-lists entry when ``drop_index`` is false)."""
        processed, failed = self.tally.take()
        if self.tally.metrics is not None:
            self.store.write_metrics(self.tally.metrics.take())
        self.store.write_expired(self.tally.take_expired())
        self.store.clear(self.identity, processed, failed, drop_index)


#: Called after each beat with the remote signal it popped (None mostly): the launcher acts
#: on the signal, then runs the janitor.
AfterBeat = Callable[[str | None], None]


class HeartbeatThread(Component):
    """Beats every ``interval`` seconds, then hands over to the janitor's periodic duties."""

    name = "djqueue-heartbeat"
    what = "heartbeat"
    #: After a bug the next beat comes at its time.
    after_bug = 0.0

    def __init__(self, heartbeat: Heartbeat, interval: float, after_beat: AfterBeat) -> None:
        self.heartbeat = heartbeat
        self.interval = interval
        self.backoff_cap = interval
        self.after_beat = after_beat
        super().__init__()

    def quiet(self) -> None:
        """Beat at once, so the UI shows the process quiet without waiting; beating goes on
        until the stop (the heartbeat is the launcher's last part)."""
        self.wake_up()

    def tick(self) -> float:
        self.sleep(self.interval)
        if self.stop_event.is_set():
            return 0.0
        signal = self.heartbeat.beat()
        self.backoff.reset()
        try:
            self.after_beat(signal)
        except REDIS_ERRORS as exc:
            self.backoff.failed(exc)
        except Exception:
            logger.exception("janitor failed; trying again next beat")
        return 0.0
