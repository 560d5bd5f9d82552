"""Periodic jobs: declared in code or settings, fired by every worker, each tick exactly once.

::

    @job(cron="*/5 * * * *")                 # every five minutes, UTC
    def sweep(): ...

    periodic("0 9 * * 1-5", send_digest, timezone="Europe/Paris", args=["daily"])

    DJQUEUE = {"PERIODIC": {"billing": {"cron": "0 3 * * *", "class": "Billing::Run"}}}

There is no scheduler process to keep alive: every worker runs a periodic poller
(`djqueue.worker.periodic_poller`), and a tick is claimed in Redis in the same step as its job is
pushed (``lua/periodic_fire.lua``), so one poller pushes it and the others see it taken. The
schedule lives in sidekiq-cron's layout (`djqueue.store.periodic`), shared with a Ruby app running
sidekiq-cron: each side fires the other's entries and both claim ticks the same way.

**Catch-up.** A poller fires the latest tick due, once, if no one has claimed it; so a worker
back after a gap runs the one tick missed last, not every tick missed. ``catch_up=False`` fires
a tick only within `GRACE` seconds of its time (sidekiq-cron's own rule), skipping missed ones.
Ticks that fall while a job is disabled are claimed as skipped, so enabling it never fires an
old tick.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .job_options import _payload_options, check_options
from .payload import check_json_args
from .periodic_cron import InvalidCron, is_zone, parse, unshared

#: Seconds after its time within which a tick of a ``catch_up=False`` job still fires.
GRACE = 60.0
#: The ``source`` field of entries declared in code or settings: only these are removed from
#: Redis when no running process declares them any more (see `djqueue.worker.periodic_sync`).
SOURCE = "djqueue"
#: A field naming who declared the entry, which sidekiq-cron 2 keeps: its ``save`` (a disable or
#: enable from its Cron tab) writes ``source`` again as "dynamic" unless it is "schedule" (its
#: own schedule file, which it would delete when its file no longer lists it).
DECLARED_BY = "declared_by"


def is_declared(fields: Mapping[str, str]) -> bool:
    """Whether a stored entry was declared by djqueue code or settings (and not by Ruby, nor by
    hand): it carries `DECLARED_BY`, or, written by an earlier djqueue, only ``source``."""
    return fields.get(DECLARED_BY) == SOURCE or fields.get("source") == SOURCE


#: Keys a ``PERIODIC`` settings entry may hold besides payload options (retry, tags...).
SETTINGS_KEYS = frozenset(
    {"cron", "class", "args", "queue", "timezone", "description", "catch_up", "enabled"}
)


@dataclass(frozen=True)
class Periodic:
    """One periodic job as declared: its name in Redis, its schedule and the job it pushes."""

    name: str
    cron: str
    job: str
    args: tuple[Any, ...] = ()
    queue: str | None = None
    description: str = ""
    catch_up: bool = True
    enabled: bool = True
    options: Mapping[str, Any] = field(default_factory=dict, hash=False, compare=False)

    def message(self) -> dict[str, Any]:
        """The job sidekiq-cron stores as ``message`` and pushes (without jid and times)."""
        message: dict[str, Any] = {"retry": True, **self.options}
        message.update(
            {"class": self.job, "args": list(self.args), "queue": self.queue or "default"}
        )
        return message

    def fields(self) -> dict[str, str]:
        """The ``cron_job:NAME`` hash as sidekiq-cron 1.8 writes it, plus djqueue's fields.
        ``status`` and ``last_enqueue_time`` are left out: they belong to operators and runs."""
        return {
            "name": self.name,
            "klass": self.job,
            "cron": self.cron,
            "description": self.description,
            "args": _json(list(self.args)),
            "message": _json(self.message()),
            "date_as_argument": "false",
            "active_job": "false",
            "queue_name_prefix": "",
            "queue_name_delimiter": "",
            "symbolize_args": "false",
            "source": SOURCE,
            DECLARED_BY: SOURCE,
            "catch_up": "true" if self.catch_up else "false",
        }


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


_lock = threading.Lock()
_declared: dict[str, Periodic] = {}


def periodic(
    cron: str,
    job: Any,
    *,
    name: str | None = None,
    args: Iterable[Any] = (),
    queue: str | None = None,
    timezone: str | None = None,
    description: str = "",
    catch_up: bool = True,
    enabled: bool = True,
    **options: Any,
) -> Periodic:
    """Run ``job`` on the schedule ``cron``; every worker of this codebase takes part.

    ``job`` is a registered job (a ``@job`` function or a `djqueue.Job` class) or a job name
    (any class name, for jobs another codebase runs). ``timezone`` is an IANA name (default
    UTC). ``name`` defaults to the job's name; declare the same job twice with two names.
    ``enabled=False`` declares it disabled (an operator's later choice in a UI stays over
    redeploys either way). Other keyword arguments are job options (``retry``, ``tags``...).
    """
    declaration = build(
        name=name,
        cron=cron,
        job=job,
        args=args,
        queue=queue,
        timezone=timezone,
        description=description,
        catch_up=catch_up,
        enabled=enabled,
        options=options,
    )
    with _lock:
        existing = _declared.get(declaration.name)
        if existing is not None and existing != declaration:
            raise ValueError(
                f"periodic job {declaration.name!r} is declared twice with different schedules "
                f"or jobs; give one of them another name=..."
            )
        _declared[declaration.name] = declaration
    return declaration


def build(
    *,
    name: str | None,
    cron: str,
    job: Any,
    args: Iterable[Any] = (),
    queue: str | None = None,
    timezone: str | None = None,
    description: str = "",
    catch_up: bool = True,
    enabled: bool = True,
    options: Mapping[str, Any] | None = None,
) -> Periodic:
    """A checked `Periodic`; raises ValueError (`djqueue.periodic_cron.InvalidCron`) saying what is
    wrong. The job's own options (queue, retry...) apply unless given here."""
    job_name = job if isinstance(job, str) else getattr(job, "job_name", None)
    if not job_name:
        raise TypeError(f"periodic() needs a registered job or a job name, got {job!r}")
    if not isinstance(cron, str):
        raise InvalidCron(f"a cron expression must be a string, got {cron!r}")
    if timezone and not is_zone(timezone):
        raise InvalidCron(f"{timezone!r} is not a time zone (an IANA name: 'Europe/Paris')")
    text = f"{cron} {timezone}" if timezone else cron
    schedule = parse(text)
    if timezone and schedule.zone_name != timezone:
        raise InvalidCron(f"{text!r}: the expression already ends with a time zone")
    construct = unshared(schedule)
    if construct:
        raise InvalidCron(
            f"{text!r}: {construct}: sidekiq-cron, which shares the schedule, cannot read it "
            f"alike; write it without"
        )
    job_options = dict(getattr(job, "job_options", {}) or {})
    job_options.update(check_options(_payload_options(dict(options or {}))))
    if queue is not None:
        job_options.update(check_options({"queue": queue}))
    arguments = list(args)
    check_json_args(arguments)
    for flag, value in (("catch_up", catch_up), ("enabled", enabled)):
        if not isinstance(value, bool):
            raise TypeError(f"{flag} must be True or False, got {value!r}")
    final_name = name or job_name
    if not isinstance(final_name, str) or not final_name or ":" in final_name:
        raise ValueError(
            f"a periodic job's name must be a non-empty string without ':', got {final_name!r}"
        )
    return Periodic(
        name=final_name,
        cron=schedule.text,
        job=job_name,
        args=tuple(arguments),
        queue=job_options.pop("queue", None),
        description=str(description or ""),
        catch_up=catch_up,
        enabled=enabled,
        options=job_options,
    )


def from_settings(entries: Mapping[str, Any]) -> list[Periodic]:
    """The ``PERIODIC`` setting (name -> ``{"cron", "class", "args", "queue", "timezone",
    "description", "catch_up", "enabled", and job options}``) as declarations."""
    if not isinstance(entries, Mapping):
        raise TypeError(f"expected a dict of name -> entry, got {type(entries).__name__}")
    found = []
    for name, entry in entries.items():
        if not isinstance(entry, Mapping):
            raise TypeError(f"{name!r}: expected a dict, got {type(entry).__name__}")
        if "cron" not in entry or "class" not in entry:
            raise ValueError(f"{name!r}: 'cron' and 'class' are required")
        values = dict(entry)
        options = {k: v for k, v in values.items() if k not in SETTINGS_KEYS}
        try:
            found.append(
                build(
                    name=name,
                    cron=values["cron"],
                    job=values["class"],
                    args=values.get("args", ()),
                    queue=values.get("queue"),
                    timezone=values.get("timezone"),
                    description=values.get("description", ""),
                    catch_up=values.get("catch_up", True),
                    enabled=values.get("enabled", True),
                    options=options,
                )
            )
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"{name!r}: {exc}") from None
    return found


def declared(settings_entries: Mapping[str, Any] | None = None) -> list[Periodic]:
    """What this process declares: ``periodic()`` and ``@job(cron=...)`` calls, then the
    settings' entries (a name in both must declare the same thing)."""
    with _lock:
        found = dict(_declared)
    for entry in from_settings(settings_entries or {}):
        if entry.name in found and found[entry.name] != entry:
            raise ValueError(
                f"periodic job {entry.name!r} is declared in code and in the PERIODIC setting "
                f"differently; keep one"
            )
        found[entry.name] = entry
    return [found[name] for name in sorted(found)]


def forget(name: str) -> None:
    """Drop a declaration made in this process (tests, reloaded modules)."""
    with _lock:
        _declared.pop(name, None)
