"""The Limits page: every limiter of the cluster (`djqueue.limits`), its limit, how much of
it is in use now, how often it refused a job and how many jobs are parked for its slots,
read through `djqueue.api.limits`."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..api.limits import limiters
from ..config import Settings
from ..store.limits import LimiterFigures
from . import display
from .i18n import gettext


@dataclass
class LimiterRow:
    name: str
    kind: str
    limit: str
    used: str
    hits: str
    #: Jobs parked for one of its slots (a concurrency limiter; empty for the others).
    parked: str
    #: The limit as a number, the bar's end.
    capacity: int


@dataclass
class LimitsPage:
    rows: list[LimiterRow]
    problems: list[str] = field(default_factory=list)


def _seconds(per: float) -> str:
    return f"{per:g}"


def _row(found: LimiterFigures) -> LimiterRow:
    if found.kind == "concurrent":
        kind, limit = gettext("at once"), gettext("%(limit)s at once") % {"limit": found.limit}
    elif found.kind == "window":
        kind = gettext("sliding window")
        limit = gettext("%(limit)s per %(per)s s") % {
            "limit": found.limit,
            "per": _seconds(found.per),
        }
    else:
        kind = gettext("token bucket")
        limit = gettext("%(limit)s per %(per)s s") % {
            "limit": found.limit,
            "per": _seconds(found.per),
        }
    used = f"{found.used:g}"
    parked = display.number(found.parked) if found.kind == "concurrent" or found.parked else ""
    return LimiterRow(
        found.name, kind, limit, used, display.number(found.hits), parked, found.limit
    )


def limits_page(settings: Settings | None = None) -> LimitsPage:
    found = limiters(settings)
    rows = [_row(f) for f in found if not f.problem]
    problems = [f"{f.name}: {f.problem}" for f in found if f.problem]
    return LimitsPage(rows, problems)
