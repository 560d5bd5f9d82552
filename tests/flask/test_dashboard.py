"""The Flask dashboard blueprint through Flask's test client: every page and action, the app's
auth callback, CSRF, and the refusal to serve without auth outside debug mode, without
SECRET_KEY, or for an app without DjQueue."""

from __future__ import annotations

import dataclasses
import json
import re
import time
from collections.abc import Callable, Iterator
from typing import Any

import flask
import pytest
import redis

import djqueue
from djqueue.api import DeadSet, Queue, RetrySet, ScheduledSet
from djqueue.errors import ConfigurationError
from djqueue.store.metrics import minute_bucket
from flask_djqueue import DjQueue
from flask_djqueue.dashboard import dashboard_blueprint
from tests import jobs_for_worker as jobs
from tests.page_support import (
    check_local_time,
    check_metrics_page,
    check_traceback_pages,
    frames,
    run_for_metrics,
    searches,
    send_welcome,
)
from tests.test_api_process import heartbeat
from tests.test_api_queue import RAILS_JOB
from tests.test_limits import check_limits_page, check_queue_pages, fill_limiters
from tests.worker_support import Running, wait_for


@djqueue.job(name="flask_dash.fails", retry=3, backtrace=True)
def fails(label: str) -> None:
    raise RuntimeError(f"printer on fire: {label}")


@djqueue.job(name="flask_dash.ok")
def ok(n: int) -> None:
    pass


class Access:
    """What the test's auth callback allows; ``asked`` records each question."""

    def __init__(self) -> None:
        self.permissions = {"view", "change", "delete"}
        self.asked: list[str] = []

    def __call__(self, permission: str) -> bool:
        self.asked.append(permission)
        return permission in self.permissions


@pytest.fixture
def access() -> Access:
    return Access()


@pytest.fixture
def app(redis_url: str, access: Access) -> Iterator[flask.Flask]:
    app = flask.Flask("dashboard_test")
    app.config.update(SECRET_KEY="test", DJQUEUE_REDIS_URL=redis_url)
    DjQueue(app)
    app.register_blueprint(dashboard_blueprint(auth=access), url_prefix="/jobs")
    yield app


@pytest.fixture
def client(app: flask.Flask) -> Any:
    return app.test_client()


def token(client: Any, url: str = "/jobs/") -> str:
    found = re.search(r'name="csrf_token" value="([^"]+)"', client.get(url).text)
    if found is None:  # a page without a form: the session has the token once any page ran
        with client.session_transaction() as session:
            return str(session["_djqueue_csrf"])
    return found[1]


def keys(page: Any) -> list[str]:
    return re.findall(r'name="_selected_action" value="([^"]+)"', page.text)


def flashed(page: Any) -> list[str]:
    return re.findall(r'<li class="(?:success|warning)">([^<]*)</li>', page.text)


@pytest.fixture
def failed(worker: Callable[..., Running]) -> Callable[[int], list[str]]:
    def make(n: int) -> list[str]:
        running = worker()
        jids = [str(fails.perform_async(f"p{i}")) for i in range(n)]
        wait_for(lambda: RetrySet().size >= n)
        running.stop()
        return jids

    return make


def test_every_page_renders(
    client: Any, failed: Callable[[int], list[str]], r: redis.Redis
) -> None:
    (jid,) = failed(1)
    soon = str(ok.perform_in(600, 1))
    queued = str(ok.perform_async(2))
    DeadSet().kill({"class": "Ruby::Job", "args": [1], "jid": "d" * 24, "queue": "q"})
    dashboard = client.get("/jobs/")
    assert dashboard.status_code == 200 and 'data-figure="retries">1<' in dashboard.text
    assert "<svg" in dashboard.text
    assert client.get("/jobs/live").json["figures"]["scheduled"] == "1"
    assert client.get("/jobs/assets/dashboard.js").status_code == 200
    assert client.get("/jobs/assets/nope.py").status_code == 404
    assert "default" in client.get("/jobs/queues").text
    assert queued in client.get("/jobs/queues/default").text
    assert soon in client.get("/jobs/scheduled").text
    retries = client.get("/jobs/retries")
    assert jid in retries.text and "printer on fire: p0" in retries.text
    assert "Ruby::Job" in client.get("/jobs/dead").text
    (key,) = keys(retries)
    job = client.get(f"/jobs/retries/{key}")
    assert job.status_code == 200 and frames(job.text)[0][2] == "fails"
    assert client.get("/jobs/busy").status_code == 200
    found = client.get("/jobs/retries?q=p0&_facets=1")
    assert "flask_dash.fails (1)" in found.text and "1 result (" in found.text


def test_job_page_shows_the_traceback_frames_by_default(
    client: Any, worker: Callable[..., Running]
) -> None:
    running = worker()
    jobs.nested.perform_async("tray 2")
    jobs.no_backtrace.perform_async("tray 3")
    wait_for(lambda: RetrySet().size == 2)
    running.stop()
    pages = {}
    for key in keys(client.get("/jobs/retries")):
        page = client.get(f"/jobs/retries/{key}").text
        pages["quiet" if "t.no_backtrace" in page else "deeper"] = page
    check_traceback_pages(pages["deeper"], pages["quiet"])


def test_times_show_in_the_configured_zone_with_utc_on_hover(app: flask.Flask, client: Any) -> None:
    app.extensions["djqueue"].options = dataclasses.replace(
        app.extensions["djqueue"].options, time_zone="Asia/Tehran"
    )
    ok.perform_in(3600, 1)
    (entry,) = ScheduledSet()
    listing = client.get("/jobs/scheduled")
    (key,) = keys(listing)
    check_local_time(client.get(f"/jobs/scheduled/{key}").text, entry.at, "Asia/Tehran")
    assert "+0330 (UTC " in listing.text  # a row's hover: local and UTC


def test_a_time_zone_the_database_does_not_know_is_refused_by_name(redis_url: str) -> None:
    app = flask.Flask("bad_zone")
    app.config.update(DJQUEUE_REDIS_URL=redis_url, DJQUEUE_TIME_ZONE="Mars/Olympus_Mons")
    with pytest.raises(ConfigurationError, match="DJQUEUE_TIME_ZONE: must be a time zone name"):
        DjQueue(app)


def test_search_is_case_insensitive_but_a_jid_is_exact(client: Any) -> None:
    jid = str(send_welcome.perform_async("Ada@example.com"))
    for q, finds in searches(jid):
        found = client.get("/jobs/queues/default", query_string={"q": q})
        assert re.findall(r'<tr data-jid="([^"]+)"', found.text) == ([jid] if finds else []), q


def test_actions(client: Any, failed: Callable[[int], list[str]]) -> None:
    failed(3)
    csrf = token(client)
    listing = client.get("/jobs/retries")
    first, second, third = keys(listing)
    jids = re.findall(r'<tr data-jid="([^"]+)"', listing.text)
    done = client.post(
        "/jobs/retries",
        data={"csrf_token": csrf, "action": "retry", "_selected_action": first},
        follow_redirects=True,
    )
    assert flashed(done) == ["Retried 1 job."] and [j.jid for j in Queue().jobs()] == [jids[0]]
    client.post(
        "/jobs/retries", data={"csrf_token": csrf, "action": "kill", "_selected_action": second}
    )
    assert [e.jid for e in DeadSet()] == [jids[1]]
    asked = client.post(f"/jobs/retries/{third}", data={"csrf_token": csrf, "action": "delete"})
    assert "Delete this job?" in asked.text and RetrySet().size == 1
    assert f'href="/jobs/retries/{third}" class="button cancel-link"' in asked.text
    deleted = client.post(
        f"/jobs/retries/{third}",
        data={"csrf_token": csrf, "action": "delete", "confirm": "yes"},
    )
    assert deleted.status_code == 302 and deleted.location.endswith("/jobs/retries")
    assert RetrySet().size == 0
    ask = client.post(
        "/jobs/dead", data={"csrf_token": csrf, "action": "retry", "select_across": "1"}
    )
    assert "Retry 1 job now?" in ask.text and DeadSet().size == 1
    client.post(
        "/jobs/dead",
        data={"csrf_token": csrf, "action": "retry", "select_across": "1", "confirm": "yes"},
    )
    assert DeadSet().size == 0 and Queue().size == 2


def test_run_now_clear_and_moved_jobs(client: Any) -> None:
    csrf = token(client)
    ok.perform_in(600, 1)
    (key,) = keys(client.get("/jobs/scheduled"))
    ScheduledSet().entry(key).add_to_queue()  # the poller got there first
    moved = client.post(
        "/jobs/scheduled",
        data={"csrf_token": csrf, "action": "add_to_queue", "_selected_action": key},
        follow_redirects=True,
    )
    assert "was no longer there" in flashed(moved)[0]
    assert client.get(f"/jobs/scheduled/{key}").status_code == 404
    ask = client.post("/jobs/queues", data={"csrf_token": csrf, "queue": "default"})
    assert "Clear queue default: delete its 1 job?" in ask.text
    client.post("/jobs/queues", data={"csrf_token": csrf, "queue": "default", "confirm": "yes"})
    assert Queue().size == 0


def test_pause_and_resume_a_queue(client: Any, access: Access) -> None:
    ok.set(queue="bulk").perform_async(1)
    csrf = token(client, "/jobs/queues")
    done = client.post(
        "/jobs/queues",
        data={"csrf_token": csrf, "queue": "bulk", "action": "pause"},
        follow_redirects=True,
    )
    assert flashed(done)[0].startswith("Paused queue bulk: workers take no job from it")
    assert Queue("bulk").paused and Queue("bulk").size == 1
    assert '"djqueue-tag djqueue-paused">paused<' in done.text and 'value="resume"' in done.text
    assert 'data-paused="1">paused<' in client.get("/jobs/queues/bulk").text
    assert '<span data-live="paused">bulk</span>' in client.get("/jobs/").text
    assert client.get("/jobs/live").json["paused"] == "bulk"
    resumed = client.post(
        "/jobs/queues/bulk",
        data={"csrf_token": csrf, "action": "resume"},
        follow_redirects=True,
    )
    assert flashed(resumed)[0].startswith("Resumed queue bulk") and not Queue("bulk").paused
    access.permissions = {"view", "delete"}
    assert 'value="pause"' not in client.get("/jobs/queues").text
    refused = client.post("/jobs/queues/bulk", data={"csrf_token": csrf, "action": "pause"})
    assert refused.status_code == 403 and not Queue("bulk").paused


def test_flask_djqueue_queues_pauses_and_resumes(app: flask.Flask) -> None:
    cli = app.test_cli_runner()
    paused = cli.invoke(args=["djqueue", "queues", "pause", "bulk"])
    assert paused.exit_code == 0 and "bulk: paused" in paused.output and Queue("bulk").paused
    listed = cli.invoke(args=["djqueue", "queues"])
    assert re.search(r"^bulk +0 +0 +0\.0s +paused$", listed.output, re.M), listed.output
    resumed = cli.invoke(args=["djqueue", "queues", "resume", "bulk"])
    assert "bulk: resumed" in resumed.output and not Queue("bulk").paused
    missing = cli.invoke(args=["djqueue", "queues", "pause"])
    assert missing.exit_code == 2 and "flask djqueue queues pause needs the queue's name" in (
        missing.output
    )


def test_quiet_and_stop(client: Any, worker: Callable[..., Running]) -> None:
    running = worker()
    page = client.get("/jobs/busy")
    assert running.identity in page.text
    csrf = token(client, "/jobs/busy")
    client.post(
        "/jobs/busy", data={"csrf_token": csrf, "action": "quiet", "identity": running.identity}
    )
    wait_for(lambda: running.launcher.manager.quiet)
    question = client.post("/jobs/busy", data={"csrf_token": csrf, "action": "stop"})
    assert "Stop every worker process?" in question.text and running.thread.is_alive()
    client.post("/jobs/busy", data={"csrf_token": csrf, "action": "stop", "confirm": "yes"})
    running.thread.join(20)
    assert not running.thread.is_alive()


def test_an_embedded_sidekiq_process_offers_no_quiet_nor_stop(client: Any, r: redis.Redis) -> None:
    heartbeat(r, "puma:1:eeeeeeeeeeee", embedded=True)
    page = client.get("/jobs/busy").text
    found = re.search(r'<tr data-identity="puma:1:eeeeeeeeeeee">.*?</tr>', page, re.S)
    assert found and "embedded</span>" in found[0] and 'name="action"' not in found[0]
    csrf = token(client, "/jobs/busy")
    refused = client.post(
        "/jobs/busy",
        data={"csrf_token": csrf, "action": "stop", "identity": "puma:1:eeeeeeeeeeee"},
        follow_redirects=True,
    )
    assert "is an embedded Sidekiq process: it ignores stop" in refused.text
    assert r.lrange("puma:1:eeeeeeeeeeee-signals", 0, -1) == []


def test_active_job_arguments_shown_deserialized(client: Any, r: redis.Redis) -> None:
    r.lpush("queue:default", json.dumps(RAILS_JOB))
    r.sadd("queues", "default")
    page = client.get("/jobs/queues/default").text
    assert "InvoiceJob" in page and "gid://shop/User/42" in page
    assert "_aj_" not in page


def test_post_without_the_csrf_token_is_refused(client: Any) -> None:
    ok.perform_async(1)
    client.get("/jobs/")
    refused = client.post("/jobs/queues", data={"queue": "default", "confirm": "yes"})
    assert refused.status_code == 400 and Queue().size == 1
    wrong = client.post(
        "/jobs/queues", data={"queue": "default", "confirm": "yes", "csrf_token": "x"}
    )
    assert wrong.status_code == 400 and Queue().size == 1


def test_the_apps_auth_decides(
    client: Any, access: Access, failed: Callable[[int], list[str]]
) -> None:
    failed(1)
    csrf = token(client)
    (key,) = keys(client.get("/jobs/retries"))
    access.permissions = {"view"}
    page = client.get("/jobs/retries")
    assert page.status_code == 200 and 'name="action"' not in page.text
    refused = client.post(
        "/jobs/retries", data={"csrf_token": csrf, "action": "retry", "_selected_action": key}
    )
    assert refused.status_code == 403 and RetrySet().size == 1
    access.permissions = set()
    assert client.get("/jobs/").status_code == 403
    assert client.get("/jobs/live").status_code == 403


def test_auth_may_answer_with_its_own_response(redis_url: str) -> None:
    app = flask.Flask("redirecting")
    app.config.update(SECRET_KEY="k", DJQUEUE_REDIS_URL=redis_url)
    DjQueue(app)
    app.register_blueprint(dashboard_blueprint(auth=lambda permission: flask.redirect("/login")))
    answer = app.test_client().get("/djqueue/")
    assert answer.status_code == 302 and answer.headers["Location"] == "/login"


def test_no_auth_is_refused_outside_debug_mode_but_the_apps_commands_run(
    redis_url: str, r: redis.Redis, caplog: pytest.LogCaptureFixture
) -> None:
    """Refused per request, not at registration: `flask djqueue worker` and every other command
    of the app still start where the web side is not (or not yet) configured."""
    app = flask.Flask("no_auth")
    app.config.update(SECRET_KEY="k", DJQUEUE_REDIS_URL=redis_url)
    DjQueue(app)
    app.register_blueprint(dashboard_blueprint())
    with app.app_context():
        ok.perform_later(1)
    stats = app.test_cli_runner().invoke(args=["djqueue", "stats"])
    assert stats.exit_code == 0, stats.output
    assert "enqueued   1" in stats.output
    health = app.test_cli_runner().invoke(args=["djqueue", "health"])
    assert health.exit_code == 1
    assert health.output.startswith("unhealthy: no live worker process in Redis for host ")
    page = app.test_client().get("/djqueue/")
    assert page.status_code == 500
    assert page.text == (
        "The djqueue dashboard is not configured: pass auth=... to dashboard_blueprint(): "
        "without it anyone could delete jobs and stop workers, so the dashboard runs without "
        "it only in debug mode.\n"
    )
    assert "flask_djqueue dashboard: pass auth=..." in caplog.text
    app.debug = True
    assert app.test_client().get("/djqueue/").status_code == 200


def test_a_secret_key_is_required(redis_url: str) -> None:
    app = flask.Flask("no_secret")
    app.config.update(DJQUEUE_REDIS_URL=redis_url)
    DjQueue(app)
    app.register_blueprint(dashboard_blueprint(auth=lambda p: True))
    page = app.test_client().get("/djqueue/queues")
    assert page.status_code == 500 and "set SECRET_KEY" in page.text


def test_an_app_without_djqueue_says_so_rather_than_blaming_redis(redis_url: str) -> None:
    """Forgetting DjQueue(app): the dashboard names the fix, and does not show another Redis
    (the process's) as if it were the app's."""
    app = flask.Flask("forgot_init_app")
    app.config.update(SECRET_KEY="k", DJQUEUE_REDIS_URL=redis_url)
    app.register_blueprint(dashboard_blueprint(auth=lambda p: True))
    page = app.test_client().get("/djqueue/")
    assert page.status_code == 500
    assert (
        "the Flask app 'forgot_init_app' is not set up with djqueue, so the dashboard has no "
        "Redis to show: call DjQueue(app), or djq.init_app(app) in its factory" in page.text
    )


def test_sidekiq_data_and_bad_entries(client: Any, r: redis.Redis) -> None:
    item = {
        "class": "ActiveJob::QueueAdapters::SidekiqAdapter::JobWrapper",
        "wrapped": "InvoiceJob",
        "args": [{"job_class": "InvoiceJob", "arguments": [7]}],
        "jid": "a" * 24,
        "queue": "mailers",
        "enqueued_at": int(time.time() * 1000) - 60_000,
    }
    r.zadd("retry", {json.dumps(item): time.time() + 60, "{broken": time.time() + 61})
    page = client.get("/jobs/retries")
    assert page.status_code == 200 and "InvoiceJob" in page.text and "not JSON" in page.text


def test_redis_down_shows_a_clear_page(redis_url: str) -> None:
    app = flask.Flask("down")
    app.config.update(
        SECRET_KEY="k", DJQUEUE_REDIS_URL="redis://127.0.0.1:1/0", DJQUEUE_CONNECT_TIMEOUT=0.2
    )
    DjQueue(app)
    app.register_blueprint(dashboard_blueprint(auth=lambda p: True))
    page = app.test_client().get("/djqueue/retries")
    assert page.status_code == 503 and "127.0.0.1:1" in page.text


def test_mounted_below_a_script_root(app: flask.Flask) -> None:
    ok.perform_in(600, 1)
    client = app.test_client()
    page = client.get("/jobs/scheduled?q=flask", base_url="http://localhost/app/")
    assert page.headers["X-Frame-Options"] == "DENY"
    assert 'action="/app/jobs/scheduled?q=flask"' in page.text
    assert 'href="/app/jobs/retries"' in page.text


def test_metrics_page_per_class_with_links_range_and_filter(
    client: Any, access: Access, worker: Callable[..., Running], r: redis.Redis
) -> None:
    run_for_metrics(worker, r)
    check_metrics_page(
        lambda query: client.get(f"/jobs/metrics{query}").text, "/jobs/retries", "/jobs/dead"
    )
    assert 'href="/jobs/metrics"' in client.get("/jobs/").text
    access.permissions = set()
    assert client.get("/jobs/metrics").status_code == 403


def test_metrics_page_names_a_key_of_the_wrong_type(client: Any, r: redis.Redis) -> None:
    key = f"j|{minute_bucket(time.time())}"
    r.set(key, "not a hash")
    page = client.get("/jobs/metrics")
    assert page.status_code == 200
    assert f"{key}" in page.text and "WRONGTYPE" in page.text
    assert "No job ran in the last 1h." in page.text


def test_limits_page_lists_every_limiter_with_its_use_and_hits(
    client: Any, access: Access, r: redis.Redis
) -> None:
    fill_limiters(r)
    check_limits_page(client.get("/jobs/limits").text)
    check_queue_pages(client.get("/jobs/queues").text, client.get("/jobs/queues/default").text)
    assert 'href="/jobs/limits"' in client.get("/jobs/").text
    access.permissions = set()
    assert client.get("/jobs/limits").status_code == 403
