"""The worker's log handler writes on a thread of its own: lines still carry the job they were
logged in, show arguments as they were at the call, and none is lost at a clean exit."""

from __future__ import annotations

import json
import logging
import threading

from djqueue.worker import log


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
