"""The Flask dashboard in a real browser: Chromium driven by Playwright against the app served
by Werkzeug on a thread. Every page with what it should show, an action as a person runs it,
"Select all N jobs" with its question, and the live figures following a real worker.
Screenshots go to tests/screenshots/flask-*.png."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import flask
import pytest
from werkzeug.serving import make_server

import djqueue
from djqueue.api import DeadSet, Queue, RetrySet
from flask_djqueue import DjQueue
from flask_djqueue.dashboard import dashboard_blueprint
from tests.browser import (
    VIEWPORT,
    Problems,
    check_narrow_list,
    expect,
    launch,
    require_browser,
    screenshot,
)
from tests.browser import sync_playwright as playwright_sync
from tests.worker_support import Running, wait_for

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page


def _in_an_hour(count: int, exc: BaseException) -> float:
    return 3600.0


@djqueue.job(name="flask_browser.charge", retry=3, backtrace=True, retry_in=_in_an_hour)
def charge(order: str) -> None:
    raise ValueError(f"card declined for {order}")


@djqueue.job(name="flask_browser.ok")
def ok(n: int) -> None:
    pass


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    require_browser()
    with playwright_sync() as p:
        found = launch(p)
        yield found
        found.close()


@pytest.fixture
def site(redis_url: str) -> Iterator[str]:
    """The app, served on a free port; its base URL."""
    app = flask.Flask("flask_browser")
    app.config.update(SECRET_KEY="browser-test", DJQUEUE_REDIS_URL=redis_url)
    DjQueue(app)
    app.register_blueprint(dashboard_blueprint(auth=lambda permission: True), url_prefix="/jobs")
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()


@pytest.fixture
def page(browser: Browser, site: str) -> Iterator[Page]:
    context = browser.new_context(base_url=site, viewport=VIEWPORT)
    found = context.new_page()
    problems = Problems()
    problems.watch(found)
    yield found
    context.close()
    assert problems.take() == []


@pytest.fixture
def failed(worker: Callable[..., Running]) -> Callable[[int], None]:
    def make(n: int) -> None:
        running = worker()
        for i in range(n):
            charge.perform_async(f"order-{i}")
        wait_for(lambda: RetrySet().size >= n)
        running.stop()

    return make


def test_every_page_and_a_retry(page: Page, failed: Callable[[int], None]) -> None:
    failed(2)
    ok.perform_in(600, 1)
    ok.set(queue="mailers").perform_async(2)
    DeadSet().kill({"class": "Ruby::Job", "args": [1], "jid": "d" * 24, "queue": "q"})
    page.goto("/jobs/")
    expect(page.locator('[data-figure="retries"]')).to_have_text("2")
    expect(page.locator(".djqueue-chart-box svg")).to_be_visible()
    screenshot(page, "dashboard", prefix="flask")
    for path, text, name in (
        ("/jobs/queues", "mailers", "queues"),
        ("/jobs/queues/mailers", "flask_browser.ok", "queue"),
        ("/jobs/scheduled", "flask_browser.ok", "scheduled"),
        ("/jobs/retries", "card declined for order-1", "retries"),
        ("/jobs/dead", "Ruby::Job", "dead"),
        ("/jobs/busy", "No worker is running", "busy"),
    ):
        page.goto(path)
        expect(page.locator("#content-main")).to_contain_text(text)
        screenshot(page, name, prefix="flask")
    page.goto("/jobs/retries")
    page.locator("tbody th a").first.click()
    innermost = page.locator(".djqueue-frames li").first
    expect(innermost.locator(".djqueue-frame-function")).to_have_text("charge")
    expect(innermost.locator(".djqueue-frame-source")).to_contain_text("raise")
    screenshot(page, "job", prefix="flask")
    page.click("button[value=retry]")
    expect(page.locator(".messagelist")).to_have_text("Retried 1 job.")
    expect(page.locator("tbody tr")).to_have_count(1)
    assert RetrySet().size == 1 and Queue().size == 1


def test_a_list_page_fits_420_px(page: Page, failed: Callable[[int], None]) -> None:
    failed(3)
    check_narrow_list(page, "/jobs/retries", prefix="flask")


def test_select_all_asks_then_acts(page: Page) -> None:
    for n in range(30):
        DeadSet().kill({"class": "tests.Dead", "args": [n], "jid": f"{n:024x}", "queue": "q"})
    page.goto("/jobs/dead")
    page.check("#action-toggle")
    page.click(".djqueue-select-all")
    expect(page.locator(".action-counter")).to_have_text("All 30 selected")
    page.select_option("select[name=action]", "delete")
    page.click("button[name=index]")
    expect(page.locator(".djqueue-question")).to_have_text("Delete all 30 jobs?")
    screenshot(page, "confirm", prefix="flask")
    assert DeadSet().size == 30
    page.click("input[value='Yes, I’m sure']")
    expect(page.locator(".messagelist")).to_have_text("Deleted 30 jobs.")
    assert DeadSet().size == 0


def test_live_figures_follow_a_worker(page: Page, worker: Callable[..., Any]) -> None:
    page.goto("/jobs/?poll=2")
    expect(page.locator('[data-figure="processed"]')).to_have_text("0")
    page.evaluate("window.notReloaded = true")
    running = worker()
    for n in range(5):
        ok.perform_async(n)
    expect(page.locator('[data-figure="processed"]')).to_have_text("5", timeout=15_000)
    expect(page.locator('[data-figure="processes"]')).to_have_text("1")
    assert page.evaluate("window.notReloaded") is True
    running.stop()
