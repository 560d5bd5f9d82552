"""A tracked job's lifecycle in the admin: on its job page, and found by jid from the
dashboard's box, answered from its status hash."""

from __future__ import annotations

import html
import re
from typing import Any

import pytest
from django.test import Client

import djqueue

pytestmark = pytest.mark.django_db

ADMIN = "/admin/djqueue"


@djqueue.job(retention=600)
def admin_tracked(n: int) -> int:
    return n * 2


@pytest.fixture(autouse=True)
def push_at_once(settings: Any) -> None:
    settings.DJQUEUE = {**settings.DJQUEUE, "ENQUEUE_ON_COMMIT": False}


def text(response: Any) -> str:
    return html.unescape(response.content.decode())


def test_the_job_page_shows_the_lifecycle(root_client: Client) -> None:
    admin_tracked.perform_in(3600, 1)
    listing = root_client.get(f"{ADMIN}/scheduledjob/")
    (key,) = re.findall(r'name="_selected_action" value="([^"]+)"', listing.content.decode())
    page = text(root_client.get(f"{ADMIN}/scheduledjob/{key}/"))
    assert "Lifecycle" in page and "<code>scheduled</code>" in page
    assert "Scheduled for" in page and "Kept for" in page and "10 min once finished" in page
    untracked = djqueue.Client().push({"class": "x.Untracked", "args": [], "at": 10**10})
    assert untracked
    listing = root_client.get(f"{ADMIN}/scheduledjob/")
    keys = re.findall(r'name="_selected_action" value="([^"]+)"', listing.content.decode())
    other = next(k for k in keys if untracked in k)
    assert "Lifecycle" not in text(root_client.get(f"{ADMIN}/scheduledjob/{other}/"))


def test_find_a_job_by_jid_from_the_dashboard(root_client: Client, worker: Any) -> None:
    assert "Find job by jid" in text(root_client.get(f"{ADMIN}/dashboard/"))
    jid = admin_tracked.perform_later(21)
    pending = text(root_client.get(f"{ADMIN}/dashboard/job/", {"jid": jid}))
    assert "<code>pending</code>" in pending and "admin_tracked" in pending
    assert "<code>21</code>" in pending  # the arguments as pushed
    worker()
    assert djqueue.result(jid, timeout=10) == 42
    done = text(root_client.get(f"{ADMIN}/dashboard/job/", {"jid": jid}))
    assert "<code>completed</code>" in done and "<code>42</code>" in done and "Finished" in done
    missing = root_client.get(f"{ADMIN}/dashboard/job/", {"jid": "f" * 24})
    assert missing.status_code == 404 and "No job ffff" in text(missing)


def test_the_status_page_needs_staff(client: Client) -> None:
    response = client.get(f"{ADMIN}/dashboard/job/", {"jid": "a" * 24})
    assert response.status_code == 302 and "/login/" in response["Location"]
