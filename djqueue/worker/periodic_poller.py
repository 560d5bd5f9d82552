"""The periodic poller: fires periodic jobs' ticks, in every worker process.

It reads the schedule (``cron_jobs``) every `RELOAD` seconds, sleeps until the next tick of
any entry, and then asks the store to claim and push that tick (`PeriodicJob.fire`). Every
worker does the same; the claim (a ZADD in the same Lua step as the push) lets exactly one of
them push each tick, whichever wakes first, Ruby's sidekiq-cron pollers included.

**Redis's clock.** Every decision (which tick is due, the run's ``last_enqueue_time``, how long
to sleep) is taken from Redis's ``TIME``, read once per look and run on by the host's monotonic
clock: a host whose wall clock is off neither fires ticks early (and stamps a last run that
hides the next ones) nor late.

**Bad entries** (a key of the wrong type, a missing field, JSON that does not parse, a cron
text djqueue cannot read) are skipped, each logged once by name while it stays bad; the
healthy ones go on firing. One of this worker's own declarations found bad is written again
(`djqueue.worker.periodic_sync` replaces its keys).

**Declaring again.** The worker's declarations are written at start (`declare`), and again
after an outage of Redis and when the heartbeat finds this process's hash gone (`redeclare`):
a Redis restarted without persistence, or flushed, has lost the schedule, which would
otherwise stay empty until the workers restart.

Which ticks: on a poller's first look (its start), the latest one due: the catch-up tick, fired
once if no one claimed it (only within `djqueue.periodic_declaration.GRACE` seconds for
``catch_up=False`` entries); older missed ticks are never fired. After that, every tick since
its last look that is at most `GRACE` seconds old, so a poller woken late on a loaded host skips
none; after a longer gap (Redis away), the latest one only, as at start. A tick at or before
the entry's last run (``last_enqueue_time``: a "run now" after the tick) is skipped, as
sidekiq-cron skips it.

Disable and enable act at the next tick (the status is checked in the same Lua step); a new
entry or a changed schedule is seen within `RELOAD` seconds. The poller stops on quiet, as
sidekiq-cron's does: the other workers keep the schedule going.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence

import redis

from ..api.periodic import PeriodicJob, PeriodicSet, redis_clock
from ..config import Settings
from ..connection import CONNECTION_ERRORS
from ..periodic_cron import iso
from ..periodic_declaration import GRACE, Periodic
from ..store.keys import Keys
from ..store.periodic import CLAIMED_BEFORE, BadPeriodicSet, PeriodicStore
from ..store.periodic_layout import PeriodicLayout
from .component import Component
from .log import logger
from .periodic_sync import sync

#: Seconds between two reads of the schedule.
RELOAD = 10.0
#: The most ticks of one job a poller tries in one look (one per second over `GRACE`).
MAX_LATE = 60
#: What problems of ``cron_jobs`` itself are logged under (no entry name holds a ``:``).
PERIODIC_SET = ":cron_jobs"


class PeriodicPoller(Component):
    """Fires periodic jobs when due (a runtime thread)."""

    name = "djqueue-periodic"
    what = "periodic poller"
    halts_on_quiet = True

    def __init__(
        self,
        settings: Settings,
        redis_client: redis.Redis,
        reload: float = RELOAD,
        declarations: Sequence[Periodic] = (),
    ) -> None:
        self.settings = settings
        self.redis = redis_client
        self.entries = PeriodicSet(settings=settings, redis_client=redis_client)
        self.reload = reload
        #: What this process declares (code and settings), written by `declare`.
        self.declarations = list(declarations)
        super().__init__()
        self._declare_due = False
        self._schedule: list[PeriodicJob] = []
        self._reload_at = 0.0
        #: name -> the latest tick this poller has handled (fired, or found claimed).
        self._tried: dict[str, float] = {}
        #: What is wrong, by entry name, as last logged: each problem is logged once while
        #: it lasts. ``_failing`` holds pushes refused by Redis, cleared by the next answer.
        self._bad: dict[str, str] = {}
        self._failing: dict[str, str] = {}
        #: The sidekiq-cron layout the last read found (`djqueue.store.periodic_layout`).
        self._layout: PeriodicLayout | None = None

    def declare(self) -> None:
        """Write this process's declarations (`djqueue.worker.periodic_sync.sync`); the next look
        reads the schedule again."""
        try:
            sync(self.declarations, self.settings, self.redis)
        except BadPeriodicSet as exc:
            self._say(PERIODIC_SET, str(exc), self._bad)
        self._declare_due = False
        self._reload_at = 0.0

    def redeclare(self) -> None:
        """Write the declarations again at once, from the poller's thread (Redis lost them)."""
        self._declare_due = True
        self.wake_up()

    def tick(self) -> float:
        clock = redis_clock(self.entries)
        wake = self.poll(clock(), clock)
        return wake - clock()

    def outage(self) -> None:
        # Back from an outage, Redis may have come back empty: declare again.
        self._declare_due = bool(self.declarations)

    def poll(self, now: float, clock: Callable[[], float] | None = None) -> float:
        """Fire what is due at ``now`` (Redis's time); returns when to look next, on the
        same clock. ``clock`` stamps the runs (default: ``now``, running on)."""
        if clock is None:
            clock = _running_on(now)
        if self._declare_due:
            self.declare()
        if now >= self._reload_at:
            self._read()
            self._reload_at = now + self.reload
        wake = self._reload_at
        for entry in self._schedule:
            if self.stop_event.is_set():
                break
            if entry.schedule is None or entry.error:
                continue
            try:
                ticks = self._ticks(entry, now)
                wake = min(wake, entry.schedule.next(now))
            except Exception as exc:  # noqa: BLE001 - one schedule's bug must not stop the rest
                self._say(entry.name, f"its schedule cannot be stepped: {exc!r}", self._bad)
                continue
            for tick in ticks:
                try:
                    self._handle(entry, tick, clock)
                except CONNECTION_ERRORS:
                    raise  # not tried: the next look after the outage tries it again
                except Exception as exc:  # a bad entry (its message, a queue key Redis refuses)
                    self._say(
                        entry.name, f"tick {iso(tick)} not pushed: {exc}", self._failing, str(exc)
                    )
                else:
                    self._failing.pop(entry.name, None)
                self._tried[entry.name] = tick
        return wake

    def _read(self) -> None:
        """Read the schedule; log each bad entry once, and write this process's own again
        when one of them is bad, or when a sidekiq-cron 2 server has moved the schedule to its
        layout (its move keeps only sidekiq-cron's fields: djqueue's are written again)."""
        layout = PeriodicStore(self.redis, Keys(self.settings.namespace)).layout()
        moved = self._layout is not None and layout != self._layout
        self._layout = layout
        if moved and self.declarations:
            logger.info(
                "periodic: the schedule is in sidekiq-cron %s's layout now; writing this "
                "worker's declarations there",
                layout.version,
            )
            self.declare()
        try:
            self._schedule = self.entries.all()
        except BadPeriodicSet as exc:
            self._schedule = []
            self._say(PERIODIC_SET, str(exc), self._bad)
            return
        self._bad.pop(PERIODIC_SET, None)
        mine = {entry.name for entry in self.declarations}
        repair = False
        for entry in self._schedule:
            if not entry.error:
                self._bad.pop(entry.name, None)
                continue
            new = self._say(entry.name, entry.not_fired, self._bad, entry.error)
            repair = repair or (new and entry.name in mine)
        if repair:
            logger.info("periodic: writing this worker's declarations again over the bad ones")
            self.declare()
            self._read()

    def _say(self, name: str, line: str, seen: dict[str, str], problem: str = "") -> bool:
        """Log ``line`` about ``name`` unless ``problem`` (default: the line) was the last
        one logged for it; returns whether it was logged."""
        problem = problem or line
        if seen.get(name) == problem:
            return False
        seen[name] = problem
        logger.warning("periodic %s: %s", name, line)
        return True

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

    def _handle(self, entry: PeriodicJob, tick: float, clock: Callable[[], float]) -> None:
        if not entry.enabled:
            # Disabled at the last read: claim the tick as skipped, unless it was enabled since.
            if entry.periodic_store.skip(entry.name, (tick, iso(tick))) != CLAIMED_BEFORE:
                return
            entry.fields["status"] = "enabled"
        if self._due(entry, tick, clock()):
            jid = entry.fire(tick, clock)
            if jid:
                logger.info("periodic %s: pushed %s for %s", entry.name, jid, iso(tick))

    def _due(self, entry: PeriodicJob, tick: float, now: float) -> bool:
        if not entry.catch_up and now - tick > GRACE:
            return False
        last = entry.last_run
        return last is None or last < math.floor(tick)


def _running_on(now: float) -> Callable[[], float]:
    """A clock that reads ``now`` and runs on by the monotonic clock."""
    started = time.monotonic()
    return lambda: now + (time.monotonic() - started)
