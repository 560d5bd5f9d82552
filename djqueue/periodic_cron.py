"""Cron expressions: when a periodic job's ticks fall.

The text is sidekiq-cron's (which Fugit parses), so a schedule written by either side means the
same to both: five fields (minute hour day month weekday), or six with **seconds first**
(``*/10 * * * * *``: every ten seconds), optionally followed by an IANA time zone
(``0 9 * * 1-5 Europe/Paris``); the default zone is UTC. The shorthands ``@hourly``,
``@daily`` (``@midnight``), ``@weekly``, ``@monthly`` and ``@yearly`` (``@annually``) are
accepted too.

The fields are read and stepped by cronsim, which follows Debian cron across daylight-saving
changes: a tick at a fixed wall time that falls in the hour skipped when clocks go forward
runs at the change (02:30 becomes 03:00), and one in the hour repeated when clocks go back runs
once, at its first occurrence; ticks with a wildcard hour (``*/30 * * * *``) keep real time,
every 30 minutes through both changes.
"""

from __future__ import annotations

import datetime as dt
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cronsim import CronSim, CronSimError

UTC = dt.UTC

#: Shorthands, spelled out as the cron man page defines them.
SHORTHANDS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}

_ONE_MICROSECOND = dt.timedelta(microseconds=1)


class InvalidCron(ValueError):
    """The text is not a cron expression djqueue can step through; the message says why."""


class CronExpression:
    """One parsed expression: ``CronExpression("*/5 * * * *").next(time.time())``.

    Times in and out are epoch seconds, so callers never meet a naive datetime.
    """

    def __init__(self, text: str) -> None:
        if not isinstance(text, str) or not text.strip():
            raise InvalidCron("a cron expression is needed, e.g. '*/5 * * * *'")
        self.text = " ".join(text.split())
        fields = self.text.split(" ")
        self.zone_name = "UTC"
        self.zone: dt.tzinfo = UTC
        if len(fields) in (2, 6, 7) and is_zone(fields[-1]):
            self.zone_name = fields.pop()
            self.zone = ZoneInfo(self.zone_name)
        if len(fields) == 1 and fields[0].lower() in SHORTHANDS:
            fields = SHORTHANDS[fields[0].lower()].split(" ")
        if len(fields) not in (5, 6):
            raise InvalidCron(
                f"{text!r}: a cron expression has 5 fields (minute hour day month weekday) or 6 "
                f"with seconds first, optionally followed by a time zone; got {len(fields)}"
            )
        #: The fields alone, as cronsim reads them.
        self.fields = " ".join(fields)
        self.has_seconds = len(fields) == 6
        try:
            CronSim(self.fields, dt.datetime.now(UTC))
        except CronSimError as exc:
            raise InvalidCron(f"{text!r}: {exc}") from None

    def __repr__(self) -> str:
        return f"CronExpression({self.text!r})"

    def _start(self, at: float) -> dt.datetime:
        return dt.datetime.fromtimestamp(at, UTC).astimezone(self.zone)

    def previous(self, at: float) -> float:
        """The latest tick at or before ``at``."""
        start = self._start(at)
        if _repeated(start):
            # In the hour repeated when clocks go back, cronsim reads the wall time as its
            # first occurrence (it ignores ``fold``) and would step back from an hour too
            # early: step back from an hour later instead, past what is after ``at``.
            start = self._start(at + 3600)
        for tick in CronSim(self.fields, start + _ONE_MICROSECOND, reverse=True):
            if tick.timestamp() <= at:
                return tick.timestamp()
        raise AssertionError("unreachable: a cron expression always has an earlier tick")

    def next(self, at: float) -> float:
        """The first tick strictly after ``at``."""
        return self.upcoming(at, 1)[0]

    def upcoming(self, at: float, count: int) -> list[float]:
        """The next ``count`` ticks after ``at``. In the hour repeated when clocks go back,
        cronsim starts from the wall time's first occurrence and so yields ticks already
        past: those are skipped."""
        ticks: list[float] = []
        for tick in CronSim(self.fields, self._start(at)):
            if tick.timestamp() > at:
                ticks.append(tick.timestamp())
                if len(ticks) == count:
                    return ticks
        raise AssertionError("unreachable: a cron expression always has a later tick")

    def describe(self) -> str:
        """cronsim's English reading ("Every 15th minute of every hour"), with the zone."""
        try:
            text = CronSim(self.fields, dt.datetime.now(UTC)).explain()
        except Exception:  # explain() is best effort: it covers the common forms only
            text = self.text
        return text if self.zone_name == "UTC" else f"{text} ({self.zone_name})"


def unshared(schedule: CronExpression) -> str | None:
    """What in ``schedule`` sidekiq-cron's parser (Fugit) refuses or reads otherwise than
    cronsim, or None. Found by stepping both through the same expressions: Fugit refuses ``L``
    in the day-of-week field (``5L``, the last Friday) and ``W`` in the day-of-month field
    (``LW``); and with both day fields restricted, Fugit fires when either matches while cron
    (and cronsim) fires when both do if one of them starts with ``*`` (``*/2``)."""
    *_, day, _month, weekday = schedule.fields.split(" ")
    if "L" in weekday.upper():
        return f"{weekday!r} in the day-of-week field (L, the last such weekday of the month)"
    if "W" in day.upper():
        return f"{day!r} in the day-of-month field (W, the nearest weekday)"
    if day != "*" and weekday != "*" and (day.startswith("*") or weekday.startswith("*")):
        starred, where = (day, "day-of-month") if day.startswith("*") else (weekday, "day-of-week")
        return (
            f"{starred!r} in the {where} field beside a restricted other day field (cron fires "
            f"when both match, sidekiq-cron when either does)"
        )
    return None


def _repeated(moment: dt.datetime) -> bool:
    """Whether ``moment``'s wall time happens twice (the hour clocks go back)."""
    other = moment.replace(fold=1 - moment.fold)
    return other.utcoffset() != moment.utcoffset()


def is_zone(name: str) -> bool:
    """An IANA zone name this machine knows (and not a word a cron field may hold)."""
    if not any(c.isalpha() for c in name) or name.upper() in _FIELD_WORDS:
        return False
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return False
    return True


#: Words a cron field may hold, so never taken for a zone.
_FIELD_WORDS = frozenset(
    "SUN MON TUE WED THU FRI SAT JAN FEB MAR APR MAY JUN JUL AUG SEP OCT NOV DEC L".split()
)


@lru_cache(maxsize=1024)
def parse(text: str) -> CronExpression:
    """A `CronExpression`, cached: pollers read the same texts from Redis over and over."""
    return CronExpression(text)


def iso(tick: float) -> str:
    """A tick as sidekiq-cron names it in ``cron_job:NAME:enqueued`` (Ruby's ``iso8601``)."""
    return dt.datetime.fromtimestamp(tick, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def enqueue_time(at: float) -> str:
    """A run's time as sidekiq-cron writes ``last_enqueue_time``."""
    return dt.datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d %H:%M:%S +0000")


def parse_enqueue_time(text: str) -> float | None:
    """``last_enqueue_time`` as epoch seconds; None when absent or unreadable. Ruby writes
    ``%Y-%m-%d %H:%M:%S %z`` (older versions a ``Time#to_s``, the same shape with ``UTC``)."""
    if not text:
        return None
    for pattern in ("%Y-%m-%d %H:%M:%S %z", "%Y-%m-%d %H:%M:%S UTC"):
        try:
            parsed = dt.datetime.strptime(text.strip(), pattern)
        except ValueError:
            continue
        return (parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)).timestamp()
    try:
        parsed = dt.datetime.fromisoformat(text.strip())
    except ValueError:
        return None
    return (parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)).timestamp()
