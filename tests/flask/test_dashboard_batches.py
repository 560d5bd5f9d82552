"""The Flask dashboard's Batches pages through Flask's test client: the list, a batch's page,
its jobs followed to their pages, the batch id on a job's page, Cancel (asked first, CSRF, the
``delete`` permission), paging and keys of the wrong type. The batches are written as the
runtime writes them (`tests.test_batch_read.fill_batches`)."""

from __future__ import annotations

import html
import json
import re
from typing import Any

import redis

from djqueue.api import Batch, Queue, RetrySet
from djqueue.client import get_client
from djqueue.store import Keys
from tests.flask import test_dashboard
from tests.test_batch_read import (
    BAD,
    CHILD,
    DIED,
    DONE,
    GONE,
    PARENT,
    PENDING,
    RETRYING,
    check_batch_page,
    check_batches_page,
    fill_batches,
    waiting,
    write_batch,
)

#: The dashboard with the test's auth callback, as the dashboard's own tests mount it.
Access = test_dashboard.Access
access, app, client = test_dashboard.access, test_dashboard.app, test_dashboard.client
token, flashed = test_dashboard.token, test_dashboard.flashed


def link(path: str) -> str:
    return f"/jobs/batches/{path}"


def test_the_list_shows_every_batch_newest_first_with_its_progress(
    client: Any, access: Access, r: redis.Redis
) -> None:
    fill_batches(r)
    page = client.get("/jobs/batches")
    assert page.status_code == 200
    check_batches_page(page.text, link)
    nav = re.search(r'<nav class="djqueue-nav".*?</nav>', page.text, re.S)
    assert nav is not None and 'class="active"><a href="/jobs/batches"' in nav[0]
    assert 'href="/jobs/batches"' in client.get("/jobs/").text
    access.permissions = set()
    assert client.get("/jobs/batches").status_code == 403
    assert client.get(link(CHILD)).status_code == 403


def test_an_empty_list_says_why_and_pages_are_numbered(client: Any, r: redis.Redis) -> None:
    assert "No batches. A batch is listed from its creation" in client.get("/jobs/batches").text
    for n in range(30):
        write_batch(r, f"{n:024x}", created_at=1000 + n, total=1, pending=1, remaining=1)
    first = client.get("/jobs/batches").text
    rows = re.findall(r'<tr data-bid="([^"]+)"', first)
    assert rows == [f"{n:024x}" for n in range(29, 4, -1)]
    assert "1–25 of 30 batches" in first and 'href="?p=2"' in first
    second = client.get("/jobs/batches?p=2").text
    assert re.findall(r'<tr data-bid="([^"]+)"', second) == [f"{n:024x}" for n in range(4, -1, -1)]
    assert "26–30 of 30 batches" in second
    assert "past the end of the list" in client.get("/jobs/batches?p=9").text


def test_a_batch_page_shows_its_counts_callbacks_failures_and_family(
    client: Any, r: redis.Redis
) -> None:
    fill_batches(r)
    page = client.get(link(CHILD))
    assert page.status_code == 200
    check_batch_page(page.text, link)
    assert '<a href="/jobs/batches">' in page.text  # the breadcrumb back to the list
    parent = client.get(link(PARENT)).text
    assert f'href="{link(CHILD)}" data-link="child"' in parent and "nightly report" in parent
    assert "1 not yet successful" in parent
    assert "reports.notify" in parent and "On success" in parent and "not yet" in parent
    r.hset(Keys().batch_failed(DONE), mapping={f"{n:024x}": "{}" for n in range(150)})
    done = client.get(link(DONE)).text
    assert "and 50 more" in done and len(re.findall(r'<tr data-jid="', done)) == 100
    assert "None: every job of this batch has succeeded." in done
    assert "This batch has no callback." in done


def test_a_missing_batch_answers_404_and_a_bad_one_names_its_key(
    client: Any, r: redis.Redis
) -> None:
    fill_batches(r)
    missing = client.get(link("0" * 24))
    assert missing.status_code == 404 and f"No batch {'0' * 24} is kept" in missing.text
    bad = client.get(link(BAD))
    assert bad.status_code == 200
    assert f"djqueue:batch:{BAD} holds a string, not a hash" in html.unescape(bad.text)
    r.hset(Keys().batch(CHILD), "total", "ten")
    assert 'has total "ten", not an integer' in html.unescape(client.get(link(CHILD)).text)


def test_a_batch_job_leads_to_its_page_and_its_page_back_to_the_batch(
    client: Any, r: redis.Redis
) -> None:
    fill_batches(r)
    retrying = client.get(link(f"{CHILD}/job/{RETRYING}"))
    assert retrying.status_code == 302
    assert retrying.location == f"/jobs/retries/{RetrySet().find_job(RETRYING).key}"
    died = client.get(link(f"{CHILD}/job/{DIED}"))
    assert died.status_code == 302 and died.location.startswith("/jobs/dead/")
    waiting(r, CHILD, PENDING[2], queue="q")
    queued = client.get(link(f"{CHILD}/job/{PENDING[2]}"))
    assert queued.location == f"/jobs/queues/q/job/0-{PENDING[2]}"
    assert f'href="{link(CHILD)}" data-link="batch"' in client.get(queued.location).text
    elsewhere = client.get(link(f"{CHILD}/job/{PENDING[3]}"))
    assert elsewhere.location == f"/jobs/job?jid={PENDING[3]}"
    assert flashed(client.get(elsewhere.location)) == []
    tracked = {"class": "x", "args": [], "jid": PENDING[3], "bid": CHILD, "retention": 60}
    get_client().push({**tracked, "queue": "q", "at": 4e9})  # scheduled, and tracked
    status = client.get(f"/jobs/job?jid={PENDING[3]}").text
    assert f'href="{link(CHILD)}" data-link="batch"' in status
    job_page = client.get(retrying.location).text
    assert f'<a href="{link(CHILD)}" data-link="batch"><code>{CHILD}</code></a>' in job_page
    r.zadd("retry", {json.dumps({"class": "x", "args": [], "jid": "1" * 24, "bid": "a/b"}): 1})
    odd = client.get(f"/jobs/retries/1.0-{'1' * 24}").text
    assert "<code>a/b</code>" in odd and 'data-link="batch"' not in odd


def test_cancel_asks_first_then_takes_the_waiting_jobs_out(
    client: Any, access: Access, r: redis.Redis
) -> None:
    fill_batches(r)
    for jid in PENDING[2:4]:
        waiting(r, CHILD, jid)
    assert Queue().size == 2
    page = client.get(link(CHILD)).text
    assert 'name="action" value="cancel"' in page
    refused = client.post(link(CHILD), data={"action": "cancel", "confirm": "yes"})
    assert refused.status_code == 400 and Queue().size == 2
    csrf = token(client)
    question = client.post(link(CHILD), data={"action": "cancel", "csrf_token": csrf})
    assert question.status_code == 200
    assert "Cancel batch &lt;b&gt;part 1&lt;/b&gt;?" in question.text
    assert "Of its 6 jobs not yet succeeded" in question.text and Queue().size == 2
    form = {"action": "cancel", "confirm": "yes", "csrf_token": csrf}
    done = client.post(link(CHILD), data=form, follow_redirects=True)
    assert flashed(done) == ["Cancelled batch &lt;b&gt;part 1&lt;/b&gt;."]
    assert Queue().size == 0
    state = Batch(CHILD).state()
    assert state is not None and state.cancelled
    assert 'data-status="cancelled"' in done.text and 'value="cancel"' not in done.text
    again = client.post(link(CHILD), data=form, follow_redirects=True)
    assert flashed(again) == [f"Batch {CHILD} was cancelled already."]
    gone = client.post(link("0" * 24), data=form, follow_redirects=True)
    assert flashed(gone) == [f"Batch {'0' * 24} is no longer here."]


def test_cancel_needs_the_delete_permission(client: Any, access: Access, r: redis.Redis) -> None:
    fill_batches(r)
    csrf = token(client)
    access.permissions = {"view", "change"}
    assert 'value="cancel"' not in client.get(link(DONE)).text
    form = {"action": "cancel", "confirm": "yes", "csrf_token": csrf}
    assert client.post(link(DONE), data=form).status_code == 403
    state = Batch(DONE).state()
    assert state is not None and not state.cancelled
    access.permissions = {"view", "change", "delete"}
    assert 'value="cancel"' in client.get(link(DONE)).text
    assert 'value="cancel"' not in client.get(link(GONE)).text  # cancelled already
