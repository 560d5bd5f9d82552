"""Log lines in Sidekiq's shape, one per event, cheap enough for the hot path.

    2026-11-22T10:00:00.123Z pid=123 tid=2n5 class=app.jobs.send jid=8f3c... INFO: start

The job's class and jid are kept in a context variable while it runs, so lines its own code logs
(through any logger that reaches these handlers) carry them too. ``--json-logs`` writes the same
fields as one JSON object per line, for log collectors.

Lines are formatted and written by one thread of their own (`BackgroundHandler`): with ten
processors writing two lines per job through one locked handler, the lock and the write per
line cost more than a short job itself.
"""

from __future__ import annotations

import contextvars
import json
import logging
import logging.handlers
import os
import queue
import re
import sys
import threading
import time
from typing import Any, cast

from ..context import FIELD as CONTEXT_FIELD
from ..context import carried, request_id

logger = logging.getLogger("djqueue.worker")

#: ``(text, fields)`` of the job running in this thread: "class=... jid=..." and its dict.
job_context: contextvars.ContextVar[tuple[str, dict[str, Any]] | None] = contextvars.ContextVar(
    "djqueue_job_log_context", default=None
)

#: A job's ``start``/``done`` line on its way to the writer without a `logging.LogRecord`
#: (`BackgroundHandler.put_line`): the logging thread's template record (`record_from`), the
#: time, the message, the elapsed seconds or None, the thread, the job context, the request id.
Line = tuple[
    logging.LogRecord,
    float,
    str,
    float | None,
    int,
    tuple[str, dict[str, Any]] | None,
    str | None,
]

_DIGITS = "0123456789abcdefghijklmnopqrstuvwxyz"
_tids: dict[int, str] = {}


def tid(ident: int | None = None) -> str:
    """A short base-36 id for a thread, the form Sidekiq writes in logs and the busy hash."""
    ident = threading.get_ident() if ident is None else ident
    cached = _tids.get(ident)
    if cached is None:
        n = (ident ^ os.getpid()) & 0xFFFFFFFFFFFF
        digits = []
        while True:
            n, rest = divmod(n, 36)
            digits.append(_DIGITS[rest])
            if not n:
                break
        cached = _tids[ident] = "".join(reversed(digits))
    return cached


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def escape(text: str) -> str:
    """Control characters as ``\\xNN``: a job's class, or anything else a payload carries,
    must not be able to start a forged line of its own in a text log."""
    if text.isprintable():  # the common case, checked in C
        return text
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def bind_job(payload: dict[str, Any]) -> contextvars.Token[Any]:
    """The job context of the lines logged while ``payload`` runs. ``class`` is the name a
    person knows the job by: ``display_class`` when the payload has one (a ``django.tasks``
    task's path rather than its wrapper job's name), as Sidekiq's UIs show it."""
    name = payload.get("display_class") or payload.get("class")
    jid = payload.get("jid")
    fields = {"class": name, "jid": jid}
    # The job's ``start`` and ``done`` lines are logged outside the middleware that binds
    # the request context, so the payload's request id is kept with the job's own context.
    if CONTEXT_FIELD in payload:
        rid = carried(payload).get("request_id")
        if rid is not None:
            fields["request_id"] = str(rid)
    return job_context.set((escape(f" class={name} jid={jid}"), fields))


#: Seconds the writer waits after a line before it writes what has piled up.
PAUSE = 0.005


def _request_id(found: str | None, context: tuple[str, dict[str, Any]] | None) -> str | None:
    """The id of the web request behind a line: ``found``, the one bound where the line was
    logged, or else the one its job context (`_context`) carries."""
    if found is None and context:
        found = context[1].get("request_id")
    return found


def _logged_request_id(record: logging.LogRecord) -> str | None:
    """The request id bound where ``record`` was logged (kept on the record when it is
    formatted on another thread)."""
    return record.djqueue_request_id if hasattr(record, "djqueue_request_id") else request_id()


def _thread(record: logging.LogRecord) -> int | None:
    """The thread that logged ``record``: with ``logging.logThreads`` off a record has none,
    and `BackgroundHandler` keeps it as ``djqueue_thread`` (else `tid` would name the writer)."""
    if record.thread is not None:
        return record.thread
    return getattr(record, "djqueue_thread", None)


def _process(process: int | None) -> int:
    """The process that logged: with ``logging.logProcesses`` off a record has none, and the
    line is written in the process that logged it (the writer is a thread)."""
    return os.getpid() if process is None else process


def _context(record: logging.LogRecord) -> tuple[str, dict[str, Any]] | None:
    """The job context of the thread that logged ``record`` (kept on the record when it is
    formatted on another thread)."""
    if hasattr(record, "djqueue_context"):
        return record.djqueue_context
    return job_context.get()


class BackgroundHandler(logging.Handler):
    """Takes records on any thread and hands them to one writer thread, which formats them
    with ``target``'s formatter and writes what has piled up in one write and one flush.

    The logging thread only captures what would change later: its job context, and the
    message with its arguments merged (so an argument changed after the call does not change
    the line). `close` writes what is left, so a clean exit loses no line; SIGKILL loses the
    few not yet written.
    """

    def __init__(self, target: logging.StreamHandler[Any]) -> None:
        super().__init__()
        self.target = target
        #: Console handlers `setup` took off their loggers, for `teardown` to put back.
        self.set_aside: list[tuple[logging.Logger, logging.Handler]] = []
        self.queue: queue.SimpleQueue[logging.LogRecord | Line | None] = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._write, name="djqueue-log", daemon=True)
        self.thread.start()

    def handle(self, record: logging.LogRecord) -> logging.LogRecord | bool:  # type: ignore[override]
        # No handler lock: the queue is thread-safe, and the lock is what we avoid.
        if self.filters and not self.filter(record):
            return False
        record.djqueue_context = job_context.get()
        record.djqueue_request_id = request_id()
        if record.thread is None:  # logging.logThreads off: `tid` must not name the writer
            record.djqueue_thread = threading.get_ident()
        if record.args:
            record.msg = record.getMessage()
            record.args = None
        self.queue.put(record)
        return True

    def emit(self, record: logging.LogRecord) -> None:
        self.handle(record)

    def put_line(
        self, template: logging.LogRecord, created: float, message: str, elapsed: float | None
    ) -> None:
        """Queue a job's line as its fields, for the writer to turn into text without a
        record: only for a line that reaches this handler alone (`sole_handler`). It captures
        what `handle` does: the job context and the request id, and the thread."""
        self.queue.put(
            (
                template,
                created,
                message,
                elapsed,
                threading.get_ident(),
                job_context.get(),
                request_id(),
            )
        )

    def _write(self) -> None:
        get, get_nowait = self.queue.get, self.queue.get_nowait
        target = self.target
        while True:
            batch = [get()]
            if batch[0] is not None:
                # Let lines pile up a moment: one wake-up per line would cost the processors
                # a thread switch each.
                time.sleep(PAUSE)
            try:
                while len(batch) < 1000 and batch[-1] is not None:
                    batch.append(get_nowait())
            except queue.Empty:
                pass
            lines = []
            # `logging.Handler.format` without its call per line: the target's formatter,
            # as it is when the batch is written.
            formatter = target.formatter
            format_line = target.format if formatter is None else formatter.format
            # A job's `Line` becomes text in the worker's own format; were the format
            # replaced since the line was queued, the line is first made a record.
            own = cast(_Formatter, formatter) if type(formatter) in OWN_FORMATS else None
            for item in batch:
                if item is None:
                    continue
                try:
                    if not isinstance(item, tuple):
                        text = format_line(item)
                    elif own is not None:
                        text = own.job_line(item)
                    else:
                        text = format_line(as_record(item))
                    lines.append(text + target.terminator)
                except Exception:  # noqa: BLE001 - a bad record must not stop the log
                    target.handleError(as_record(item))
            try:
                with target.lock:  # type: ignore[union-attr]
                    if isinstance(target, logging.handlers.WatchedFileHandler):
                        target.reopenIfNeeded()
                    target.stream.write("".join(lines))
                    target.stream.flush()
            except Exception:  # noqa: BLE001
                if lines:
                    first = batch[0]
                    target.handleError(
                        logging.makeLogRecord({}) if first is None else as_record(first)
                    )
            if batch[-1] is None:
                return

    def restart(self) -> None:
        """In a forked child: a writer thread of its own (threads do not cross a fork), and a
        new queue, since the parent's writer may have been holding the old one's lock."""
        self.queue = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._write, name="djqueue-log", daemon=True)
        self.thread.start()

    def close(self) -> None:
        """Write every line still queued, stop the writer, close the target."""
        if self.thread.is_alive():
            self.queue.put(None)
            self.thread.join(10)
        self.target.close()
        super().close()


def record_from(
    template: logging.LogRecord, created: float, message: str, elapsed: float | None
) -> logging.LogRecord:
    """A copy of a thread's ``template`` record (`job_logger`) with the message and the time
    filled in: `logging.LogRecord` works out, for every record, what never changes between one
    thread's records (the process id, a system call; the thread's and the process's names;
    the file name, split twice). The copy has every field a made record has, with the same
    values."""
    record = logging.LogRecord.__new__(logging.LogRecord)
    record.__dict__ = template.__dict__.copy()
    record.msg = message
    record.created = created
    record.msecs = int((created - int(created)) * 1000) + 0.0
    record.relativeCreated = template.relativeCreated + (created - template.created) * 1000
    if elapsed is not None:
        record.elapsed = elapsed
    return record


def as_record(item: logging.LogRecord | Line) -> logging.LogRecord:
    """The record a queued `Line` stands for, as `BackgroundHandler.handle` would have kept it
    (a record as it is)."""
    if not isinstance(item, tuple):
        return item
    template, created, message, elapsed, thread, context, found = item
    record = record_from(template, created, message, elapsed)
    record.djqueue_context = context
    record.djqueue_request_id = found
    if record.thread is None:
        record.djqueue_thread = thread
    return record


#: The standard library's own dispatch of a record: an integration that wraps it (Sentry's
#: LoggingIntegration patches `Logger.callHandlers` to make breadcrumbs and log entries of
#: every line), or a logger class of the project's (`logging.setLoggerClass`), sees lines
#: only on the record path.
_DISPATCH = (logging.Logger.handle, logging.Logger.callHandlers)


def _stdlib_dispatch(source: logging.Logger) -> bool:
    kind = type(source)
    return (kind.handle, kind.callHandlers) == _DISPATCH


def sole_handler(source: logging.Logger) -> BackgroundHandler | None:
    """The worker's handler (`setup`) when an INFO line of ``source`` reaches it and nothing
    else: no filter on ``source`` or on the handler, not disabled, no other handler on the way
    up to where propagation stops, the handler's level at INFO or lower, and the logging
    module's own dispatch (no integration wrapping `Logger.callHandlers`). Then nothing but
    that handler's format can see the line, and `BackgroundHandler.put_line` may hand it over
    as fields (its writer makes a record of it after all for a format not its own). Else
    None: the line goes through `logging` as any other (a user's handler, filter or level
    sees it as before). Looked up for each line, so a configuration changed while the worker
    runs counts from the next line on."""
    if source.filters or source.disabled or not _stdlib_dispatch(source):
        return None
    found = None
    current: logging.Logger | None = source
    while current is not None:
        handlers = current.handlers
        if handlers:
            if found is not None or len(handlers) != 1:
                return None
            found = handlers[0]
        if not current.propagate:
            break
        current = current.parent
    if type(found) is BackgroundHandler and not found.filters and found.level <= logging.INFO:
        return found
    return None


class _Clock:
    """Formats a timestamp with millisecond precision, reusing the text of the current second."""

    def __init__(self) -> None:
        self.second = -1
        self.prefix = ""

    def __call__(self, created: float) -> str:
        second = int(created)
        if second != self.second:
            self.prefix = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
            self.second = second
        return f"{self.prefix}.{int((created - second) * 1000):03d}Z"


class _Formatter(logging.Formatter):
    """The worker's formats: one `line` from a line's fields, whether they come from a
    `logging.LogRecord` (`format`) or from a job's `Line` (`job_line`), so both are the same
    text. They share the clock that reuses the text of the current second."""

    def __init__(self) -> None:
        super().__init__()
        self.clock = _Clock()

    def line(
        self,
        created: float,
        process: int | None,
        thread: int | None,
        context: tuple[str, dict[str, Any]] | None,
        rid: str | None,
        levelname: str,
        message: str,
        elapsed: float | None,
        error: str | None,
    ) -> str:
        raise NotImplementedError

    def format(self, record: logging.LogRecord) -> str:
        context = _context(record)
        return self.line(
            record.created,
            _process(record.process),
            _thread(record),
            context,
            _request_id(_logged_request_id(record), context),
            record.levelname,
            record.getMessage(),
            getattr(record, "elapsed", None),
            self.formatException(record.exc_info) if record.exc_info else None,
        )

    def job_line(self, item: Line) -> str:
        """The text of a job's line that came without a record (`BackgroundHandler.put_line`)."""
        template, created, message, elapsed, thread, context, found = item
        return self.line(
            created,
            _process(template.process),
            thread,
            context,
            _request_id(found, context),
            template.levelname,
            message,
            elapsed,
            None,
        )


class TextFormatter(_Formatter):
    """``TIME pid=PID tid=TID [class=... jid=...] LEVEL: message``."""

    def line(
        self,
        created: float,
        process: int | None,
        thread: int | None,
        context: tuple[str, dict[str, Any]] | None,
        rid: str | None,
        levelname: str,
        message: str,
        elapsed: float | None,
        error: str | None,
    ) -> str:
        line = (
            f"{self.clock(created)} pid={process} tid={tid(thread)}"
            f"{context[0] if context else ''}{f' request_id={escape(rid)}' if rid else ''} "
            f"{levelname}: {escape(message)}"
        )
        if error is not None:
            line += "\n" + error
        return line


class JsonFormatter(_Formatter):
    """One JSON object per line: ``ts``, ``pid``, ``tid``, ``lvl``, ``msg``, ``ctx``."""

    def line(
        self,
        created: float,
        process: int | None,
        thread: int | None,
        context: tuple[str, dict[str, Any]] | None,
        rid: str | None,
        levelname: str,
        message: str,
        elapsed: float | None,
        error: str | None,
    ) -> str:
        data: dict[str, Any] = {
            "ts": self.clock(created),
            "pid": process,
            "tid": tid(thread),
            "lvl": levelname,
            "msg": message,
        }
        ctx = dict(context[1]) if context else {}
        if rid:
            ctx["request_id"] = rid
        if elapsed is not None:
            ctx["elapsed"] = round(elapsed, 3)
        if ctx:
            data["ctx"] = ctx
        if error is not None:
            data["error"] = error
        return json.dumps(data, default=str)


#: The formats whose text `BackgroundHandler` may build from a job's `Line`: exactly these
#: (a subclass may format records its own way).
OWN_FORMATS = (TextFormatter, JsonFormatter)


class PrivateFileHandler(logging.handlers.WatchedFileHandler):
    """A log file created readable by its owner only (0600), also when reopened after a
    rotation: job arguments and errors in it may be personal data. An existing file keeps its
    mode."""

    def _open(self) -> Any:
        fd = os.open(self.baseFilename, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        return open(fd, "a", encoding=self.encoding, errors=self.errors)  # noqa: SIM115


class StderrHandler(logging.StreamHandler):
    """Writes to a duplicate of the process's stderr descriptor, made at start-up, so a job
    that closes (or reopens) descriptor 2 does not silence the worker's log. Where stderr has
    no descriptor (replaced by a test runner), it writes to ``sys.stderr`` itself."""

    def __init__(self) -> None:
        stream: Any = sys.stderr
        self.own = False
        try:
            fd = os.dup(sys.stderr.fileno())
        except (AttributeError, OSError, ValueError):
            pass
        else:
            encoding = getattr(sys.stderr, "encoding", None) or "utf-8"
            stream = open(fd, "w", encoding=encoding, errors="backslashreplace")  # noqa: SIM115
            self.own = True
        super().__init__(stream)

    def close(self) -> None:
        with self.lock:  # type: ignore[union-attr]
            if self.own:
                self.own = False
                try:
                    self.stream.close()
                except OSError:
                    pass
        super().close()


def setup(
    verbose: bool = False, logfile: str | None = None, json_logs: bool = False
) -> logging.Handler:
    """Send every log line of the worker process through one handler and one format, to
    stderr or ``logfile``.

    The handler goes on the root logger, so djqueue's lines, the jobs' and the framework's come
    out once each, in one format (a line carries the job's class and jid, and the request id
    of the web request behind it). Handlers the process had that write to stderr or stdout
    (Django's ``console`` when ``DEBUG`` is on, a ``basicConfig``) are set aside while the
    worker runs, since they would print the same lines a second time in another format;
    handlers that write elsewhere (files, mail, a log service) are kept. A log file is reopened
    when rotated away (`PrivateFileHandler`).
    """
    target: logging.StreamHandler[Any]
    if logfile:
        target = PrivateFileHandler(logfile, encoding="utf-8")
    else:
        target = StderrHandler()
    target.setFormatter(JsonFormatter() if json_logs else TextFormatter())
    handler = BackgroundHandler(target)
    level = logging.DEBUG if verbose else logging.INFO
    root = logging.getLogger()
    for old in [h for h in root.handlers if getattr(h, "_djqueue_worker", False)]:
        teardown(old)
    configured = bool(root.handlers)
    handler.set_aside = _set_aside_console_handlers()
    setattr(handler, "_djqueue_worker", True)  # noqa: B010 - marks handlers setup() added
    root.addHandler(handler)
    if not configured:
        root.setLevel(level)
    base = logging.getLogger("djqueue")
    base.setLevel(level)
    base.propagate = True
    return handler


def _set_aside_console_handlers() -> list[tuple[logging.Logger, logging.Handler]]:
    """Remove the handlers that write to stderr or stdout, from every logger; returns them."""
    consoles = {sys.stderr, sys.stdout, sys.__stderr__, sys.__stdout__}
    loggers = [logging.getLogger()]
    loggers += [
        logger
        for logger in logging.Logger.manager.loggerDict.values()
        if isinstance(logger, logging.Logger)
    ]
    removed: list[tuple[logging.Logger, logging.Handler]] = []
    for logger in loggers:
        for h in list(logger.handlers):
            if (
                type(h) is logging.StreamHandler
                and getattr(h, "stream", None) in consoles
                and not getattr(h, "_djqueue_worker", False)
            ):
                logger.removeHandler(h)
                removed.append((logger, h))
    return removed


def teardown(handler: logging.Handler) -> None:
    """Undo `setup` (tests and embedded runs start and stop several workers): remove the
    handler, put back what it set aside, write what is queued."""
    root = logging.getLogger()
    if handler in root.handlers:
        root.removeHandler(handler)
    for logger, aside in getattr(handler, "set_aside", ()):
        if aside not in logger.handlers:
            logger.addHandler(aside)
    handler.close()


def after_fork() -> None:
    """After a fork (`flush` before it), on either side: restart the writer of every handler
    `setup` added."""
    for handler in logging.getLogger().handlers:
        if isinstance(handler, BackgroundHandler) and not handler.thread.is_alive():
            handler.restart()


def flush() -> None:
    """Write what is queued and stop the writer: before a fork (no thread then holds the
    stream's lock), and before a forked worker process leaves with ``os._exit``."""
    for handler in logging.getLogger().handlers:
        if isinstance(handler, BackgroundHandler) and handler.thread.is_alive():
            handler.queue.put(None)
            handler.thread.join(10)
