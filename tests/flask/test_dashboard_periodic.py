"""The Flask dashboard's Periodic page through Flask's test client: the list and an entry's
page, every action, the app's auth callback, CSRF, a sidekiq-cron entry, an unreadable
schedule and hidden arguments."""

from __future__ import annotations

import html
import json
import re
import time
from typing import Any

import flask
import pytest
import redis

from djqueue.api import PeriodicSet, Queue
from djqueue.periodic_cron import iso, parse
from djqueue.periodic_declaration import build
from djqueue.store import Keys
from djqueue.store.periodic import PeriodicStore
from flask_djqueue import DjQueue
from flask_djqueue.dashboard import dashboard_blueprint
from tests.bad_entries import SKIPPED, assert_bad_periodic, write_bad_periodic
from tests.flask import test_dashboard

#: The dashboard with the test's auth callback, as the dashboard's own tests mount it.
Access = test_dashboard.Access
access, app, client = test_dashboard.access, test_dashboard.app, test_dashboard.client


@pytest.fixture
def entries(r: redis.Redis) -> None:
    """A djqueue entry and two written as sidekiq-cron writes them, one unreadable here."""
    entry = build(name="p.tick", cron="*/5 * * * *", job="reports.tick", args=[{"pass": "pw1"}])
    tick = parse(entry.cron).previous(time.time())
    PeriodicStore(r, Keys()).save(entry.name, entry.fields(), (tick, iso(tick)))
    for name, cron in (("weekly_report", "0 4 * * 1"), ("noon_report", "every day at noon")):
        r.sadd("cron_jobs", f"cron_job:{name}")
        r.hset(
            f"cron_job:{name}",
            mapping={
                "name": name,
                "klass": "ReportWorker",
                "cron": cron,
                "args": json.dumps(["weekly"]),
                "message": json.dumps({"class": "ReportWorker", "args": ["weekly"]}),
                "status": "enabled",
            },
        )


def token(client: Any) -> str:
    found = re.search(r'name="csrf_token" value="([^"]+)"', client.get("/jobs/periodic").text)
    assert found is not None
    return found[1]


def flashed(page: Any) -> list[str]:
    return re.findall(r'<li class="(?:success|warning)">([^<]*)</li>', page.text)


def status(name: str) -> str:
    entry = PeriodicSet().find(name)
    return entry.status if entry else "gone"


def test_the_list_and_an_entry_page(client: Any, entries: None) -> None:
    page = client.get("/jobs/periodic")
    assert page.status_code == 200
    nav = re.search(r'<nav class="djqueue-nav".*?</nav>', page.text, re.S)
    assert nav is not None and 'class="active"><a href="/jobs/periodic"' in nav[0]
    assert re.findall(r">([A-Za-z]+)</a>", nav[0])[-4:] == ["Periodic", "Busy", "Metrics", "Limits"]
    names = re.findall(r'<tr data-name="([^"]+)"', page.text)
    assert names == ["noon_report", "p.tick", "weekly_report"]
    assert 'href="/jobs/periodic/p.tick"' in page.text and "pw1" not in page.text
    assert "Every 5 minutes &middot; UTC" in page.text
    assert ">sidekiq-cron</span>" in page.text and ">djqueue</span>" in page.text
    assert "djqueue-error" in page.text and "every day at noon" in page.text
    entry = client.get("/jobs/periodic/p.tick")
    assert entry.status_code == 200 and len(re.findall(r"\d\d:\d\d:00 UTC</td>", entry.text)) == 5
    assert "&#34;class&#34;: &#34;reports.tick&#34;" in entry.text and "pw1" not in entry.text
    noon = client.get("/jobs/periodic/noon_report")
    assert "not fired by djqueue: " in noon.text
    assert client.get("/jobs/periodic/nothing").status_code == 404


def test_every_action(client: Any, entries: None, r: redis.Redis) -> None:
    csrf = token(client)
    done = client.post(
        "/jobs/periodic",
        data={"csrf_token": csrf, "row_action": "disable:p.tick"},
        follow_redirects=True,
    )
    assert flashed(done) == ["Disabled p.tick."] and status("p.tick") == "disabled"
    done = client.post(
        "/jobs/periodic",
        data={"csrf_token": csrf, "row_action": "enable:p.tick"},
        follow_redirects=True,
    )
    assert flashed(done) == ["Enabled p.tick."] and status("p.tick") == "enabled"
    done = client.post(
        "/jobs/periodic/weekly_report",
        data={"csrf_token": csrf, "action": "run_now"},
        follow_redirects=True,
    )
    (job,) = [json.loads(j) for j in r.lrange("queue:default", 0, -1)]
    assert flashed(done) == [f"Pushed weekly_report (jid {job['jid']}) now."]
    assert f'<tr data-jid="{job["jid"]}">' in done.text  # back on its page, in its history
    form = {"csrf_token": csrf, "action": "disable", "_selected_action": ["p.tick", "noon_report"]}
    done = client.post("/jobs/periodic", data=form, follow_redirects=True)
    assert flashed(done) == ["Disabled p.tick, noon_report."]
    asked = client.post("/jobs/periodic", data={"csrf_token": csrf, "row_action": "delete:p.tick"})
    assert "Delete the periodic job p.tick?" in asked.text and "writes it again" in asked.text
    form = {"csrf_token": csrf, "action": "delete", "names": '["p.tick"]', "confirm": "yes"}
    done = client.post("/jobs/periodic", data=form, follow_redirects=True)
    assert flashed(done)[0].startswith("Deleted p.tick.") and status("p.tick") == "gone"
    form = {"csrf_token": csrf, "action": "delete", "confirm": "yes"}
    done = client.post("/jobs/periodic/noon_report", data=form)
    assert done.status_code == 302 and done.headers["Location"].endswith("/jobs/periodic")
    assert [e.name for e in PeriodicSet().all()] == ["weekly_report"]


def test_the_auth_callback_decides(client: Any, access: Access, entries: None) -> None:
    csrf = token(client)
    access.permissions = {"view"}
    page = client.get("/jobs/periodic")
    assert "row_action" not in page.text and 'name="action"' not in page.text
    assert (
        client.post(
            "/jobs/periodic", data={"csrf_token": csrf, "row_action": "run_now:p.tick"}
        ).status_code
        == 403
    )
    access.permissions = {"view", "change"}
    assert 'value="delete:p.tick"' not in client.get("/jobs/periodic").text
    assert (
        client.post(
            "/jobs/periodic/p.tick", data={"csrf_token": csrf, "action": "delete"}
        ).status_code
        == 403
    )
    assert (
        client.post(
            "/jobs/periodic/p.tick", data={"csrf_token": csrf, "action": "disable"}
        ).status_code
        == 302
    )
    access.permissions = set()
    assert client.get("/jobs/periodic").status_code == 403
    assert status("p.tick") == "disabled" and Queue().size == 0


def test_posts_need_the_csrf_token(client: Any, entries: None) -> None:
    client.get("/jobs/periodic")
    refused = client.post("/jobs/periodic", data={"row_action": "disable:p.tick"})
    assert refused.status_code == 400 and status("p.tick") == "enabled"
    wrong = {"row_action": "disable:p.tick", "csrf_token": "forged"}
    assert client.post("/jobs/periodic", data=wrong).status_code == 400


def test_hidden_arguments(redis_url: str, entries: None) -> None:
    app = flask.Flask("periodic_hidden")
    app.config.update(SECRET_KEY="test", DJQUEUE_REDIS_URL=redis_url, DJQUEUE_WEB_SHOW_ARGS=False)
    DjQueue(app)
    app.register_blueprint(dashboard_blueprint(auth=lambda p: True))
    client = app.test_client()
    listing = client.get("/djqueue/periodic").text
    assert "(1 argument hidden)" in listing and "weekly" not in listing.replace("weekly_report", "")
    entry = client.get("/djqueue/periodic/weekly_report").text
    assert "(1 argument hidden)" in entry and "&#34;weekly&#34;" not in entry


def test_bad_entries_are_listed_with_what_is_wrong(client: Any, r: redis.Redis) -> None:
    r.sadd("cron_jobs", "cron_job:broken")
    r.set("cron_job:broken", "not a hash")
    page = client.get("/jobs/periodic")
    assert page.status_code == 200
    assert "Cannot be read: cron_job:broken is a string, not a hash" in page.text
    entry = client.get("/jobs/periodic/broken")
    assert entry.status_code == 200
    assert "cron_job:broken is a string, not a hash" in entry.text
    write_bad_periodic(r)
    pages = (client.get(f"/jobs/periodic{path}").text for path in ("", "/broken", "/nocron"))
    assert_bad_periodic(*(html.unescape(text) for text in pages))
    form = {
        "csrf_token": token(client),
        "action": "run_now",
        "_selected_action": ["broken", "fine"],
    }
    (said,) = flashed(client.post("/jobs/periodic", data=form, follow_redirects=True))
    assert said.startswith("Pushed fine (jid ") and Queue().size == 1
    assert said.endswith(SKIPPED)
    r.delete("cron_jobs")
    r.set("cron_jobs", "oops")
    page = client.get("/jobs/periodic")
    assert page.status_code == 200
    assert "cron_jobs is a string, not a set: no periodic job can be read" in page.text
