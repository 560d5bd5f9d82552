"""A cron text read aloud in the page's language, for the forms people write most.

cronsim reads any cron text, in English only; a page in Japanese, Persian or Chinese had to
leave the reading out. This reads the common forms through the catalog instead (every N
seconds, minutes or hours; at a minute past every hour; every day, every weekday or every given
weekday at a time; on a day of every month; on a day of a month every year), so each language
words them its own way. Any other form reads as "" and the page shows the cron text alone (an
English page falls back to cronsim's reading, `djqueue.web.periodic`).
"""

from __future__ import annotations

from ..periodic_cron import CronExpression
from .i18n import gettext, gettext_lazy, ngettext

_ = gettext_lazy

#: Cron's weekday numbers, Sunday first (7 is Sunday too).
WEEKDAYS = (
    _("Sunday"),
    _("Monday"),
    _("Tuesday"),
    _("Wednesday"),
    _("Thursday"),
    _("Friday"),
    _("Saturday"),
)
MONTHS = (
    _("January"),
    _("February"),
    _("March"),
    _("April"),
    _("May"),
    _("June"),
    _("July"),
    _("August"),
    _("September"),
    _("October"),
    _("November"),
    _("December"),
)
#: The names cron accepts in the weekday and month fields, as numbers.
DAY_NAMES = {name: n for n, name in enumerate("SUN MON TUE WED THU FRI SAT".split())}
MONTH_NAMES = {
    name: n for n, name in enumerate("JAN FEB MAR APR MAY JUN JUL AUG SEP OCT NOV DEC".split(), 1)
}
#: Monday to Friday, as cron writes it.
WORKDAYS = {"1-5", "MON-FRI"}


def reading(schedule: CronExpression) -> str:
    """``schedule`` in words in the active language (without its zone), or "" when it is not
    one of the forms read here."""
    fields = schedule.fields.upper().split(" ")
    if schedule.has_seconds:
        second, fields = fields[0], fields[1:]
        if second != "0":
            every = _every(second, 60) if fields == ["*"] * 5 else None
            if every == 1:
                return gettext("Every second")
            if every:
                return ngettext("Every %(n)s second", "Every %(n)s seconds", every) % {"n": every}
            return ""
    minute, hour, day, month, weekday = fields
    if hour == "*" and day == month == weekday == "*":
        every = _every(minute, 60)
        if every == 1:
            return gettext("Every minute")
        if every:
            return ngettext("Every %(n)s minute", "Every %(n)s minutes", every) % {"n": every}
    at = _number(minute, 0, 59)
    if at is None:
        return ""
    if day == month == weekday == "*":
        if hour == "*":
            return gettext("Every hour at minute %(minute)s") % {"minute": at}
        every = _every(hour, 24)
        if every and every > 1:
            return ngettext(
                "Every %(n)s hour at minute %(minute)s",
                "Every %(n)s hours at minute %(minute)s",
                every,
            ) % {"n": every, "minute": at}
    hours = _number(hour, 0, 23)
    if hours is None:
        return ""
    time = f"{hours:02d}:{at:02d}"
    if day == month == "*":
        if weekday == "*":
            return gettext("Every day at %(time)s") % {"time": time}
        if weekday in WORKDAYS:
            return gettext("Every weekday (Monday to Friday) at %(time)s") % {"time": time}
        named = _number(weekday, 0, 7, DAY_NAMES)
        if named is not None:
            return gettext("Every %(weekday)s at %(time)s") % {
                "weekday": WEEKDAYS[named % 7],
                "time": time,
            }
        return ""
    date = _number(day, 1, 31)
    if date is None or weekday != "*":
        return ""
    if month == "*":
        return gettext("On day %(day)s of every month at %(time)s") % {"day": date, "time": time}
    months = _number(month, 1, 12, MONTH_NAMES)
    if months is None:
        return ""
    return gettext("Every year on %(month)s %(day)s at %(time)s") % {
        "month": MONTHS[months - 1],
        "day": date,
        "time": time,
    }


def _number(field: str, low: int, high: int, names: dict[str, int] | None = None) -> int | None:
    """A field that is one value (a number in range, or a name cron knows), or None."""
    if names and field in names:
        return names[field]
    if field.isdigit() and low <= int(field) <= high:
        return int(field)
    return None


def _every(field: str, cycle: int) -> int | None:
    """N for ``*/N`` (1 for ``*``), or None for any other field. N must divide the field's
    cycle (60 minutes, 24 hours): ``*/7`` minutes fires at :56 and again at :00, not every 7
    minutes, and is left to the cron text."""
    if field == "*":
        return 1
    step = field.removeprefix("*/")
    if step == field or not step.isdigit() or not 0 < int(step) < cycle:
        return None
    return int(step) if cycle % int(step) == 0 else None
