"""A job's ``start`` and ``done`` lines go to the worker's handler as fields, without a
`logging.LogRecord`, only when nothing but that handler's own format can see them; the text is
the same either way, and every other configuration sees the lines as records, as before."""

from __future__ import annotations

import json
import logging
import logging.config
import os
import re
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from djqueue import pipeline
from djqueue.worker import log
from djqueue.worker.fetch import Unit
from djqueue.worker.job_logger import JobLogger

from .test_worker_log import Keep

worker_log = logging.getLogger("djqueue.worker")
base_log = logging.getLogger("djqueue")


def run_jobs(*payloads: dict[str, object]) -> threading.Thread:
    """Run no-op jobs through the job logger step on a thread of their own, as a processor."""

    def processor() -> None:
        unit = Unit("default", b"{}", "working:x")
        for payload in payloads:
            pipeline.run([JobLogger()], (unit, payload), lambda: None)

    thread = threading.Thread(target=processor, name="djqueue-processor-test")
    thread.start()
    thread.join()
    return thread


PAYLOADS = [
    {"class": "app.Job", "jid": "a" * 24},
    {"class": "app.Re\nquest", "jid": "b" * 24, "request_context": {"request_id": "req-7"}},
    {"class": "app.Task", "display_class": "app.tasks.send", "jid": "c" * 24},
]


@pytest.fixture
def worker_setup(tmp_path: Path) -> Iterator[Callable[[bool], tuple[log.BackgroundHandler, Path]]]:
    """`log.setup` to a file, taken down (and the loggers' state put back) after the test.
    The test runner's capture handlers of the test's run are taken off the root logger: a
    worker's process has none, and they would see every line (the runner removes them after
    the run anyway)."""
    made: list[log.BackgroundHandler] = []
    saved = (base_log.level, base_log.propagate, worker_log.level, worker_log.propagate)
    root = logging.getLogger()

    def make(json_logs: bool) -> tuple[log.BackgroundHandler, Path]:
        for runner in [h for h in root.handlers if type(h).__module__.startswith("_pytest")]:
            root.removeHandler(runner)
        path = tmp_path / f"worker-{len(made)}.log"
        handler = log.setup(logfile=str(path), json_logs=json_logs)
        assert isinstance(handler, log.BackgroundHandler)
        made.append(handler)
        return handler, path

    yield make
    for handler in made:
        log.teardown(handler)
    base_log.setLevel(saved[0])
    base_log.propagate = saved[1]
    worker_log.setLevel(saved[2])
    worker_log.propagate = saved[3]


def written(handler: log.BackgroundHandler, path: Path) -> list[str]:
    """The lines in the worker's log once its writer has written what is queued."""
    log.flush()
    handler.restart()
    return path.read_text().splitlines()


def same_moment(line: str) -> str:
    """A line without what differs between two runs of one job: its time and elapsed."""
    line = re.sub(r"\d{4}-\d\d-\d\dT[\d:.]+Z", "TIME", line)
    line = re.sub(r"\d+\.\d{3} sec", "N sec", line)
    return re.sub(r'"elapsed": [\d.e-]+', '"elapsed": N', line)


def always(record: logging.LogRecord) -> bool:
    return True


@pytest.mark.parametrize("json_logs", [False, True])
def test_a_job_line_from_its_fields_is_the_text_of_its_record(worker_setup, json_logs):
    handler, path = worker_setup(json_logs)
    assert log.sole_handler(worker_log) is handler
    handled: list[logging.LogRecord] = []
    handler.handle = handled.append  # type: ignore[method-assign,assignment]
    fields = run_jobs(*PAYLOADS)
    assert handled == []  # the worker's own setup: the lines came as fields, not records
    del handler.handle
    handler.addFilter(always)  # lets every line through, but the lines are records now
    assert log.sole_handler(worker_log) is None
    records = run_jobs(*PAYLOADS)
    lines = written(handler, path)
    assert len(lines) == 12
    assert [same_moment(line) for line in lines[:6]] == [
        same_moment(line).replace(log.tid(records.ident), log.tid(fields.ident))
        for line in lines[6:]
    ]
    if not json_logs:
        assert f"tid={log.tid(fields.ident)} class=app.Re\\x0aquest jid=" in lines[2]
        assert lines[2].endswith(" request_id=req-7 INFO: start")
    else:
        parsed = [json.loads(line) for line in lines[:6]]
        assert parsed[2]["ctx"] == {
            "class": "app.Re\nquest",
            "jid": "b" * 24,
            "request_id": "req-7",
        }
        assert parsed[5]["msg"].startswith("done: ") and "elapsed" in parsed[5]["ctx"]
        assert parsed[4]["ctx"]["class"] == "app.tasks.send"


def test_a_line_queued_as_fields_and_formatted_after_the_format_changed_is_a_record(
    worker_setup,
):
    handler, path = worker_setup(False)
    handler.target.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))
    template = worker_log.makeRecord(worker_log.name, logging.INFO, "f", 0, "", (), None)
    handler.put_line(template, 1.7e9, "start", None)
    assert written(handler, path) == ["djqueue.worker INFO start"]


@pytest.mark.parametrize(
    "configure",
    [
        pytest.param(lambda keep: worker_log.addHandler(keep), id="handler-on-worker-logger"),
        pytest.param(lambda keep: base_log.addHandler(keep), id="handler-on-djqueue-logger"),
        pytest.param(lambda keep: logging.getLogger().addHandler(keep), id="handler-on-root"),
        pytest.param(
            lambda keep: logging.config.dictConfig(
                {
                    "version": 1,
                    "disable_existing_loggers": False,
                    "handlers": {"keep": {"()": lambda: keep}},
                    "loggers": {"djqueue": {"handlers": ["keep"], "level": "INFO"}},
                }
            ),
            id="dictConfig-as-django-LOGGING",
        ),
    ],
)
@pytest.mark.parametrize("json_logs", [False, True])
def test_a_users_handler_sees_the_job_lines_as_records(worker_setup, configure, json_logs):
    keep = Keep()
    configure(keep)  # first, as Django configures its LOGGING before the worker starts
    try:
        handler, path = worker_setup(json_logs)
        assert log.sole_handler(worker_log) is None
        thread = run_jobs(PAYLOADS[0])
    finally:
        for logger in (worker_log, base_log, logging.getLogger()):
            if keep in logger.handlers:
                logger.removeHandler(keep)
    assert [r.getMessage().split(":")[0] for r in keep.records] == ["start", "done"]
    assert all(r.thread == thread.ident and r.name == "djqueue.worker" for r in keep.records)
    assert keep.records[1].elapsed >= 0
    assert len(written(handler, path)) == 2  # the worker's own log has them too


def test_a_users_filter_formatter_or_level_governs_the_job_lines(worker_setup):
    handler, path = worker_setup(False)

    def no_start(record: logging.LogRecord) -> bool:
        return record.getMessage() != "start"

    handler.addFilter(no_start)
    run_jobs(PAYLOADS[0])
    handler.removeFilter(no_start)
    assert [line.rsplit(": ", 2)[1] for line in written(handler, path)] == ["done"]

    # A format not the worker's own: the writer makes a record of each line it is given.
    handler.target.setFormatter(logging.Formatter('{"msg": "%(message)s", "who": "%(name)s"}'))
    run_jobs(PAYLOADS[0])
    lines = [json.loads(same_moment(line)) for line in written(handler, path)[1:]]
    assert lines == [
        {"msg": "start", "who": "djqueue.worker"},
        {"msg": "done: N sec", "who": "djqueue.worker"},
    ]

    class Bracketed(log.TextFormatter):
        def format(self, record: logging.LogRecord) -> str:
            return f"[{super().format(record)}]"

    handler.target.setFormatter(Bracketed())
    run_jobs(PAYLOADS[0])
    lines = written(handler, path)[3:]
    assert len(lines) == 2 and all(line[0] == "[" and line[-1] == "]" for line in lines)
    handler.target.setFormatter(log.TextFormatter())

    for quiet in (
        lambda: worker_log.addFilter(lambda record: False),
        lambda: setattr(worker_log, "disabled", True),
        lambda: handler.setLevel(logging.WARNING),
        lambda: base_log.setLevel(logging.WARNING),
        lambda: setattr(base_log, "propagate", False),
        lambda: logging.disable(logging.INFO),
    ):
        quiet()
        try:
            run_jobs(PAYLOADS[0])
        finally:
            worker_log.filters.clear()
            worker_log.disabled = False
            handler.setLevel(logging.NOTSET)
            base_log.setLevel(logging.INFO)
            base_log.propagate = True
            logging.disable(logging.NOTSET)
    assert len(written(handler, path)) == 5
    run_jobs(PAYLOADS[0])
    assert len(written(handler, path)) == 7


@pytest.mark.parametrize("json_logs", [False, True])
def test_with_log_threads_off_a_line_names_the_thread_that_logged_it(worker_setup, json_logs):
    handler, path = worker_setup(json_logs)
    assert log.sole_handler(worker_log) is handler
    log_threads = logging.logThreads
    logging.logThreads = False
    try:
        thread = run_jobs(PAYLOADS[0])  # the job's lines, as fields

        def own_line() -> None:
            worker_log.warning("the job's own line")  # a record, without its thread

        other = threading.Thread(target=own_line)
        other.start()
        other.join()
    finally:
        logging.logThreads = log_threads
    writer = log.tid(handler.thread.ident)  # the writer that wrote them: `written` starts anew
    lines = written(handler, path)  # (a new writer may get the ident `other` had: seen in CI)
    tids = [json.loads(line)["tid"] if json_logs else line.split()[2][4:] for line in lines]
    assert tids == [log.tid(thread.ident)] * 2 + [log.tid(other.ident)]
    assert writer not in tids


@pytest.mark.parametrize("json_logs", [False, True])
def test_with_log_processes_off_a_line_still_names_the_process(worker_setup, json_logs):
    handler, path = worker_setup(json_logs)
    log_processes = logging.logProcesses
    logging.logProcesses = False
    try:
        run_jobs(PAYLOADS[0])  # the job's lines, as fields
        worker_log.warning("the job's own line")  # a record, without its process
    finally:
        logging.logProcesses = log_processes
    lines = written(handler, path)
    pids = [json.loads(line)["pid"] if json_logs else line.split()[1] for line in lines]
    assert pids == ([os.getpid()] * 3 if json_logs else [f"pid={os.getpid()}"] * 3)


def test_an_integration_wrapping_the_loggers_dispatch_sees_the_job_lines(worker_setup, monkeypatch):
    """Sentry's LoggingIntegration wraps `Logger.callHandlers` to make a breadcrumb (or a log
    entry) of every line; a project's logger class may override `handle`. The lines then
    go as records, through them, and are written as before."""
    handler, path = worker_setup(False)
    seen: list[str] = []
    stdlib = logging.Logger.callHandlers

    def breadcrumbs(self: logging.Logger, record: logging.LogRecord) -> None:
        seen.append(record.getMessage())
        stdlib(self, record)

    monkeypatch.setattr(logging.Logger, "callHandlers", breadcrumbs)
    assert log.sole_handler(worker_log) is None
    run_jobs(PAYLOADS[0])
    assert seen[0] == "start" and seen[1].startswith("done")
    monkeypatch.undo()
    assert log.sole_handler(worker_log) is handler
    lines = written(handler, path)
    assert len(lines) == 2
    assert lines[0].endswith("INFO: start") and "INFO: done: " in lines[1]
