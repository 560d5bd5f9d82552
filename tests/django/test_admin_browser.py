"""The admin's djqueue pages in a real browser: Chromium, driven by Playwright, against the
live test server. Logging in through the form, every page with what it should show, the
actions as a person runs them (tick a row, choose, Run), "Select all N jobs" with its
confirmation, and the dashboard's figures following a running worker without a reload.

Jobs are pushed with the real client and failed by a real worker. The one hand-written data
is the chart's past days: a test cannot make yesterday's counters otherwise. A screenshot of
every page goes to tests/screenshots/ (git-ignored); with DJQUEUE_UPDATE_DOCS_SCREENSHOTS=1 the
dashboard's is also written to docs/images/admin-dashboard.png.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pytest
import redis
from django.contrib.auth.models import User

import djqueue
from djqueue.api import DeadSet, Queue, RetrySet, Stats
from tests.browser import (
    VIEWPORT,
    Problems,
    check_narrow_list,
    expect,
    launch,
    log_in,
    require_browser,
    screenshot,
    sync_playwright,
    update_docs_screenshot,
)
from tests.worker_support import Running, wait_for

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Locator, Page

# Playwright's sync API keeps an event loop in this thread; Django's ORM would refuse to run.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

#: The dashboard reads the outbox's figures from every database that may hold its table.
pytestmark = pytest.mark.django_db(transaction=True, databases=["default", "other"])

ADMIN = "/admin/djqueue"
USERNAME, PASSWORD = "ada", "a browser-test password"
RUNNING = threading.Event()
RELEASE = threading.Event()


def _in_an_hour(count: int, exc: BaseException) -> float:
    """Retries wait an hour, so none comes back while a test looks at the retry list."""
    return 3600.0


@djqueue.job(name="billing.charge_card", retry=5, backtrace=True, retry_in=_in_an_hour)
def charge_card(order: str, options: dict[str, str]) -> None:
    raise ValueError(f"card declined for {order}")


@djqueue.job(name="inventory.sync_stock", retry=0, backtrace=True)
def sync_stock(sku: str) -> None:
    """retry=0: the first failure goes straight to the dead set."""
    raise ConnectionError(f"warehouse API timed out for {sku}")


@djqueue.job(name="mail.send_receipt")
def send_receipt(order: str) -> None:
    pass


@djqueue.job(name="reports.rebuild")
def rebuild_report(label: str) -> None:
    """Runs until the test sets RELEASE, so the busy page has something running."""
    RUNNING.set()
    RELEASE.wait(30)


# -- fixtures and helpers ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """One Chromium for the module; each test gets its own context (cookies, session)."""
    require_browser()
    with sync_playwright() as playwright:
        found = launch(playwright)
        yield found
        found.close()


@pytest.fixture
def problems() -> Problems:
    return Problems()


@pytest.fixture
def page(browser: Browser, live_server: Any, problems: Problems) -> Iterator[Page]:
    """A superuser, logged in through the admin's login form in a fresh browser context."""
    User.objects.create_superuser(USERNAME, "ada@example.com", PASSWORD)
    context = browser.new_context(
        base_url=live_server.url, viewport=VIEWPORT, locale="en-US", timezone_id="UTC"
    )
    context.set_default_timeout(10_000)
    found = context.new_page()
    problems.watch(found)
    log_in(found, USERNAME, PASSWORD)
    yield found
    context.close()


@pytest.fixture
def fail(worker: Callable[..., Running]) -> Callable[..., list[str]]:
    """``fail(job, n)`` has a real worker run ``job`` n times, all failing, and stops it once
    they are in the retry or dead set; their jids."""

    def make(job: Any, n: int) -> list[str]:
        running = worker()
        before = RetrySet().size + DeadSet().size
        jids = [str(job.perform_async(*arguments(job, i))) for i in range(n)]
        wait_for(lambda: RetrySet().size + DeadSet().size >= before + n, what="failed jobs")
        running.stop()
        return jids

    return make


def arguments(job: Any, i: int) -> tuple[Any, ...]:
    if job is charge_card:
        return (f"order-{1000 + i}", {"card": "visa", "token": "tok_s3cret"})
    return (f"SKU-{100 + i}",)


def figure(page: Page, name: str) -> Locator:
    return page.locator(f'[data-figure="{name}"]')


def row(page: Page, jid: str) -> Locator:
    return page.locator(f'#result_list tr[data-jid="{jid}"]')


def rows(page: Page) -> Locator:
    return page.locator("#result_list tbody tr")


def messages(page: Page) -> Locator:
    return page.locator("ul.messagelist li")


def tab(page: Page, label: str) -> None:
    """Go to a page through djqueue's tab bar."""
    with page.expect_navigation():
        page.locator(".djqueue-nav").get_by_role("link", name=label, exact=True).click()
    expect(page.locator(".djqueue-nav li.active")).to_have_text(label)


def run_action(page: Page, jids: list[str], action: str) -> None:
    """Tick the rows, choose the action, press Run, as a person does."""
    for jid in jids:
        row(page, jid).locator("input.action-select").check()
    count = rows(page).count()
    expect(page.locator(".action-counter")).to_have_text(f"{len(jids)} of {count} selected")
    page.select_option("select[name=action]", action)
    with page.expect_navigation():
        page.click("#changelist-form button[name=index]")


def seed_history(r: redis.Redis, today: dt.date) -> dict[str, tuple[int, int]]:
    """Hand-written: processed and failed counts for the 29 days before today, as workers
    write them (``stat:processed:YYYY-MM-DD``), so the chart has a history to draw."""
    days = {}
    for n in range(1, 30):
        day = (today - dt.timedelta(days=n)).isoformat()
        processed = 12 + 4 * ((n * 7) % 5) + 3 * (n % 3)  # the scale of today's real jobs
        failed = (n * 5) % 7 // 2
        r.set(f"stat:processed:{day}", processed)
        r.set(f"stat:failed:{day}", failed)
        days[day] = (processed, failed)
    return days


def field(page: Page, label: str) -> Locator:
    """A value on a job's page, by its label."""
    return page.locator(
        ".djqueue-job tr", has=page.get_by_role("rowheader", name=label, exact=True)
    ).locator("td")


def chart_titles(page: Page) -> list[str]:
    return page.locator('[data-live="chart"] svg title').all_text_contents()


# -- tests ------------------------------------------------------------------------------------


def test_log_in_and_every_page_shows_its_jobs(
    page: Page, problems: Problems, worker: Callable[..., Running], r: redis.Redis
) -> None:
    today = dt.datetime.now(dt.UTC).date()
    history = seed_history(r, today)
    running = worker()
    for n in range(12):
        send_receipt.perform_async(f"order-{900 + n}")
    declined = [
        str(charge_card.perform_async(f"order-{n}", {"card": "visa", "token": "tok_s3cret"}))
        for n in (1013, 1014)
    ]
    lost = [str(sync_stock.perform_async(f"SKU-{n}")) for n in (42, 43)]
    wait_for(lambda: RetrySet().size == 2 and DeadSet().size == 2, what="failed jobs")
    RUNNING.clear()
    RELEASE.clear()
    held = str(rebuild_report.perform_async("monthly sales"))
    mail = [str(send_receipt.set(queue="mailers").perform_async(f"order-{n}")) for n in (1, 2, 3)]
    later = str(send_receipt.perform_in(3600, "order-1018"))
    try:
        assert RUNNING.wait(10)
        wait_for(lambda: Stats().processed == 16 and Stats().busy == 1, what="flushed counters")
        tour(page, running, today, history, declined, lost, held, mail, later, r)
    finally:
        RELEASE.set()
    assert problems.take() == []


def tour(
    page: Page,
    running: Running,
    today: dt.date,
    history: dict[str, tuple[int, int]],
    declined: list[str],
    lost: list[str],
    held: str,
    mail: list[str],
    later: str,
    r: redis.Redis,
) -> None:
    # Logged in (the form sent us to the index), which lists djqueue's pages like models.
    expect(page.locator("#user-tools")).to_contain_text(USERNAME)
    expect(page.locator("#site-name")).to_contain_text("Django administration")
    djqueue_app = page.locator(".app-djqueue")
    for label in ("Dashboard", "Queues", "Scheduled", "Retries", "Dead", "Busy"):
        expect(djqueue_app.get_by_role("link", name=label, exact=True)).to_be_visible()
    screenshot(page, "index")

    with page.expect_navigation():
        djqueue_app.get_by_role("link", name="Dashboard", exact=True).click()
    expected = {
        "processed": "16",  # 12 receipts, 2 declined cards, 2 lost syncs; the report runs
        "failed": "4",
        "busy": "1",
        "enqueued": "3",
        "scheduled": "1",
        "retries": "2",
        "dead": "2",
        "processes": "1",
    }
    for name, text in expected.items():
        expect(figure(page, name)).to_have_text(text)
    expect(page.locator(".djqueue-figure .djqueue-label").first).to_have_text("Processed")
    # Styled: djqueue's stylesheet lays the figures out as a grid.
    assert page.locator(".djqueue-figures").evaluate("e => getComputedStyle(e).display") == ("grid")
    expect(page.locator('[data-live="chart"] svg polyline')).to_have_count(2)
    titles = chart_titles(page)
    assert f"{today.isoformat()}: 16 processed, 4 failed" in titles
    day, (processed, failed) = next(iter(history.items()))
    assert f"{day}: {processed:,} processed, {failed:,} failed" in titles
    expect(page.locator('[data-redis="Version"]')).to_have_text(r.info()["redis_version"])
    expect(page.locator('[data-redis="URL"]')).to_contain_text("127.0.0.1")
    update_docs_screenshot(screenshot(page, "dashboard"))

    tab(page, "Queues")
    mailers = page.locator("#result_list tbody tr").filter(
        has=page.get_by_role("link", name="mailers", exact=True)
    )
    expect(mailers.locator("td.djqueue-number")).to_have_text("3")
    expect(mailers.locator("td").nth(1)).to_have_text(re.compile(r"^\d+\.\d s$"))
    expect(mailers.get_by_role("button", name="Clear")).to_be_visible()
    screenshot(page, "queues")

    with page.expect_navigation():
        mailers.get_by_role("link", name="mailers").click()
    expect(page.locator(".breadcrumbs")).to_contain_text("mailers")
    assert rows(page).evaluate_all("rs => rs.map(r => r.dataset.jid)") == mail[::-1]
    expect(row(page, mail[0])).to_contain_text("mail.send_receipt")
    expect(row(page, mail[0]).locator("code.djqueue-args")).to_have_text('"order-1"')
    screenshot(page, "queue")
    with page.expect_navigation():
        row(page, mail[0]).locator("th a").click()
    expect(page.locator(".djqueue-job h2")).to_have_text("mail.send_receipt")
    expect(page.locator(".djqueue-job")).to_contain_text(mail[0])
    expect(page.locator(".djqueue-job-actions").get_by_role("button")).to_have_text(["Delete"])
    screenshot(page, "queue-job")

    tab(page, "Scheduled")
    expect(rows(page)).to_have_count(1)
    expect(row(page, later)).to_contain_text("in 59 minutes")
    expect(row(page, later)).to_contain_text('"order-1018"')
    screenshot(page, "scheduled")

    tab(page, "Retries")
    expect(rows(page)).to_have_count(2)
    for jid, order in zip(declined, ("order-1013", "order-1014"), strict=True):
        expect(row(page, jid).locator("td.djqueue-error")).to_have_text(
            f"ValueError: card declined for {order}"
        )
        expect(row(page, jid)).to_contain_text("billing.charge_card")
        expect(row(page, jid)).to_contain_text("in 59 minutes")
    assert "tok_s3cret" not in page.content()  # a secret-looking key's value is masked
    expect(page.locator("#result_list")).to_contain_text("********")
    expect(page.locator("#changelist-filter")).to_contain_text("By job")
    screenshot(page, "retries")

    # Search, then the sidebar's filter, then back to everything.
    page.fill("#searchbar", "order-1014")
    with page.expect_navigation():
        page.press("#searchbar", "Enter")
    expect(rows(page)).to_have_count(1)
    expect(row(page, declined[1])).to_be_visible()
    expect(page.locator(".djqueue-count")).to_contain_text("1 result (2 total)")
    with page.expect_navigation():
        page.locator("#changelist-filter").get_by_role("link", name="Clear all filters").click()
    with page.expect_navigation():
        page.locator("#changelist-filter").get_by_role(
            "link", name="billing.charge_card", exact=True
        ).click()
    assert "job=billing.charge_card" in page.url
    expect(rows(page)).to_have_count(2)

    # A job's page, from the link in its row's first column.
    with page.expect_navigation():
        row(page, declined[0]).locator("th a").click()
    expect(page.locator(".djqueue-job h2")).to_have_text("billing.charge_card")
    expect(page.locator(".djqueue-job td.djqueue-error")).to_have_text(
        "ValueError: card declined for order-1013"
    )
    expect(page.locator(".djqueue-job")).to_contain_text(declined[0])
    innermost = page.locator(".djqueue-frames li").first
    expect(innermost.locator(".djqueue-frame-file")).to_contain_text("test_admin_browser.py")
    expect(innermost.locator(".djqueue-frame-function")).to_have_text("charge_card")
    expect(innermost.locator(".djqueue-frame-source")).to_contain_text("raise ValueError(")
    expect(page.locator(".djqueue-payload pre")).to_contain_text('"retry_count": 0')
    expect(field(page, "Retry")).to_have_text("5")  # @djqueue.job(retry=5)
    expect(field(page, "Retry count")).to_have_text("0")
    for label in ("Retry now", "Kill", "Delete"):
        expect(
            page.locator(".djqueue-job-actions").get_by_role("button", name=label)
        ).to_be_visible()
    expect(page.locator(".breadcrumbs")).to_contain_text("Retries")
    assert "tok_s3cret" not in page.content()
    screenshot(page, "job")

    tab(page, "Dead")
    expect(rows(page)).to_have_count(2)
    for jid, sku in zip(lost, ("SKU-42", "SKU-43"), strict=True):
        expect(row(page, jid).locator("td.djqueue-error")).to_have_text(
            f"ConnectionError: warehouse API timed out for {sku}"
        )
        expect(row(page, jid)).to_contain_text("inventory.sync_stock")
    screenshot(page, "dead")
    with page.expect_navigation():
        row(page, lost[0]).locator("th a").click()
    expect(page.locator(".djqueue-job td.djqueue-error")).to_have_text(
        "ConnectionError: warehouse API timed out for SKU-42"
    )
    expect(field(page, "Retry")).to_have_text("0")  # retry=0: straight to the dead set
    expect(page.locator(".djqueue-job-actions").get_by_role("button")).to_have_text(
        ["Retry now", "Delete"]
    )

    tab(page, "Busy")
    process = page.locator(f'tr[data-identity="{running.identity}"]')
    expect(process).to_be_visible()
    expect(process).to_contain_text("default")
    expect(page.locator("#djqueue-work h2")).to_have_text("Running now: 1")
    work = page.locator("#djqueue-work-list tbody tr")
    expect(work).to_contain_text("reports.rebuild")
    expect(work).to_contain_text(held)
    expect(work.locator("code")).to_have_text('"monthly sales"')
    screenshot(page, "busy")

    # Quiet from the process's row: the worker hears it on its next beat.
    with page.expect_navigation():
        process.get_by_role("button", name="Quiet").click()
    expect(messages(page)).to_have_text(["Quieted 1 process."])
    wait_for(lambda: running.launcher.manager.quiet, what="the worker quiet")

    # Clear a queue: the button asks first, and nothing is gone until the answer.
    tab(page, "Queues")
    with page.expect_navigation():
        mailers.get_by_role("button", name="Clear").click()
    expect(page.locator("h2.djqueue-question")).to_have_text(
        "Clear queue mailers: delete all 3 of its jobs?"
    )
    assert Queue("mailers").size == 3
    screenshot(page, "clear-queue")
    with page.expect_navigation():
        page.get_by_role("button", name="Yes, I’m sure").click()
    expect(messages(page)).to_have_text(["Cleared queue mailers: deleted 3 jobs."])
    assert Queue("mailers").size == 0


def test_retry_kill_and_delete_from_the_retry_list(
    page: Page, problems: Problems, fail: Callable[..., list[str]]
) -> None:
    first, second, third = fail(charge_card, 3)
    page.goto(f"{ADMIN}/retryjob/")
    expect(rows(page)).to_have_count(3)

    run_action(page, [first], "retry")
    expect(messages(page)).to_have_text(["Retried 1 job."])
    expect(row(page, first)).to_have_count(0)
    expect(rows(page)).to_have_count(2)
    assert [j.jid for j in Queue().jobs()] == [first]

    run_action(page, [second], "kill")
    expect(messages(page)).to_have_text(["Killed 1 job."])
    expect(row(page, second)).to_have_count(0)
    assert [e.jid for e in DeadSet().jobs()] == [second]

    run_action(page, [third], "delete")
    expect(messages(page)).to_have_text(["Deleted 1 job."])
    expect(page.locator(".djqueue-empty")).to_have_text("No jobs here.")
    assert RetrySet().size == 0
    assert [e.jid for e in DeadSet().jobs()] == [second]  # deleted, not killed
    assert [j.jid for j in Queue().jobs()] == [first]

    # The killed job is on the dead list now.
    page.goto(f"{ADMIN}/deadjob/")
    expect(rows(page)).to_have_count(1)
    expect(row(page, second)).to_contain_text("card declined for order-1001")
    assert problems.take() == []


def test_a_list_page_fits_420_px(
    page: Page, problems: Problems, fail: Callable[..., list[str]]
) -> None:
    fail(charge_card, 3)
    check_narrow_list(page, f"{ADMIN}/retryjob/", prefix="admin")
    assert problems.take() == []


def test_select_all_jobs_of_a_long_list_asks_then_retries_them_all(
    page: Page, problems: Problems, fail: Callable[..., list[str]]
) -> None:
    jids = fail(sync_stock, 30)
    assert DeadSet().size == 30
    page.goto(f"{ADMIN}/deadjob/")
    expect(rows(page)).to_have_count(25)
    paginator = page.locator(".paginator")
    expect(paginator).to_contain_text("1–25 of 30 jobs")
    with page.expect_navigation():
        paginator.get_by_role("button", name="2", exact=True).click()
    expect(rows(page)).to_have_count(5)
    with page.expect_navigation():
        page.locator(".paginator").get_by_role("button", name="1", exact=True).click()
    expect(rows(page)).to_have_count(25)

    page.check("#action-toggle")
    expect(page.locator(".action-counter")).to_have_text("25 of 25 selected")
    page.get_by_role("button", name="Select all 30 jobs").click()
    expect(page.locator(".actions .all")).to_have_text("All 30 selected")
    expect(page.locator(".actions .all")).to_be_visible()
    expect(page.locator("input.select-across")).to_have_value("1")
    page.select_option("select[name=action]", "retry")
    screenshot(page, "dead-select-all")
    with page.expect_navigation():
        page.click("#changelist-form button[name=index]")

    expect(page.locator("h2.djqueue-question")).to_have_text("Retry all 30 jobs now?")
    assert DeadSet().size == 30  # nothing happened yet
    screenshot(page, "confirm")
    with page.expect_navigation():
        page.get_by_role("button", name="Yes, I’m sure").click()
    expect(messages(page)).to_have_text(["Retried 30 jobs."])
    expect(page.locator(".djqueue-empty")).to_have_text("No jobs here.")
    assert DeadSet().size == 0
    assert sorted(j.jid for j in Queue()) == sorted(jids)
    assert problems.take() == []


def test_dashboard_figures_follow_a_running_worker_without_a_reload(
    page: Page, problems: Problems, worker: Callable[..., Running]
) -> None:
    page.goto(f"{ADMIN}/dashboard/?poll=2")
    expect(page.locator(".djqueue-status strong")).to_have_text("2 s")
    before = int(figure(page, "processed").inner_text().replace(",", ""))
    page.evaluate("window.djqueueTestMarker = 'same page'")
    running = worker()
    for n in range(8):
        send_receipt.perform_async(f"order-{n}")
    for n in range(2):
        charge_card.perform_async(f"order-{n}", {"card": "visa"})
    expect(figure(page, "processed")).to_have_text(str(before + 10), timeout=20_000)
    expect(figure(page, "failed")).to_have_text("2")
    expect(figure(page, "retries")).to_have_text("2")
    expect(figure(page, "processes")).to_have_text("1")
    expect(page.locator('[data-live="updated"]')).to_contain_text("updated ")
    today = dt.datetime.now(dt.UTC).date().isoformat()
    page.wait_for_function(
        """title => Array.from(document.querySelectorAll('[data-live="chart"] svg title'))
            .some(t => t.textContent === title)""",
        arg=f"{today}: {before + 10} processed, 2 failed",
    )
    assert page.evaluate("window.djqueueTestMarker") == "same page"  # never reloaded
    screenshot(page, "dashboard-live")
    running.stop()
    expect(figure(page, "processes")).to_have_text("0", timeout=10_000)
    assert problems.take() == []
