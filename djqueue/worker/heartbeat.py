"""The heartbeat: every few seconds, tell Redis this process is alive and what it is doing.

One MULTI per beat, in Sidekiq's layout (DESIGN.md): the stats counted since the last beat, the
busy-work hash (``IDENTITY:work``, and ``IDENTITY:workers`` for Sidekiq 6.4.1 readers), the
``processes`` set, the identity hash, this process's entry in the working-lists index, and one
remote signal popped from ``IDENTITY-signals``. A process that stops beating disappears: its
hashes expire after 60 s and the janitor removes it from ``processes``.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from typing import Any

import redis

from ..keys import Keys
from ..payload import dumps
from .backoff import REDIS_ERRORS, Backoff
from .fetch import Fetcher, index_key
from .log import logger
from .stats import Stats

#: Seconds the identity and work hashes live without a beat (Sidekiq's value).
EXPIRY = 60
#: Daily stat keys live five years, as in Sidekiq.
STATS_TTL = 5 * 365 * 24 * 3600


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


class Heartbeat:
    def __init__(
        self,
        redis_client: redis.Redis,
        keys: Keys,
        identity: str,
        info: dict[str, Any],
        stats: Stats,
        fetcher: Fetcher,
        quiet: Callable[[], bool],
    ) -> None:
        self.redis = redis_client
        self.keys = keys
        self.identity = identity
        self.info_json = json.dumps(info, separators=(",", ":"))
        self.stats = stats
        self.fetcher = fetcher
        self.quiet = quiet
        #: djqueue processes known from the last beat (sorted identities), for the poller.
        self.peers: list[str] = [identity]
        self.rtt_us = 0

    def beat(self) -> str | None:
        """Write one beat; returns the remote signal popped (``TSTP``, ``TERM``, ``TTIN``)."""
        processed, failed = self.stats.take()
        try:
            started = time.perf_counter()
            self.redis.ping()
            self.rtt_us = int((time.perf_counter() - started) * 1_000_000)
            replies = self._write(processed, failed)
        except REDIS_ERRORS:
            self.stats.give_back(processed, failed)
            raise
        signal, peers = replies[-2], replies[-1]
        self.peers = sorted({p.decode() for p in peers} | {self.identity})
        return signal.decode() if signal else None

    def _add_counts(self, pipe: Any, processed: int, failed: int) -> None:
        """Queue the INCRBYs of the totals and today's counters (beat and clear both flush)."""
        day = time.strftime("%Y-%m-%d", time.gmtime())
        for stat, total, count in (
            ("processed", self.keys.processed, processed),
            ("failed", self.keys.failed, failed),
        ):
            if count:
                pipe.incrby(total, count)
                pipe.incrby(self.keys.daily(stat, day), count)
                pipe.expire(self.keys.daily(stat, day), STATS_TTL)

    def _write(self, processed: int, failed: int) -> list[Any]:
        k = self.keys
        ident = self.identity
        pipe = self.redis.pipeline(transaction=True)
        self._add_counts(pipe, processed, failed)
        busy = self.stats.busy()
        work: dict[Any, Any] = {
            tid: dumps({**w, "payload": w["payload"].decode("utf-8", "replace")})
            for tid, w in busy.items()
        }
        for key in (k.work(ident), k.workers(ident)):
            pipe.unlink(key)
            if work:
                pipe.hset(key, mapping=work)
                pipe.expire(key, EXPIRY)
        pipe.sadd(k.processes, ident)
        pipe.hset(
            k.process(ident),
            mapping={
                "info": self.info_json,
                "busy": len(busy),
                "beat": time.time(),
                "quiet": "true" if self.quiet() else "false",
                "rss": rss_kb(),
                "rtt_us": self.rtt_us,
            },
        )
        pipe.expire(k.process(ident), EXPIRY)
        pipe.hset(index_key(k), ident, self.fetcher.index_value)
        pipe.rpop(k.signals(ident))
        pipe.hkeys(index_key(k))
        return pipe.execute()

    def clear(self, drop_index: bool = True) -> None:
        """Leave cleanly: flush the last counts and remove every trace of this process
        (but its working-lists entry when ``drop_index`` is false)."""
        processed, failed = self.stats.take()
        k = self.keys
        ident = self.identity
        pipe = self.redis.pipeline(transaction=True)
        self._add_counts(pipe, processed, failed)
        pipe.srem(k.processes, ident)
        pipe.unlink(k.process(ident), k.work(ident), k.workers(ident), k.signals(ident))
        if drop_index:
            pipe.hdel(index_key(k), ident)
        pipe.execute()


class HeartbeatThread:
    """Beats every ``interval`` seconds, then hands over to the janitor's periodic duties."""

    def __init__(
        self,
        heartbeat: Heartbeat,
        interval: float,
        on_signal: Callable[[str], None],
        after_beat: Callable[[], None],
    ) -> None:
        self.heartbeat = heartbeat
        self.interval = interval
        self.on_signal = on_signal
        self.after_beat = after_beat
        self.stop_event = threading.Event()
        self.wake = threading.Event()
        self.thread = threading.Thread(target=self.run, name="djqueue-heartbeat", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.stop_event.set()
        self.wake.set()
        self.thread.join(10)

    def beat_now(self) -> None:
        """Beat at once (after going quiet, so the UI shows it without waiting)."""
        self.wake.set()

    def run(self) -> None:
        backoff = Backoff("heartbeat", self.stop_event, cap=self.interval)
        while not self.stop_event.is_set():
            self.wake.wait(self.interval)
            self.wake.clear()
            if self.stop_event.is_set():
                return
            try:
                signal = self.heartbeat.beat()
            except REDIS_ERRORS as exc:
                backoff.failed(exc)
                continue
            except Exception:
                logger.exception("heartbeat failed; trying again next beat")
                continue
            backoff.reset()
            if signal:
                self.on_signal(signal)
            try:
                self.after_beat()
            except REDIS_ERRORS as exc:
                backoff.failed(exc)
            except Exception:
                logger.exception("janitor failed; trying again next beat")
