"""How figures, times and arguments read on a page, the same in the admin and the dashboard.

Everything here returns plain text; the renderers escape it. Times read in the zone the mount
gives for the request (`in_zone`: Django's current time zone, ``TIME_ZONE`` unless a view
activated another; Flask's ``DJQUEUE_TIME_ZONE``, default UTC), with the exact UTC time for a
hover (`exact`, `iso`); durations carry their unit (`span`). Arguments are the one value that
may hold personal data or secrets: `args_text` hides them all when the site says so
(``web_show_args``), and always masks values under keys that name a secret, as Django's error
pages do with settings.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from .i18n import gettext, ngettext

#: The zone times are shown in for the current request (`in_zone`).
_zone: ContextVar[dt.tzinfo] = ContextVar("djqueue_display_zone", default=dt.UTC)

#: Keys whose values are never shown: the names Django's error reports treat as secret.
SECRET_KEYS = re.compile(r"api|token|key|secret|pass|signature|cookie|auth", re.IGNORECASE)
MASK = "********"
#: Characters of arguments shown in a list row.
ARGS_IN_LIST = 120


def number(value: int | float) -> str:
    """``12345`` -> ``"12,345"``."""
    return f"{value:,}" if isinstance(value, int) else f"{value:,.1f}"


def _moment(value: float | None) -> dt.datetime | None:
    """The UTC time of an epoch value, or None for one no calendar holds (a bad entry's
    ``1e17`` or ``inf`` must not break the page that lists it)."""
    if value is None or not math.isfinite(value):
        return None
    try:
        return dt.datetime.fromtimestamp(value, dt.UTC)
    except (OverflowError, OSError, ValueError):
        return None


@contextmanager
def in_zone(zone: dt.tzinfo) -> Iterator[None]:
    """Times computed inside the block read in ``zone`` (`pages.serve` wraps every handler)."""
    token = _zone.set(zone)
    try:
        yield
    finally:
        _zone.reset(token)


def timestamp(value: float | None) -> str:
    """The local time, to the second, with the zone's abbreviation (or offset):
    ``"2026-11-23 09:41:07 CET"``, ``"2026-11-23 08:41:07 UTC"``; empty when unknown."""
    moment = _moment(value)
    if moment is None:
        return ""
    local = moment.astimezone(_zone.get())
    name = local.tzname() or local.strftime("%z")
    return f"{local:%Y-%m-%d %H:%M:%S} {name}"


def iso(value: float | None) -> str:
    """ISO 8601 in UTC with milliseconds, for a ``<time datetime=...>`` and a hover."""
    moment = _moment(value)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z") if moment else ""


def exact(value: float | None) -> str:
    """The hover of a time shown as "3 minutes ago": the local time and the UTC one,
    ``"2026-11-23 09:41:07 CET (UTC 2026-11-23T08:41:07.000Z)"``; empty when unknown."""
    local = timestamp(value)
    return f"{local} (UTC {iso(value)})" if local else ""


def relative(value: float | None, now: float | None = None) -> str:
    """``"3 minutes ago"``, ``"in 12 seconds"``, ``"just now"``; empty when unknown."""
    if _moment(value) is None or value is None:
        return ""
    delta = value - (time.time() if now is None else now)
    ahead, seconds = delta > 0, abs(delta)
    if seconds < 1:
        return gettext("just now")
    text = duration(seconds)
    return (gettext("in %(time)s") if ahead else gettext("%(time)s ago")) % {"time": text}


def duration(seconds: float) -> str:
    """The largest whole unit: ``"45 seconds"``, ``"3 minutes"``, ``"2 days"``."""
    if seconds >= 86400:
        n = int(seconds // 86400)
        return ngettext("%(n)s day", "%(n)s days", n) % {"n": n}
    if seconds >= 3600:
        n = int(seconds // 3600)
        return ngettext("%(n)s hour", "%(n)s hours", n) % {"n": n}
    if seconds >= 60:
        n = int(seconds // 60)
        return ngettext("%(n)s minute", "%(n)s minutes", n) % {"n": n}
    n = int(seconds)
    return ngettext("%(n)s second", "%(n)s seconds", n) % {"n": n}


def latency(seconds: float) -> str:
    """A queue's latency, with its unit: ``"0 s"`` for none, else as `span`."""
    if seconds <= 0:
        return gettext("%(n)s s") % {"n": 0}
    return span(seconds)


def span(seconds: float) -> str:
    """A duration with its unit, to a precision a person reads at a glance: ``"12 ms"``,
    ``"3.4 s"``, ``"42 s"``, ``"2 min"``, ``"1 h 5 min"``, ``"3 d 4 h"``."""
    if seconds < 1:
        return gettext("%(n)s ms") % {"n": f"{max(seconds, 0) * 1000:.0f}"}
    if seconds < 60:
        return gettext("%(n)s s") % {"n": f"{seconds:.1f}" if seconds < 10 else f"{seconds:.0f}"}
    minutes = int(seconds // 60)
    if minutes < 60:
        return gettext("%(n)s min") % {"n": minutes}
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        if minutes:
            return gettext("%(h)s h %(min)s min") % {"h": hours, "min": minutes}
        return gettext("%(n)s h") % {"n": hours}
    days, hours = divmod(hours, 24)
    if hours:
        return gettext("%(d)s d %(h)s h") % {"d": days, "h": hours}
    return gettext("%(n)s d") % {"n": days}


def kilobytes(value: int) -> str:
    """An RSS in kB as ``"812 kB"``, ``"143.2 MB"`` or ``"1.1 GB"``."""
    if value < 1024:
        return gettext("%(n)s kB") % {"n": value}
    if value < 1024 * 1024:
        return gettext("%(n)s MB") % {"n": f"{value / 1024:.1f}"}
    return gettext("%(n)s GB") % {"n": f"{value / 1024 / 1024:.1f}"}


def redact(value: Any) -> Any:
    """``value`` with the values of secret-looking dict keys replaced by `MASK`."""
    if isinstance(value, dict):
        return {
            k: MASK if isinstance(k, str) and SECRET_KEYS.search(k) else redact(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [redact(v) for v in value]
    return value


def args_text(args: list[Any], show: bool, limit: int | None = ARGS_IN_LIST) -> str:
    """Arguments as JSON, secrets masked, cut to ``limit`` characters (None: whole); with
    ``show`` False only how many there are."""
    if not show:
        n = len(args)
        return ngettext("(%(n)s argument hidden)", "(%(n)s arguments hidden)", n) % {"n": n}
    text = ", ".join(json.dumps(redact(a), ensure_ascii=False) for a in args)
    if limit is not None and len(text) > limit:
        return text[: limit - 1] + "…"
    return text


def payload_text(item: dict[str, Any], show_args: bool) -> str:
    """The whole job, indented, secret-looking values masked at any depth (the arguments
    altogether when hidden)."""
    shown = redact(item)
    if "args" in shown and not show_args:
        args = shown["args"]
        shown["args"] = args_text(args if isinstance(args, list) else [], False)
    if isinstance(shown.get("error_backtrace"), str) and len(shown["error_backtrace"]) > 80:
        shown["error_backtrace"] = gettext("(compressed; decoded below)")
    return json.dumps(shown, indent=2, ensure_ascii=False, sort_keys=False, default=str)
