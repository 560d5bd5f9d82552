"""How figures, times and arguments read on a page, the same in the admin and the dashboard.

Everything here returns plain text; the renderers escape it. Arguments are the one value that
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
from typing import Any

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


def timestamp(value: float | None) -> str:
    """UTC, to the second: ``"2026-11-23 08:41:07 UTC"``; empty when unknown."""
    moment = _moment(value)
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC") if moment else ""


def iso(value: float | None) -> str:
    """ISO 8601 with milliseconds, for a ``<time datetime=...>`` attribute."""
    moment = _moment(value)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z") if moment else ""


def relative(value: float | None, now: float | None = None) -> str:
    """``"3 minutes ago"``, ``"in 12 seconds"``, ``"just now"``; empty when unknown."""
    if _moment(value) is None or value is None:
        return ""
    delta = value - (time.time() if now is None else now)
    ahead, seconds = delta > 0, abs(delta)
    if seconds < 1:
        return "just now"
    text = duration(seconds)
    return f"in {text}" if ahead else f"{text} ago"


def duration(seconds: float) -> str:
    """The largest whole unit: ``"45 seconds"``, ``"3 minutes"``, ``"2 days"``."""
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size:
            count = int(seconds // size)
            return f"{count} {unit}{'s' if count != 1 else ''}"
    count = int(seconds)
    return f"{count} second{'s' if count != 1 else ''}"


def latency(seconds: float) -> str:
    """A queue's latency: ``"0"`` for none, ``"1.3 s"``, ``"4 minutes"``."""
    if seconds <= 0:
        return "0"
    if seconds < 60:
        return f"{seconds:.1f} s"
    return duration(seconds)


def kilobytes(value: int) -> str:
    """An RSS in kB as ``"812 kB"``, ``"143.2 MB"`` or ``"1.1 GB"``."""
    if value < 1024:
        return f"{value} kB"
    if value < 1024 * 1024:
        return f"{value / 1024:.1f} MB"
    return f"{value / 1024 / 1024:.1f} GB"


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
        return f"({len(args)} argument{'s' if len(args) != 1 else ''} hidden)"
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
        shown["error_backtrace"] = "(compressed; decoded below)"
    return json.dumps(shown, indent=2, ensure_ascii=False, sort_keys=False, default=str)
