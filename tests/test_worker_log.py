"""The worker's log handler writes on a thread of its own: lines still carry the job they were
logged in, show arguments as they were at the call, and none is lost at a clean exit."""

from __future__ import annotations

import json
import logging
import threading

from djqueue import pipeline
from djqueue.worker import log

from .worker_support import wait_for


class Keep(logging.Handler):
    """Keeps the records it is given, as they are."""

    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def test_lines_written_in_the_background_keep_their_job_and_arguments(tmp_path):
    path = tmp_path / "worker.log"
    handler = log.setup(logfile=str(path), json_logs=True)
    try:
        jobs_log = logging.getLogger("djqueue.worker")
        values = ["before"]

        def job() -> None:
            token = log.bind_job({"class": "app.Job", "jid": "a" * 24})
            try:
                jobs_log.info("values %s", values)
                values[0] = "after"
            finally:
                log.job_context.reset(token)

        thread = threading.Thread(target=job)
        thread.start()
        thread.join()
        for i in range(2000):
            jobs_log.info("line %d", i)
    finally:
        log.teardown(handler)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert lines[0]["msg"] == "values ['before']"
    assert lines[0]["ctx"] == {"class": "app.Job", "jid": "a" * 24}
    assert [line["msg"] for line in lines[1:]] == [f"line {i}" for i in range(2000)]
    assert "ctx" not in lines[1]


def test_job_lines_copied_from_the_template_are_records_like_made_ones():
    """A processor thread's start/done records are copies of a template; a handler must see
    the same fields, with this thread's and this moment's values, as in a record made anew."""
    from djqueue.worker.fetch import Unit
    from djqueue.worker.job_logger import JobLogger

    keep = Keep()
    records = keep.records
    worker_log = logging.getLogger("djqueue.worker")
    level = worker_log.level
    worker_log.addHandler(keep)
    worker_log.setLevel(logging.INFO)
    try:

        def processor() -> None:
            unit = Unit("default", b"{}", "working:x")
            for jid in ("a" * 24, "b" * 24):
                payload = {"class": "app.Job", "jid": jid}
                pipeline.run([JobLogger()], (unit, payload), lambda: None)

        thread = threading.Thread(target=processor, name="djqueue-processor-test")
        thread.start()
        thread.join()
    finally:
        worker_log.removeHandler(keep)
        worker_log.setLevel(level)
    made = worker_log.makeRecord(worker_log.name, logging.INFO, __file__, 0, "x", (), None)
    assert [r.getMessage().split(":")[0] for r in records] == ["start", "done"] * 2
    for record in records:
        assert set(vars(made)) <= set(vars(record))
        assert record.threadName == "djqueue-processor-test"
        assert record.thread == thread.ident
        assert record.process == made.process
        assert record.levelname == "INFO" and record.name == "djqueue.worker"
        assert record.msecs == int((record.created - int(record.created)) * 1000)
        since = (made.created - record.created) * 1000
        assert abs(made.relativeCreated - record.relativeCreated - since) < 0.01
    assert records[0].created <= records[-1].created
    assert len({id(r) for r in records}) == 4
    assert records[1].elapsed >= 0


def test_a_filter_or_a_disabled_flag_on_the_worker_logger_still_governs_job_lines():
    """The job's lines skip `logging.Logger.handle` only for a logger with neither: a filter
    added to ``djqueue.worker`` sees (and may drop) them, and a disabled logger writes none."""
    from djqueue.worker.fetch import Unit
    from djqueue.worker.job_logger import JobLogger

    keep = Keep()
    records = keep.records

    def jobs() -> list[str]:
        records.clear()
        unit = Unit("default", b"{}", "working:x")
        pipeline.run([JobLogger()], (unit, {"class": "app.Job", "jid": "a" * 24}), lambda: None)
        return [r.getMessage().split(":")[0] for r in records]

    def no_start(record: logging.LogRecord) -> bool:
        return record.getMessage() != "start"

    worker_log = logging.getLogger("djqueue.worker")
    level = worker_log.level
    worker_log.addHandler(keep)
    worker_log.setLevel(logging.INFO)
    try:
        assert jobs() == ["start", "done"]
        worker_log.addFilter(no_start)
        try:
            assert jobs() == ["done"]
        finally:
            worker_log.removeFilter(no_start)
        worker_log.disabled = True
        try:
            assert jobs() == []
        finally:
            worker_log.disabled = False
        assert jobs() == ["start", "done"]
    finally:
        worker_log.removeHandler(keep)
        worker_log.setLevel(level)


def test_a_jobs_start_and_done_lines_name_the_request_that_pushed_it(spawn, redis_url, r):
    """The docs promise ``request_id=`` on every line of a job pushed from a request: its
    ``start`` and ``done`` lines too, which the runtime logs around the job's middleware."""
    from djqueue import client

    item = {"class": "t.record", "args": ["ran", 1], "request_context": {"request_id": "req-42"}}
    jid = client.get_client().push(item)
    worker = spawn(redis_url)
    wait_for(lambda: "done:" in worker.output(), what="the job's done line", log=worker.log)
    lines = [line for line in worker.output().splitlines() if f"jid={jid}" in line]
    assert [line.split(": ", 1)[0].rsplit(" ", 1)[1] for line in lines] == ["INFO", "INFO"]
    assert "start" in lines[0] and "done:" in lines[1]
    assert all(" request_id=req-42 " in line for line in lines), lines
    assert r.lrange("ran", 0, -1) == ["[1]"]
