"""A tracked job's lifecycle in the Flask dashboard: on its job page, and found by jid from the
dashboard's box, answered from its status hash."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from typing import Any

import flask
import pytest

import djqueue
from flask_djqueue import DjQueue
from flask_djqueue.dashboard import dashboard_blueprint


@djqueue.job(name="flask_dash.tracked", retention=600)
def tracked(n: int) -> int:
    return n * 2


@pytest.fixture
def client(redis_url: str) -> Iterator[Any]:
    app = flask.Flask("dashboard_lifecycle_test")
    app.config.update(SECRET_KEY="test", DJQUEUE_REDIS_URL=redis_url)
    DjQueue(app)
    app.register_blueprint(dashboard_blueprint(auth=lambda permission: True), url_prefix="/jobs")
    yield app.test_client()


def text(response: Any) -> str:
    return html.unescape(response.text)


def test_the_job_page_shows_the_lifecycle(client: Any) -> None:
    tracked.perform_in(3600, 1)
    listing = client.get("/jobs/scheduled").text
    (href,) = re.findall(r'href="(/jobs/scheduled/[^"]+)"', listing)
    page = text(client.get(href))
    assert "Lifecycle" in page and "<code>scheduled</code>" in page and "Scheduled for" in page


def test_find_a_job_by_jid_from_the_dashboard(client: Any, worker: Any) -> None:
    assert "Find job by jid" in client.get("/jobs/").text
    jid = tracked.perform_later(21)
    assert "<code>pending</code>" in text(client.get("/jobs/job", query_string={"jid": jid}))
    worker()
    assert djqueue.result(jid, timeout=10) == 42
    done = text(client.get("/jobs/job", query_string={"jid": jid}))
    assert "<code>completed</code>" in done and "<code>42</code>" in done
    assert "flask_dash.tracked" in done and "<code>21</code>" in done
    missing = client.get("/jobs/job", query_string={"jid": "f" * 24})
    assert missing.status_code == 404 and "No job ffff" in text(missing)
