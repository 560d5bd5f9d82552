"""The admin's Periodic page in a real browser (Chromium driven by Playwright, against the live
test server): reached from the admin index and the tab bar, a row's buttons, the action menu on
ticked rows, an entry's page with its next ticks and jid history, and delete with its question.
Screenshots go to tests/screenshots/admin-periodic*.png.

Declared entries are written by the store's own save, as a starting worker writes them; the
Ruby one as sidekiq-cron 1.8 writes it.
"""

from __future__ import annotations

import json
import os
import re
import time
from typing import TYPE_CHECKING

import pytest
import redis

from djqueue.api import PeriodicSet, Queue
from djqueue.periodic_cron import enqueue_time, iso, parse
from djqueue.periodic_declaration import build
from djqueue.store import Keys
from djqueue.store.periodic import PeriodicStore
from tests.browser import Problems, expect, screenshot

if TYPE_CHECKING:
    from playwright.sync_api import Locator, Page

# Playwright's sync API keeps an event loop in this thread; Django's ORM would refuse to run.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

pytestmark = pytest.mark.django_db(transaction=True)

PERIODIC = "/admin/djqueue/periodicjob/"


@pytest.fixture
def page(admin_page: Page) -> Page:
    return admin_page


@pytest.fixture
def schedule(r: redis.Redis) -> None:
    """Three declared entries (one disabled, one in Paris), a Ruby one and an unreadable one."""
    store = PeriodicStore(r, Keys())
    for name, cron, job, options in (
        ("cleanup.sessions", "*/5 * * * *", "accounts.clear_sessions", {}),
        (
            "reports.nightly",
            "30 2 * * *",
            "reports.build",
            {"timezone": "Europe/Paris", "args": ["sales", {"api_token": "tok_s3cret"}]},
        ),
        ("mail.digest", "0 9 * * 1-5", "mail.send_digest", {"enabled": False}),
    ):
        entry = build(name=name, cron=cron, job=job, description="", **options)
        tick = parse(entry.cron).previous(time.time())
        store.save(entry.name, entry.fields(), (tick, iso(tick)), entry.enabled)
    three_hours_ago = enqueue_time(time.time() - 3 * 3600)
    for name, cron in (("weekly_invoices", "0 4 * * 1"), ("legacy_sync", "every day at noon")):
        message = {"retry": True, "queue": "billing", "class": "InvoiceWorker", "args": [7]}
        r.sadd("cron_jobs", f"cron_job:{name}")
        r.hset(
            f"cron_job:{name}",
            mapping={
                "name": name,
                "klass": "InvoiceWorker",
                "cron": cron,
                "description": "From the Rails app",
                "args": "[7]",
                "message": json.dumps(message),
                "status": "enabled",
                "last_enqueue_time": three_hours_ago,
            },
        )
    PeriodicSet().find("cleanup.sessions").run_now()  # type: ignore[union-attr]


def row(page: Page, name: str) -> Locator:
    return page.locator(f'#result_list tr[data-name="{name}"]')


def messages(page: Page) -> Locator:
    return page.locator("ul.messagelist li")


#: A run a moment ago, as the page words it ("just now", or "2 seconds ago" on a slow machine).
RECENT = re.compile(r"just now|\d+ seconds? ago")


def test_the_periodic_page_and_its_actions(page: Page, problems: Problems, schedule: None) -> None:
    djqueue_app = page.locator(".app-djqueue")
    with page.expect_navigation():
        djqueue_app.get_by_role("link", name="Periodic", exact=True).click()
    expect(page.locator(".djqueue-nav li.active")).to_have_text("Periodic")
    expect(page.locator("#result_list tbody tr")).to_have_count(5)
    cleanup = row(page, "cleanup.sessions")
    expect(cleanup.locator(".djqueue-enabled")).to_have_text("enabled")
    expect(cleanup).to_contain_text("Every 5 minutes · UTC")
    expect(cleanup).to_contain_text(RECENT)
    nightly = row(page, "reports.nightly")
    expect(nightly).to_contain_text("Europe/Paris")
    expect(nightly.locator("code.djqueue-args")).to_have_text('"sales", {"api_token": "********"}')
    expect(row(page, "mail.digest").locator(".djqueue-disabled")).to_have_text("disabled")
    expect(row(page, "weekly_invoices")).to_contain_text("3 hours ago")
    expect(row(page, "weekly_invoices")).to_contain_text("sidekiq-cron")
    expect(row(page, "legacy_sync").locator(".djqueue-error")).to_contain_text("Cannot be read: a")
    screenshot(page, "periodic")

    # A row's own button.
    with page.expect_navigation():
        row(page, "weekly_invoices").get_by_role("button", name="Run now").click()
    expect(messages(page)).to_contain_text(["Pushed weekly_invoices (jid "])
    assert Queue("billing").size == 1

    # The action menu on ticked rows, through the admin's own actions.js.
    for name in ("cleanup.sessions", "reports.nightly"):
        row(page, name).locator("input.action-select").check()
    expect(page.locator(".action-counter")).to_have_text("2 of 5 selected")
    page.select_option("select[name=action]", "disable")
    with page.expect_navigation():
        page.click("#changelist-form button[name=index]")
    expect(messages(page)).to_have_text(["Disabled cleanup.sessions, reports.nightly."])
    expect(row(page, "reports.nightly").get_by_role("button", name="Enable")).to_be_visible()

    # An entry's page: fields, next ticks, the jid pushed a moment ago.
    with page.expect_navigation():
        row(page, "reports.nightly").locator("th a").click()
    expect(page.locator(".djqueue-upcoming tr")).to_have_count(5)
    expect(page.locator(".djqueue-payload pre")).to_contain_text('"api_token": "********"')
    with page.expect_navigation():
        page.get_by_role("button", name="Enable").click()
    expect(messages(page)).to_have_text(["Enabled reports.nightly."])
    with page.expect_navigation():
        page.get_by_role("button", name="Run now").click()
    jid = Queue().jobs()[0].jid
    expect(page.locator(f'.djqueue-history tr[data-jid="{jid}"]')).to_contain_text(RECENT)
    screenshot(page, "periodic-entry")

    # Delete asks first and warns that a declared job comes back.
    with page.expect_navigation():
        page.get_by_role("button", name="Delete").click()
    expect(page.locator("h2.djqueue-question")).to_have_text(
        "Delete the periodic job reports.nightly?"
    )
    expect(page.locator(".djqueue-note")).to_contain_text("the next worker to start writes it")
    screenshot(page, "periodic-delete")
    with page.expect_navigation():
        page.get_by_role("button", name="Yes, I’m sure").click()
    expect(messages(page)).to_contain_text(["Deleted reports.nightly."])
    expect(page.locator("#result_list tbody tr")).to_have_count(4)
    assert PeriodicSet().find("reports.nightly") is None
    assert problems.take() == []
