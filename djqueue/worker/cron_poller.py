"""The cron poller: fires periodic jobs' ticks, in every worker process.

It reads the schedule (``cron_jobs``) every `RELOAD` seconds, sleeps until the next tick of
any entry, and then asks the store to claim and push that tick (`PeriodicJob.fire`). Every
worker does the same; the claim (a ZADD in the same Lua step as the push) lets exactly one of
them push each tick, whichever wakes first, Ruby's sidekiq-cron pollers included. Clocks of
different hosts may differ by a second or two: a tick is named by its own time, not by the
host's, so a host running ahead fires it a little early and the others find it claimed.

Which ticks: on a poller's first look (its start), the latest one due: the catch-up tick, fired
once if no one claimed it (only within `djqueue.schedule.GRACE` seconds for ``catch_up=False``
entries); older missed ticks are never fired. After that, every tick since its last look that
is at most `GRACE` seconds old, so a poller woken late on a loaded host skips none; after a
longer gap (Redis away), the latest one only, as at start. A tick at or before the entry's
last run (``last_enqueue_time``: a "run now" after the tick) is skipped, as sidekiq-cron skips
it.

Disable and enable act at the next tick (the status is checked in the same Lua step); a new
entry or a changed schedule is seen within `RELOAD` seconds. The poller stops on quiet, as
sidekiq-cron's does: the other workers keep the schedule going.
"""

from __future__ import annotations

import math
import threading
import time

import redis

from ..api.periodic import PeriodicJob, PeriodicSet
from ..config import Settings
from ..connection import CONNECTION_ERRORS
from ..cron import iso
from ..schedule import GRACE
from ..store.cron import CLAIMED_BEFORE
from .backoff import REDIS_ERRORS, Backoff
from .log import logger

#: Seconds between two reads of the schedule.
RELOAD = 10.0
#: The most ticks of one job a poller tries in one look (one per second over `GRACE`).
MAX_LATE = 60


class CronPoller:
    def __init__(
        self, settings: Settings, redis_client: redis.Redis, reload: float = RELOAD
    ) -> None:
        self.entries = PeriodicSet(settings=settings, redis_client=redis_client)
        self.reload = reload
        self.stop_event = threading.Event()
        self.thread = threading.Thread(target=self.run, name="djqueue-cron", daemon=True)
        self._schedule: list[PeriodicJob] = []
        self._reload_at = 0.0
        #: name -> the latest tick this poller has handled (fired, or found claimed).
        self._tried: dict[str, float] = {}
        #: Entries whose schedule djqueue cannot read, reported once each.
        self._reported: set[str] = set()

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.stop_event.set()
        if self.thread.is_alive():
            self.thread.join(10)

    def run(self) -> None:
        backoff = Backoff("cron poller", self.stop_event)
        while not self.stop_event.is_set():
            try:
                wake = self.poll(time.time())
            except REDIS_ERRORS as exc:
                backoff.failed(exc)
                continue
            except Exception:
                # A bug must not end periodic jobs for the life of the process.
                logger.exception("cron poller failed; trying again")
                self.stop_event.wait(1.0)
                continue
            backoff.reset()
            self.stop_event.wait(max(0.0, wake - time.time()))

    def poll(self, now: float) -> float:
        """Fire what is due at ``now``; returns when to look next."""
        if now >= self._reload_at:
            self._schedule = self.entries.all()
            self._reload_at = now + self.reload
            self._report_unreadable()
        wake = self._reload_at
        for entry in self._schedule:
            if self.stop_event.is_set():
                break
            if entry.schedule is None:
                continue
            for tick in self._ticks(entry, now):
                try:
                    self._handle(entry, tick, now)
                except CONNECTION_ERRORS:
                    raise  # not tried: the next look after the outage tries it again
                except Exception as exc:  # a bad entry (its message, a queue key Redis refuses)
                    logger.error("periodic %s: tick %s not pushed: %s", entry.name, iso(tick), exc)
                self._tried[entry.name] = tick
            wake = min(wake, entry.schedule.next(now))
        return wake

    def _ticks(self, entry: PeriodicJob, now: float) -> list[float]:
        """The ticks to try now, oldest first: the latest due on a first look (the catch-up);
        after that, every tick since the last look that is at most `GRACE` seconds old, so a
        poller woken late (a loaded host) does not skip one; the latest if none is."""
        assert entry.schedule is not None
        latest = entry.schedule.previous(now)
        tried = self._tried.get(entry.name)
        if tried is None:
            return [latest]
        if latest <= tried:
            return []
        since = [t for t in entry.schedule.upcoming(tried, MAX_LATE) if t <= now]
        return [t for t in since if now - t <= GRACE] or [latest]

    def _handle(self, entry: PeriodicJob, tick: float, now: float) -> None:
        if not entry.enabled:
            # Disabled at the last read: claim the tick as skipped, unless it was enabled since.
            if entry.cron_store.skip(entry.name, (tick, iso(tick))) != CLAIMED_BEFORE:
                return
            entry.fields["status"] = "enabled"
        if self._due(entry, tick, now):
            jid = entry.fire(tick, now)
            if jid:
                logger.info("periodic %s: pushed %s for %s", entry.name, jid, iso(tick))

    def _due(self, entry: PeriodicJob, tick: float, now: float) -> bool:
        if not entry.catch_up and now - tick > GRACE:
            return False
        last = entry.last_run
        return last is None or last < math.floor(tick)

    def _report_unreadable(self) -> None:
        for entry in self._schedule:
            if entry.schedule is None and entry.name not in self._reported:
                self._reported.add(entry.name)
                logger.warning(
                    "periodic %s is not fired by djqueue: %s (sidekiq-cron may still fire it)",
                    entry.name,
                    entry.error,
                )
