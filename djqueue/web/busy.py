"""The busy page: every live process, what each is running now, and quiet / stop.

Processes and work are read from their heartbeats (`djqueue.api.ProcessSet`, `WorkSet`), so
the page is as fresh as the last beat, a few seconds at most. Quiet and stop are not sent to a
process directly: they go through its remote-signal key, which its next heartbeat pops, so
they reach a worker on another host (or a Ruby Sidekiq process) the same way.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from ..api import Process, ProcessSet, WorkSet
from ..config import Settings, get_settings
from ..errors import EmbeddedProcess
from ..job_options import time_limit
from . import display
from .i18n import gettext, ngettext
from .problems import problem


@dataclass
class ProcessRow:
    identity: str
    hostname: str
    pid: int
    tag: str
    labels: list[str]
    queues: str
    concurrency: int
    busy: int
    rss: str
    beat: str
    beat_exact: str
    started: str
    version: str
    quiet: bool
    #: An embedded Sidekiq 7+ process: it runs inside another application (Puma).
    embedded: bool
    #: Whether the page offers Quiet and Stop for it (not for an embedded process, which
    #: ignores them).
    can_signal: bool


@dataclass
class WorkRow:
    process: str
    thread: str
    jid: str
    job_name: str
    args: str
    queue: str
    started: str
    started_exact: str
    #: The job's ``time_limit`` (seconds) when it has run past it, else None: it did not stop
    #: when interrupted (`djqueue.worker.time_limit`), or the last beat is a moment old.
    over_limit: float | None = None


@dataclass
class BusyPage:
    processes: list[ProcessRow]
    work: list[WorkRow]
    threads: int
    busy: int
    rss: str
    #: The process and work hashes that could not be read, one line each.
    problems: list[str]


#: The signals the page may send, by action name.
SIGNALS = {"quiet": "TSTP", "stop": "TERM"}


def busy_page(settings: Settings | None = None) -> BusyPage:
    listing = ProcessSet(settings=settings)
    processes = listing.processes()
    works = WorkSet(settings=settings)
    now = time.time()
    show_args = (settings or get_settings()).web_show_args
    rows = [_process_row(p, now) for p in processes]
    work = [
        WorkRow(
            process=w.process,
            thread=w.thread_id,
            jid=w.jid or "",
            job_name=w.payload.display_name or gettext("(none)"),
            args=display.args_text(w.payload.display_args, show_args),
            queue=w.queue,
            started=display.relative(w.run_at, now),
            started_exact=display.exact(w.run_at),
            over_limit=_over_limit(w.payload.get("time_limit"), w.run_at, now),
        )
        for w in works.work()
    ]
    return BusyPage(
        processes=rows,
        work=work,
        threads=sum(p.concurrency for p in processes),
        busy=sum(p.busy for p in processes),
        rss=display.kilobytes(sum(p.rss for p in processes)),
        problems=[problem(key, what) for key, what in listing.problems + works.problems],
    )


def signal(action: str, identity: str | None, settings: Settings | None = None) -> tuple[int, str]:
    """Send ``"quiet"`` or ``"stop"`` to one process (None: every live one); how many got it,
    and the message."""
    name = SIGNALS[action]
    processes = ProcessSet(settings=settings).processes()
    chosen = [p for p in processes if identity is None or p.identity == identity]
    if identity is not None and not chosen:
        return 0, gettext("Process %(identity)s is no longer running.") % {"identity": identity}
    if identity is None:
        # Quiet All and Stop All pass over embedded processes, as Sidekiq's Busy page does.
        chosen = [p for p in chosen if p.can_signal]
    for process in chosen:
        try:
            process.signal(name)
        except EmbeddedProcess as exc:
            return 0, str(exc)
    count = len(chosen)
    if action == "quiet":
        done = ngettext("Quieted %(n)s process.", "Quieted %(n)s processes.", count)
    else:
        done = ngettext("Asked to stop %(n)s process.", "Asked to stop %(n)s processes.", count)
    return count, done % {"n": count}


def _over_limit(limit: object, run_at: float | None, now: float) -> float | None:
    """``limit`` when a job that started at ``run_at`` has run past it (a limit that is not
    one, written by another client, is no limit, as for the worker)."""
    try:
        seconds = time_limit(limit)
    except ValueError:
        return None
    if seconds is None or run_at is None or now - run_at <= seconds:
        return None
    return seconds


def _process_row(process: Process, now: float) -> ProcessRow:
    weights = process.weights
    queues = ", ".join(f"{q} ({weights[q]})" if weights.get(q) else q for q in process.queues)
    return ProcessRow(
        identity=process.identity,
        hostname=process.hostname,
        pid=process.pid,
        tag=process.tag,
        labels=process.labels,
        queues=queues,
        concurrency=process.concurrency,
        busy=process.busy,
        rss=display.kilobytes(process.rss),
        beat=display.relative(process.beat, now),
        beat_exact=display.exact(process.beat),
        started=display.relative(process.started_at, now),
        version=process.version,
        quiet=process.quiet,
        embedded=process.embedded,
        can_signal=process.can_signal,
    )
