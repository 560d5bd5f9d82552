"""Pausing a queue from the admin in a real browser (Chromium driven by Playwright, against the
live test server): the Queues page's button, the tag it shows, the queue's own page, the
dashboard's status line, and resuming. Screenshots go to tests/screenshots/admin-pause*.png."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import pytest

import djqueue
from djqueue.api import Queue
from tests.browser import Problems, expect, screenshot

if TYPE_CHECKING:
    from playwright.sync_api import Page

# Playwright's sync API keeps an event loop in this thread; Django's ORM would refuse to run.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

pytestmark = pytest.mark.django_db(transaction=True)

QUEUES = "/admin/djqueue/queue/"


@djqueue.job(queue="mailers")
def send_digest(user_id: int) -> None:
    pass


@pytest.fixture
def page(admin_page: Page) -> Page:
    return admin_page


def test_pause_and_resume_a_queue_in_the_browser(
    page: Page, problems: Problems, redis_url: str
) -> None:
    for n in range(3):
        send_digest.perform_later(n)
    send_digest.set(queue="default").perform_later(9)
    page.goto(QUEUES)
    mailers = page.locator('#result_list tr[data-name="mailers"]')
    with page.expect_navigation():
        mailers.get_by_role("button", name="Pause").click()
    expect(page.locator("ul.messagelist li")).to_contain_text(["Paused queue mailers"])
    expect(mailers.locator(".djqueue-paused")).to_have_text("paused")
    expect(mailers.get_by_role("button", name="Resume")).to_be_visible()
    expect(page.locator('#result_list tr[data-name="default"] .djqueue-paused')).to_have_count(0)
    assert Queue("mailers").paused and Queue("mailers").size == 3
    screenshot(page, "pause-queues")

    with page.expect_navigation():
        mailers.locator("th a").click()
    expect(page.locator(".djqueue-tools .djqueue-paused")).to_have_text("paused")
    screenshot(page, "pause-queue")

    page.goto("/admin/djqueue/dashboard/")
    expect(page.locator('[data-live="paused"]')).to_have_text("mailers")
    screenshot(page, "pause-dashboard")

    page.goto(QUEUES + "mailers/")
    with page.expect_navigation():
        page.get_by_role("button", name="Resume queue").click()
    expect(page.locator("ul.messagelist li")).to_contain_text(["Resumed queue mailers"])
    expect(page.get_by_role("button", name="Pause queue")).to_be_visible()
    assert not Queue("mailers").paused
    assert problems.take() == []
