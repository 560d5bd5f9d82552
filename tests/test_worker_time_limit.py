"""Time limits (``@job(time_limit=...)``): a job past its limit is interrupted and retried,
one that cannot be interrupted is reported, and in a swarm its process is replaced. In-process
workers and a real Redis; the swarm test runs real processes."""

from __future__ import annotations

import json
import re
import signal
import threading
import time

import flask
import pytest
from werkzeug.serving import make_server

from djqueue.web.busy import busy_page
from flask_djqueue import DjQueue
from flask_djqueue.dashboard import dashboard_blueprint

from . import jobs_for_worker as jobs
from .browser import browser, expect, screenshot  # noqa: F401 (the browser fixture)
from .worker_support import wait_for


def retried(r, jid: str) -> dict:
    def find() -> dict | None:
        for raw in r.zrange("retry", 0, -1):
            entry = json.loads(raw)
            if entry["jid"] == jid:
                return entry
        return None

    return wait_for(find, what=f"job {jid} in retry")


@pytest.mark.parametrize(
    ("job", "key"),
    [(jobs.spin, "spun"), (jobs.aspin, "aspun")],
    ids=["thread-run job, interrupted", "async def job, cancelled"],
)
def test_a_busy_job_past_its_limit_ends_in_retry(worker, r, job, key):
    worker()
    jid = job.perform_later(key)
    entry = retried(r, jid)
    assert entry["error_class"] == "djqueue.errors.TimeLimitExceeded"
    assert entry["error_message"] == f"{job.job_name} ran past its time limit of 1 s"
    assert entry["time_limit"] == 1
    assert r.lrange(key, 0, -1) == ["started"]


def test_set_gives_one_push_its_own_limit(worker, r):
    worker()
    jid = jobs.record.set(time_limit=0.3).perform_later("never", "x")  # quick: untouched
    spun = jobs.spin.set(time_limit=0.2, retry=0).perform_later("spun")
    wait_for(lambda: r.zcard("dead"), what="the spinning job dead")
    (dead,) = [json.loads(raw) for raw in r.zrange("dead", 0, -1)]
    assert dead["jid"] == spun
    assert dead["error_message"] == "t.spin ran past its time limit of 0.2 s"
    assert r.lrange("never", 0, -1) == ["['x']"] and jid


def test_a_job_may_catch_the_interruption_to_clean_up_and_return(worker, r):
    worker()
    jobs.tidy.perform_later("tidied")
    assert wait_for(lambda: r.lrange("tidied", 0, -1)) == [
        "t.tidy ran past its time limit of 0.3 s"
    ]
    jobs.in_time.perform_later("after")  # the processor goes on with the next job
    wait_for(lambda: r.llen("after") == 1 * 1, what="the next job")
    assert r.zcard("retry") == 0 and r.zcard("dead") == 0


@pytest.mark.parametrize("value", [0, -1, "30", True, float("nan")])
def test_a_limit_that_is_not_one_is_refused_naming_it(value):
    with pytest.raises(ValueError, match="time_limit"):
        jobs.spin.set(time_limit=value)


def test_jobs_ending_in_time_are_untouched(worker, r):
    running = worker()
    for _ in range(200):
        jobs.in_time.perform_later("fine")
    wait_for(lambda: r.llen("fine") == 200, what="200 jobs")
    time.sleep(0.3)  # a late interruption would land now
    assert r.zcard("retry") == 0 and r.zcard("dead") == 0
    assert all(p.thread.is_alive() for p in running.launcher.manager.processors)
    assert r.llen("fine") == 200


@pytest.mark.slow
def test_a_job_in_a_long_c_call_is_reported_then_interrupted(worker, r, caplog):
    worker()
    jid = jobs.in_c.perform_later("slept", 3)
    wait_for(lambda: r.lrange("slept", 0, -1) == ["started"], what="the job starts")

    line = re.compile(
        rf"t\.in_c jid={jid} is \d+\.\d s over its time limit of 0\.5 s and has not stopped"
    )

    def reported() -> bool:
        return any(line.search(rec.getMessage()) for rec in caplog.records)

    wait_for(reported, what="the log line")
    (work,) = wait_for(lambda: busy_page().work, what="the busy entry")
    assert (work.jid, work.over_limit) == (jid, 0.5)
    entry = retried(r, jid)
    # Python raised it once the C call returned, at the job's next line.
    assert entry["error_class"] == "djqueue.errors.TimeLimitExceeded"
    assert r.lrange("slept", 0, -1) == ["started"]
    ended = re.compile(rf"t\.in_c jid={jid} ended \d+\.\d s over its time limit of 0\.5 s")
    wait_for(
        lambda: any(ended.search(rec.getMessage()) for rec in caplog.records),
        what="the end's line",
    )


@pytest.mark.slow
def test_the_busy_page_marks_a_job_over_its_limit(worker, r, redis_url, browser):  # noqa: F811
    app = flask.Flask("busy")
    app.config.update(SECRET_KEY="time-limit", DJQUEUE_REDIS_URL=redis_url)
    DjQueue(app)
    app.register_blueprint(dashboard_blueprint(auth=lambda permission: True), url_prefix="/jobs")
    server = make_server("127.0.0.1", 0, app, threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        worker()
        jid = jobs.in_c.perform_later("slept", 4)
        jobs.hold.perform_later("held", 1)  # running, no limit: no mark
        wait_for(lambda: [w.jid for w in busy_page().work if w.over_limit] == [jid])
        assert len(busy_page().work) == 2
        page = browser.new_page(viewport={"width": 1280, "height": 600})
        page.goto(f"http://127.0.0.1:{server.server_port}/jobs/busy")
        row = page.locator("#djqueue-work-list tr", has_text=jid)
        expect(row).to_contain_text("over its time limit of 0.5 s")
        expect(page.locator("#djqueue-work-list tr", has_text="t.hold")).not_to_contain_text(
            "time limit"
        )
        screenshot(page, "busy-over-time-limit", prefix="flask")
        page.close()
    finally:
        r.set("release", 1)
        server.shutdown()


@pytest.mark.slow
def test_a_swarm_child_past_the_hard_limit_is_replaced(spawn, redis_url, r):
    parent = spawn(redis_url, "--processes", "2", "-c", "2", "--timeout", "1")
    wait_for(lambda: r.scard("processes") == 2, what="two children", log=parent.log)
    before = set(r.smembers("processes"))
    jobs.in_c.perform_later("slept", 60)
    wait_for(lambda: r.lrange("slept", 0, -1) == ["started"], what="the job starts")
    wait_for(
        lambda: "killing it (SIGKILL) and starting another" in parent.output(),
        what="the kill",
        log=parent.log,
    )
    wait_for(
        lambda: len(set(r.smembers("processes")) - before) == 1,
        what="a new child",
        log=parent.log,
    )
    # The job came back as after any crash, and started again.
    wait_for(
        lambda: r.lrange("slept", 0, -1) == ["started", "started"],
        what="the job run again",
        log=parent.log,
    )
    output = parent.output()
    assert re.search(r"t\.in_c jid=\w+ is \d+\.\d s over its time limit of 0\.5 s", output)
    assert "past a hard time limit; starting its replacement" in output
    parent.send(signal.SIGTERM)
    parent.wait(30)
