"""Django tests: pytest-django with tests.django.settings, a real database and the session's
private Redis, with djqueue configured from settings.DJQUEUE on top of it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest
import redis
from django.conf import settings

import djqueue
from djqueue.contrib.django.tasks_framework import signals
from tests.browser import VIEWPORT, Problems, log_in
from tests.django.testapp.jobs import SEEN

if TYPE_CHECKING:
    from django.test import Client
    from playwright.sync_api import Browser, Page

#: The superuser the browser tests log in as.
USERNAME, PASSWORD = "grace", "a browser-test password"


@pytest.fixture(autouse=True)
def djqueue_from_settings(redis_url: str) -> Iterator[str]:
    djqueue.configure(framework=settings.DJQUEUE, redis_url=redis_url)
    yield redis_url


@pytest.fixture
def root_client(client: Client) -> Client:
    """A test client logged in as the superuser "root", for the admin tests (marked django_db);
    pytest-django's own `admin_client` (user "admin") asks for the database itself."""
    from django.contrib.auth.models import User

    client.force_login(User.objects.create_superuser("root", "root@example.com", "pw"))
    return client


@pytest.fixture
def admin_page(
    browser: Browser, live_server: Any, problems: Problems, settings: Any
) -> Iterator[Page]:
    """A superuser, logged in through the admin's login form in a fresh browser context;
    pushes are written at once (``ENQUEUE_ON_COMMIT`` off)."""
    from django.contrib.auth.models import User

    settings.DJQUEUE = {**settings.DJQUEUE, "ENQUEUE_ON_COMMIT": False}
    User.objects.create_superuser(USERNAME, "grace@example.com", PASSWORD)
    context = browser.new_context(
        base_url=live_server.url, viewport=VIEWPORT, locale="en-US", timezone_id="UTC"
    )
    context.set_default_timeout(30_000)  # a loaded machine serves slowly
    found = context.new_page()
    problems.watch(found)
    log_in(found, USERNAME, PASSWORD)
    yield found
    context.close()


def seen(r: redis.Redis, kind: str | None = None) -> list[dict[str, Any]]:
    """What the jobs reported (see testapp.jobs.record)."""
    items = [json.loads(x) for x in r.lrange(SEEN, 0, -1)]
    return [i for i in items if kind is None or i["kind"] == kind]


def queued(r: redis.Redis, queue: str = "default") -> list[dict[str, Any]]:
    """The jobs waiting in a queue, oldest first."""
    return [json.loads(x) for x in reversed(r.lrange(f"queue:{queue}", 0, -1))]


@pytest.fixture
def task_signals() -> Iterator[list[tuple[str, object, object]]]:
    """Every django.tasks signal sent during the test, as (name, sender, status)."""
    got: list[tuple[str, object, object]] = []

    def receiver(name: str) -> Any:
        def receive(sender: object, task_result: Any, **kwargs: Any) -> None:
            got.append((name, sender, task_result.status))

        return receive

    receivers = {name: receiver(name) for name in ("enqueued", "started", "finished")}
    for name, func in receivers.items():
        getattr(signals, f"task_{name}").connect(func)
    yield got
    for name, func in receivers.items():
        getattr(signals, f"task_{name}").disconnect(func)
