"""The admin's Batches pages through Django's test client: the list and a batch's page (the
same checks as the Flask dashboard's), the index entry, who may see and cancel, CSRF, the
batch id on a job's page and a batch's job followed to its page. The batches are written as
the runtime writes them (`tests.test_batch_read.fill_batches`)."""

from __future__ import annotations

import re
from typing import Any

import pytest
import redis
from django.contrib.auth.models import Permission, User
from django.test import Client

from djqueue.api import Batch, Queue, RetrySet
from tests.test_batch_read import (
    CHILD,
    DONE,
    RETRYING,
    check_batch_page,
    check_batches_page,
    fill_batches,
    waiting,
)

pytestmark = pytest.mark.django_db

ADMIN = "/admin/djqueue"
BATCHES = f"{ADMIN}/batch/"


def link(path: str) -> str:
    return f"{BATCHES}{path}/"


def user(*perms: str) -> User:
    found = User.objects.create_user(f"u{User.objects.count()}", password="pw", is_staff=True)
    for name in perms:
        found.user_permissions.add(Permission.objects.get(codename=name))
    return User.objects.get(pk=found.pk)


@pytest.fixture(autouse=True)
def push_at_once(settings: Any) -> None:
    """The tests run inside a transaction that never commits: push without waiting for it."""
    settings.DJQUEUE = {**settings.DJQUEUE, "ENQUEUE_ON_COMMIT": False}


def messages(response: Any) -> list[str]:
    return [str(m) for m in response.context["messages"]]


def test_the_list_and_a_batch_page(root_client: Client, r: redis.Redis) -> None:
    fill_batches(r)
    listing = root_client.get(BATCHES)
    assert listing.status_code == 200
    check_batches_page(listing.content.decode(), link)
    assert 'class="active"><a href="/admin/djqueue/batch/"' in listing.content.decode()
    assert f'href="{BATCHES}"' in root_client.get("/admin/").content.decode()
    page = root_client.get(link(CHILD))
    assert page.status_code == 200
    check_batch_page(page.content.decode(), link)
    missing = root_client.get(link("0" * 24))
    assert missing.status_code == 404 and "is kept" in missing.content.decode()


def test_a_batch_job_leads_to_its_page_which_links_back(
    root_client: Client, r: redis.Redis
) -> None:
    fill_batches(r)
    found = root_client.get(link(f"{CHILD}/job/{RETRYING}"))
    entry = RetrySet().find_job(RETRYING)
    assert entry is not None and found.status_code == 302
    assert found["Location"] == f"{ADMIN}/retryjob/{entry.key}/"
    job_page = root_client.get(found["Location"])
    assert messages(job_page) == []  # followed, nothing to say
    text = job_page.content.decode()
    assert f'<a href="{link(CHILD)}" data-link="batch"><code>{CHILD}</code></a>' in text


@pytest.mark.parametrize("page", ["", f"{CHILD}/"])
def test_staff_need_the_view_permission(client: Client, r: redis.Redis, page: str) -> None:
    fill_batches(r)
    assert client.get(f"{BATCHES}{page}").status_code == 302  # to log in
    client.force_login(user())
    assert client.get(f"{BATCHES}{page}").status_code == 403
    client.force_login(user("view_job"))
    assert client.get(f"{BATCHES}{page}").status_code == 200


def test_cancel_needs_the_delete_permission_and_the_csrf_token(r: redis.Redis) -> None:
    fill_batches(r)
    waiting(r, DONE, "9" * 24)
    client = Client(enforce_csrf_checks=True)
    client.force_login(user("view_job", "change_job"))
    page = client.get(link(DONE)).content.decode()
    assert 'value="cancel"' not in page
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)  # the log-out form's
    assert token is not None
    form = {"action": "cancel", "confirm": "yes"}
    assert client.post(link(DONE), {**form, "csrfmiddlewaretoken": token[1]}).status_code == 403
    client.force_login(user("view_job", "delete_job"))
    page = client.get(link(DONE)).content.decode()
    assert 'value="cancel"' in page
    assert client.post(link(DONE), form).status_code == 403  # no token
    assert Queue().size == 1
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)
    assert token is not None
    asked = client.post(link(DONE), {"action": "cancel", "csrfmiddlewaretoken": token[1]})
    assert asked.status_code == 200 and "Cancel batch welcome mails?" in asked.content.decode()
    done = client.post(link(DONE), {**form, "csrfmiddlewaretoken": token[1]}, follow=True)
    assert messages(done) == ["Cancelled batch welcome mails."]
    state = Batch(DONE).state()
    assert state is not None and state.cancelled and Queue().size == 0
