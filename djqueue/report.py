"""Plain-text reports of what the inspection API sees, for the command line (not part of the
API: the text of the CLI, kept beside it in the core so every front end prints the same).

``djqueue stats`` and ``djqueue queues`` print these; the framework commands (Django's, Flask's)
print the same text, so a figure reads alike wherever it is asked for.
"""

from __future__ import annotations

import datetime as dt

from .api import Queue
from .api.figures import figures
from .config import Settings
from .lifecycle import JobStatus, status
from .outbox import OutboxStats


def stats(settings: Settings | None = None, outbox: OutboxStats | None = None) -> str:
    """The figures of `djqueue.api.figures.figures`, one per line, then the default queue's
    latency and the paused queues; the outbox: ``outbox`` given (a framework command read its
    database), else as the last relay round published it, with its age (this command sees no
    database)."""
    overview = figures(settings, outbox=outbox, with_queues=False)
    rows: list[tuple[str, object]] = [
        (f.name, f.value)
        for f in overview.figures
        if f.value is not None and not f.name.startswith("outbox")
    ]
    rows.append(("latency", f"{overview.latency:.1f}s (default queue)"))
    if overview.paused:
        rows.append(("paused", ", ".join(overview.paused)))
    if overview.outbox is not None:
        shown = f"{overview.outbox.size} (oldest {overview.outbox.age_text}"
        if overview.outbox_published_ago is not None:
            shown += f"; relay {overview.outbox_published_ago:.0f}s ago"
        rows.append(("outbox", shown + ")"))
    rows += [("bad key", f"{key} {what} (counted as 0)") for key, what in overview.problems]
    return "\n".join(f"{label:<10} {value}" for label, value in rows)


def queues(settings: Settings | None = None) -> str:
    """Every queue of `Queue.summary` with its size, its parked jobs (out of the queue, waiting
    for a limiter's slot) and latency, one per line, then ``paused`` for a paused queue and
    what is wrong with a queue whose key is not a list."""
    found = Queue.summary(settings=settings)
    if not found:
        return "no queues"
    width = max(5, *(len(q.name) for q in found))
    lines = [f"{'queue':<{width}}  {'size':>8}  {'parked':>8}  {'latency':>10}"]
    for q in found:
        parked = f"{q.parked}+" if q.parked_floor else str(q.parked)
        note = "  ".join(filter(None, ("paused" if q.paused else "", q.problem)))
        lines.append(
            f"{q.name:<{width}}  {q.size:>8}  {parked:>8}  {q.latency:>9.1f}s  {note}".rstrip()
        )
    return "\n".join(lines)


def limits(settings: Settings | None = None) -> str:
    """``djqueue limits``: every limiter of `djqueue.api.limits.limiters` (the Limits page's
    read), one per line, then what is wrong with a limiter that cannot be read."""
    from .api.limits import limiters

    found = limiters(settings)
    if not found:
        return "no limiter was used in the last week"
    rows = [("limiter", "kind", "limit", "in use", "refused", "parked")]
    for limiter in found:
        if limiter.problem:
            continue
        per = f" per {limiter.per:g}s" if limiter.kind != "concurrent" else " at once"
        rows.append(
            (
                limiter.name,
                limiter.kind,
                f"{limiter.limit}{per}",
                f"{limiter.used:g}",
                str(limiter.hits),
                str(limiter.parked) if limiter.kind == "concurrent" else "",
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [
        "  ".join(text.ljust(width) for text, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]
    lines += [
        f"bad limiter {limiter.name}: {limiter.problem}" for limiter in found if limiter.problem
    ]
    return "\n".join(lines)


def periodic(settings: Settings | None = None, now: float | None = None) -> str:
    """``djqueue periodic``: every periodic job with its state, schedule, last and next run;
    then, for each bad entry (never fired by djqueue), what is wrong with it."""
    from .api import PeriodicSet
    from .store.periodic import BadPeriodicSet

    try:
        entries = PeriodicSet(settings=settings).all()
    except BadPeriodicSet as exc:
        return f"no periodic job can be read: {exc}"
    if not entries:
        return "no periodic jobs"
    rows = [("name", "status", "cron", "job", "queue", "last run", "next run")]
    for entry in entries:
        note = "(bad: see below)" if entry.error else ""
        cron = " ".join(filter(None, (entry.cron, note)))
        rows.append(
            (
                entry.name,
                entry.status,
                cron,
                entry.klass or "-",
                "-" if entry.bad else entry.queue,
                _when(entry.last_run, seconds_only=True) or "never",
                _when(entry.next_run(now), seconds_only=True) or "-",
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [
        "  ".join(text.ljust(width) for text, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]
    bad = [f"  {entry.name}: {entry.not_fired}" for entry in entries if entry.error]
    if bad:
        lines += ["", "bad entries (delete or rewrite them):", *bad]
    return "\n".join(lines)


def _when(seconds: float | None, *, seconds_only: bool = False) -> str:
    if seconds is None:
        return ""
    moment = dt.datetime.fromtimestamp(seconds, tz=dt.UTC)
    if seconds_only:
        return moment.strftime("%Y-%m-%d %H:%M:%S UTC")
    return moment.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + " UTC"


def status_rows(st: JobStatus) -> list[tuple[str, str]]:
    """A tracked job's lifecycle as (label, text) rows, empty ones left out: ``djqueue status``
    prints them, and the admin's and the dashboard's job pages show them."""
    error = f"{st.error_class}: {st.error_message or ''}" if st.error_class else ""
    rows = [
        ("state", st.state + (" (cancel requested)" if st.cancel_requested else "")),
        ("job", st.job_class or ""),
        ("queue", st.queue or ""),
        ("scheduled", _when(st.scheduled_at)),
        ("enqueued", _when(st.enqueued_at)),
        ("started", _when(st.started_at)),
        ("retry at", _when(st.retry_at)),
        ("finished", _when(st.finished_at)),
        ("attempts", str(st.attempts) if st.state != "unknown" else ""),
        ("process", st.process or ""),
        ("error", error),
        ("result", (st.result_json or "") if st.state == "completed" else ""),
        ("kept for", f"{st.retention} s once finished" if st.retention else ""),
    ]
    return [(label, text) for label, text in rows if text]


def job_status(jid: str, settings: Settings | None = None) -> str:
    """``djqueue status JID``: the job's lifecycle, one field per line."""
    st = status(jid, settings)
    if st.state == "unknown":
        return (
            f"job {jid}: unknown (not tracked: pushed without a retention, expired, "
            f"or never pushed)"
        )
    rows = [("jid", st.jid), *status_rows(st)]
    return "\n".join(f"{label:<10} {text}" for label, text in rows)
