"""The web app in a real browser, on both of its mounts: the Django admin (logged in through
its form, against the live test server) and the Flask blueprint (served by Werkzeug on a
thread). Chromium driven by Playwright; the same tests, the same pages, the same actions.

Every page with what it should show, in light and dark (screenshots in
build/screenshots/<mount>-<django version>/, git-ignored); the actions as a person runs them;
"Select all N jobs" and its question; the dashboard's figures and the lists' live poll
following changes without a reload; and a hostile job whose every field is markup, shown as
text on every page (no dialog ever opens).
"""

from __future__ import annotations

import functools
import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import django
import flask
import pytest
import redis
from django.contrib.auth.models import User
from werkzeug.serving import make_server

import djqueue
from djqueue.api import DeadSet, Queue, RetrySet, ScheduledSet
from djqueue.payload import dumps
from djqueue.periodic_cron import iso, parse
from djqueue.periodic_declaration import build
from djqueue.store import Keys, listing
from djqueue.store.periodic import PeriodicStore
from djqueue.web.lists import job_list
from djqueue.web.query import ListQuery
from flask_djqueue import DjQueue
from flask_djqueue.dashboard import dashboard_blueprint
from tests.browser import (
    VIEWPORT,
    Problems,
    check_narrow_list,
    expect,
    log_in,
    update_docs_screenshot,
)
from tests.test_batch_read import CHILD, check_batch_page, check_batches_page, fill_batches
from tests.test_limits import check_limits_page, fill_limiters
from tests.worker_support import Running, wait_for

if TYPE_CHECKING:
    from playwright.sync_api import Browser, BrowserContext, Locator, Page

# Playwright's sync API keeps an event loop in this thread; Django's ORM would refuse to run.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

pytestmark = pytest.mark.django_db(transaction=True, databases=["default", "other"])

ROOT = Path(__file__).resolve().parents[1]
SHOTS = ROOT / "build" / "screenshots"
USERNAME, PASSWORD = "ada", "a browser-test password"
HOSTILE = "<script>alert(1)</script><img src=x onerror=alert(1)>"


def _in_an_hour(count: int, exc: BaseException) -> float:
    return 3600.0


@djqueue.job(name="browser.charge", retry=3, backtrace=True, retry_in=_in_an_hour)
def charge(order: str) -> None:
    raise ValueError(f"card declined for {order}")


@djqueue.job(name="browser.ok")
def ok(n: int) -> None:
    pass


# -- the two mounts ---------------------------------------------------------------------------


@dataclass
class Mount:
    name: str
    base_url: str
    url: Callable[..., str]
    log_in: Callable[[Page], None]

    def shots(self) -> Path:
        folder = SHOTS / f"{self.name}-django{django.VERSION[0]}.{django.VERSION[1]}"
        folder.mkdir(parents=True, exist_ok=True)
        return folder


def _django_mount(request: pytest.FixtureRequest) -> Mount:
    live_server = request.getfixturevalue("live_server")
    User.objects.create_superuser(USERNAME, "ada@example.com", PASSWORD)
    from djqueue.contrib.django.views import url

    return Mount(
        "django",
        live_server.url,
        functools.partial(url, "admin"),
        lambda page: log_in(page, USERNAME, PASSWORD),
    )


def _flask_mount(request: pytest.FixtureRequest) -> Iterator[Mount]:
    app = flask.Flask("browser")
    app.config.update(
        SECRET_KEY="browser-test", DJQUEUE_REDIS_URL=request.getfixturevalue("redis_url")
    )
    DjQueue(app)
    blueprint = dashboard_blueprint(
        auth=lambda permission: True,
        locale=lambda: flask.request.accept_languages.best_match(["en", "ja", "fa", "zh-hans"]),
    )
    app.register_blueprint(blueprint, url_prefix="/jobs")
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()

    def url(route: str, /, **kw: Any) -> str:
        with app.test_request_context():
            return flask.url_for(f"djqueue_dashboard.{route}", **kw)

    yield Mount("flask", f"http://127.0.0.1:{server.server_port}", url, lambda page: None)
    server.shutdown()


@pytest.fixture(params=["django", "flask"])
def mount(request: pytest.FixtureRequest, redis_url: str) -> Iterator[Mount]:
    if request.param == "django":
        from django.conf import settings

        djqueue.configure(framework=settings.DJQUEUE, redis_url=redis_url)
        yield _django_mount(request)
    else:
        yield from _flask_mount(request)


def open_page(browser: Browser, mount: Mount, problems: Problems, **options: Any) -> Page:
    options = {"locale": "en-US", **options}
    context: BrowserContext = browser.new_context(
        base_url=mount.base_url, viewport=VIEWPORT, timezone_id="UTC", **options
    )
    context.set_default_timeout(30_000)  # a loaded machine serves slowly
    found = context.new_page()
    problems.watch(found)
    mount.log_in(found)
    return found


@pytest.fixture
def page(browser: Browser, mount: Mount, problems: Problems) -> Iterator[Page]:
    found = open_page(browser, mount, problems)
    yield found
    found.context.close()
    assert problems.take() == []


def shoot(page: Page, mount: Mount, name: str) -> Path:
    """A full-page screenshot, kept as an artifact. Chromium now and then answers a capture
    with "Unable to capture screenshot" (seen once in CI, on a page it had drawn): the capture
    is asked again, up to three times."""
    path = mount.shots() / f"{name}.png"
    for attempt in range(3):
        try:
            page.screenshot(path=str(path), full_page=True, animations="disabled")
            return path
        except Exception as exc:  # playwright's Error (imported only where Chromium is)
            if "Unable to capture screenshot" not in str(exc) or attempt == 2:
                raise
            page.wait_for_timeout(200)
    return path


def rows(page: Page) -> Locator:
    return page.locator("#result_list tbody tr")


def row(page: Page, jid: str) -> Locator:
    return page.locator(f'#result_list tr[data-jid="{jid}"]')


def messages(page: Page) -> Locator:
    return page.locator("ul.messagelist li")


def go(page: Page, url: str) -> None:
    response = page.goto(url)
    assert response is not None and response.ok, f"{url}: {response and response.status}"


def fail(worker: Callable[..., Running], n: int) -> list[str]:
    running = worker()
    jids = [str(charge.perform_async(f"order-{i}")) for i in range(n)]
    wait_for(lambda: RetrySet().size >= n, what="failed jobs")
    running.stop()
    return jids


def periodic_entry(r: redis.Redis, name: str, job: str = "reports.build") -> None:
    entry = build(name=name, cron="*/5 * * * *", job=job, description="", args=[name])
    tick = parse(entry.cron).previous(time.time())
    PeriodicStore(r, Keys()).save(entry.name, entry.fields(), (tick, iso(tick)), entry.enabled)


# -- every page -------------------------------------------------------------------------------


def every_page(mount: Mount, queue: str, periodic: str) -> dict[str, str]:
    """The URL of every page, with something on it: name -> URL."""
    retry = next(iter(RetrySet()))
    dead = next(iter(DeadSet()))
    scheduled = next(iter(ScheduledSet()))
    queued = job_list("queue", ListQuery(), queue=queue).rows[0]
    return {
        "dashboard": mount.url("index"),
        "queues": mount.url("queues"),
        "queue": mount.url("queue", queue=queue),
        "queue-job": mount.url("queue_job", queue=queue, key=queued.key),
        "scheduled": mount.url("scheduled"),
        "scheduled-job": mount.url("scheduled_job", key=scheduled.key),
        "retries": mount.url("retries"),
        "retry-job": mount.url("retries_job", key=retry.key),
        "dead": mount.url("dead"),
        "dead-job": mount.url("dead_job", key=dead.key),
        "periodic": mount.url("periodic"),
        "periodic-entry": mount.url("periodic_entry", name=periodic),
        "busy": mount.url("busy"),
        "metrics": mount.url("metrics"),
        "job-status": mount.url("job_status") + "?jid=",
    }


def test_every_page_light_and_dark(
    browser: Browser,
    mount: Mount,
    problems: Problems,
    worker: Callable[..., Running],
    r: redis.Redis,
) -> None:
    fail(worker, 2)
    ok.perform_in(600, 1)
    ok.set(queue="mailers").perform_async(2)
    DeadSet().kill({"class": "Ruby::Job", "args": [1], "jid": "d" * 24, "queue": "q"})
    running = worker(tag="shop")
    periodic_entry(r, "cleanup.sessions")  # after the worker: it rewrites what is declared
    pages = every_page(mount, "mailers", "cleanup.sessions")
    expected = {
        "dashboard": "Processed",
        "queues": "mailers",
        "queue": "browser.ok",
        "queue-job": "browser.ok",
        "scheduled": "browser.ok",
        "scheduled-job": "browser.ok",
        "retries": "card declined for order-1",
        "retry-job": "card declined for order-",
        "dead": "Ruby::Job",
        "dead-job": "Ruby::Job",
        "periodic": "cleanup.sessions",
        "periodic-entry": "Next 5 ticks",
        "busy": running.identity,
        "metrics": "browser.charge",
        "job-status": "Find job by jid",
    }
    for scheme in ("light", "dark"):
        page = open_page(browser, mount, problems, color_scheme=scheme)
        for name, url in pages.items():
            go(page, url)
            expect(page.locator("#content-main")).to_contain_text(expected[name])
            expect(page.locator(".djqueue-nav li.active")).to_have_count(1)
            shot = shoot(page, mount, f"{name}-{scheme}")
            if (mount.name, name, scheme) == ("django", "dashboard", "light"):
                update_docs_screenshot(shot)  # with DJQUEUE_UPDATE_DOCS_SCREENSHOTS=1
        page.context.close()
    running.stop()
    assert problems.take() == []


#: What each language shows: the Retries tab, a list's heading, the job page's payload box.
IN_LANGUAGE = {
    "ja": ("ltr", "再試行", "エラー", "ペイロード"),
    "fa": ("rtl", "تلاش‌های دوباره", "خطا", "محتوا"),
}
#: The Metrics chart's legend and a mean's unit; the admin index's name for the Busy page.
METRICS_WORDS = {"ja": ("処理済み", "ミリ秒", "稼働中"), "fa": ("پردازش‌شده", "میلی‌ثانیه", "مشغول")}

LIVE_POLL = {"ja": "自動更新", "fa": "به‌روزرسانی زنده"}
#: A periodic job's "*/5 * * * *" read aloud (`djqueue.web.cron_words`).
SCHEDULE_WORDS = {"ja": "5 分ごと", "fa": "هر 5 دقیقه"}


@pytest.mark.parametrize("language", sorted(IN_LANGUAGE))
def test_pages_in_japanese_and_persian(
    browser: Browser,
    mount: Mount,
    problems: Problems,
    worker: Callable[..., Running],
    settings: Any,
    r: redis.Redis,
    language: str,
) -> None:
    """The browser's language picks the pages' (LocaleMiddleware; the Flask locale hook);
    Persian is laid out right to left."""
    settings.LANGUAGES = [("en", "English"), ("ja", "Japanese"), ("fa", "Persian")]
    ok.perform_async(1)  # run before the failures: the Metrics page has a mean to show
    fail(worker, 2)
    periodic_entry(r, "reports.every_five")
    direction, tab, column, payload = IN_LANGUAGE[language]
    retry = next(iter(RetrySet()))
    pages = {
        "dashboard": mount.url("index"),
        "retries": mount.url("retries"),
        "retry-job": mount.url("retries_job", key=retry.key),
        "metrics": mount.url("metrics"),
        "periodic": mount.url("periodic"),
    }
    legend, unit, busy = METRICS_WORDS[language]
    page = open_page(browser, mount, problems, locale=language)
    if mount.name == "django":  # the admin's index names djqueue's pages in the language too
        go(page, "/admin/")
        expect(page.locator("#content-main .app-djqueue")).to_contain_text(busy)
        shoot(page, mount, f"admin-index-{language}")
    for name, url in pages.items():
        go(page, url)
        expect(page.locator("html")).to_have_attribute("dir", direction)
        expect(page.locator(".djqueue-nav")).to_contain_text(tab)
        if name == "retries":
            expect(page.locator("#result_list thead")).to_contain_text(column)
            # Written by live.js, from the words the page gives it.
            expect(page.locator(".djqueue-live-toggle")).to_have_text(LIVE_POLL[language])
        if name == "retry-job":
            expect(page.locator(".djqueue-payload h2")).to_have_text(payload)
        if name == "metrics":
            expect(page.locator("#djqueue-metrics-chart svg")).to_contain_text(legend)
            mean = page.locator('#result_list tr[data-name="browser.ok"] [data-figure="mean"]')
            expect(mean).to_contain_text(unit)
        if name == "periodic":
            expect(page.locator(".djqueue-schedule")).to_contain_text(SCHEDULE_WORDS[language])
            # A cron text reads left to right on a right-to-left page too ("*/5", not "5/*").
            cron = page.locator(".djqueue-schedule code").first
            assert cron.evaluate("e => getComputedStyle(e).direction") == "ltr"
        shoot(page, mount, f"{name}-{language}")
    page.context.close()
    assert problems.take() == []


def test_layout_follows_the_running_django(page: Page, mount: Mount, r: redis.Redis) -> None:
    """Django 6 draws breadcrumbs as a list, 5.2 as links with "›" between them: the frame
    draws the admin's own, so its stylesheet lays them out (never a numbered list)."""
    ok.set(queue="mailers").perform_async(1)
    go(page, mount.url("queue", queue="mailers"))
    crumbs = page.locator(".breadcrumbs")
    expect(crumbs).to_contain_text("Queues")
    expect(crumbs).to_contain_text("mailers")
    shown = crumbs.evaluate(
        """e => Array.from(e.querySelectorAll('li')).map(li => getComputedStyle(li))
            .filter(s => s.display === 'list-item' && s.listStyleType !== 'none').length"""
    )
    assert shown == 0  # no numbers, no bullets
    assert (crumbs.bounding_box() or {"height": 99})["height"] < 60  # one line
    # The filter sidebar sits beside the list, not above it.
    sidebar = page.locator("#changelist-filter").bounding_box()
    table = page.locator("#changelist-search").bounding_box()
    assert sidebar is not None and table is not None
    assert sidebar["x"] > table["x"] + table["width"] - 1
    # A page without a sidebar gives its tables the whole width (not squeezed into a row).
    for tab, table_id in (("busy", "#result_list"), ("busy", "#djqueue-work-list")):
        go(page, mount.url(tab))
        main = page.locator("#content-main").bounding_box()
        box = page.locator(table_id).bounding_box()
        assert main is not None and box is not None
        assert box["width"] > 0.9 * main["width"], (tab, table_id, box, main)


# -- actions ----------------------------------------------------------------------------------


def run_action(page: Page, jids: list[str], action: str) -> None:
    for jid in jids:
        row(page, jid).locator("input.action-select").check()
    count = rows(page).count()
    expect(page.locator(".action-counter")).to_have_text(f"{len(jids)} of {count} selected")
    page.select_option("select[name=action]", action)
    with page.expect_navigation():
        page.click("#changelist-form button[name=index]")


def test_retry_kill_delete_from_a_list_and_a_job(
    page: Page, mount: Mount, worker: Callable[..., Running]
) -> None:
    first, second, third, fourth = fail(worker, 4)
    go(page, mount.url("retries"))
    expect(rows(page)).to_have_count(4)
    run_action(page, [first], "retry")
    expect(messages(page)).to_have_text(["Retried 1 job."])
    run_action(page, [second], "kill")
    expect(messages(page)).to_have_text(["Killed 1 job."])
    run_action(page, [third], "delete")
    expect(page.locator("h2.djqueue-question")).to_have_text("Delete the 1 selected job?")
    assert RetrySet().size == 2  # nothing deleted before the answer
    with page.expect_navigation():
        page.get_by_role("button", name="Yes, I’m sure").click()
    expect(messages(page)).to_have_text(["Deleted 1 job."])
    assert [j.jid for j in Queue().jobs()] == [first]
    assert [e.jid for e in DeadSet().jobs()] == [second]
    with page.expect_navigation():
        row(page, fourth).locator("th a").click()
    # The traceback as frames, innermost first: file, line, function and its line of code.
    innermost = page.locator(".djqueue-frames li").first
    expect(innermost.locator(".djqueue-frame-file")).to_contain_text("test_dashboard_browser.py")
    expect(innermost.locator(".djqueue-frame-function")).to_have_text("charge")
    expect(innermost.locator(".djqueue-frame-source")).to_contain_text("raise ValueError(")
    expect(page.locator(".breadcrumbs")).to_contain_text("Retries")
    with page.expect_navigation():
        page.locator(".djqueue-job-actions").get_by_role("button", name="Kill").click()
    expect(messages(page)).to_have_text(["Killed 1 job."])
    assert RetrySet().size == 0 and DeadSet().size == 2
    # Delete on a job's page asks first; "No" goes back to the job, "Yes" to the list.
    go(page, mount.url("dead"))
    with page.expect_navigation():
        row(page, second).locator("th a").click()
    job_url = page.url
    delete = page.locator(".djqueue-job-actions").get_by_role("button", name="Delete")
    with page.expect_navigation():
        delete.click()
    expect(page.locator("h2.djqueue-question")).to_have_text("Delete this job?")
    with page.expect_navigation():
        page.get_by_role("link", name="No, take me back").click()
    assert page.url == job_url and DeadSet().size == 2
    with page.expect_navigation():
        delete.click()
    with page.expect_navigation():
        page.get_by_role("button", name="Yes, I’m sure").click()
    expect(messages(page)).to_have_text(["Deleted 1 job."])
    expect(rows(page)).to_have_count(1)
    assert [e.jid for e in DeadSet().jobs()] == [fourth]


def test_select_all_asks_then_acts(page: Page, mount: Mount) -> None:
    for n in range(30):
        DeadSet().kill({"class": "tests.Dead", "args": [n], "jid": f"{n:024x}", "queue": "q"})
    go(page, mount.url("dead"))
    expect(rows(page)).to_have_count(25)
    expect(page.locator(".paginator")).to_contain_text("1–25 of 30 jobs")
    page.check("#action-toggle")
    expect(page.locator(".action-counter")).to_have_text("25 of 25 selected")
    page.get_by_role("button", name="Select all 30 jobs").click()
    expect(page.locator(".action-counter")).to_have_text("All 30 selected")
    expect(page.locator("input.select-across")).to_have_value("1")
    page.select_option("select[name=action]", "delete")
    with page.expect_navigation():
        page.click("#changelist-form button[name=index]")
    expect(page.locator("h2.djqueue-question")).to_have_text("Delete all 30 jobs?")
    shoot(page, mount, "confirm-light")
    assert DeadSet().size == 30
    with page.expect_navigation():
        page.get_by_role("button", name="Yes, I’m sure").click()
    expect(messages(page)).to_have_text(["Deleted 30 jobs."])
    expect(page.locator(".djqueue-empty")).to_have_text("No jobs here.")
    assert DeadSet().size == 0


def test_a_search_of_a_long_list_reads_it_a_part_at_a_time(
    page: Page,
    mount: Mount,
    monkeypatch: pytest.MonkeyPatch,
    browser: Browser,
    problems: Problems,
    settings: Any,
) -> None:
    monkeypatch.setattr(listing, "SEARCH_PART", 20)  # the servers run in this process
    for n in range(50):
        name = "tests.Needle" if n % 2 else "tests.Hay"
        DeadSet().kill({"class": name, "args": [n], "jid": f"{n:024x}", "queue": "q"})
    go(page, mount.url("dead") + "?q=needle")
    count = page.locator(".djqueue-count")
    expect(count).to_contain_text("10 results in entries 1–20 (50 total)")
    expect(rows(page)).to_have_count(10)
    shoot(page, mount, "search-part-light")
    with page.expect_navigation():
        page.get_by_role("link", name="Search entries 21–40").click()
    expect(count).to_contain_text("10 results in entries 21–40")
    expect(page.get_by_role("link", name="Search entries 1–20")).to_be_visible()
    expect(page.get_by_role("link", name="Search entries 41–50")).to_be_visible()
    settings.LANGUAGES = [("en", "English"), ("fa", "Persian")]
    persian = open_page(browser, mount, problems, locale="fa")
    go(persian, mount.url("dead") + "?q=needle&part=2")
    expect(persian.locator(".djqueue-count")).to_contain_text("10 نتیجه در مدخل‌های 21 تا 40")
    shoot(persian, mount, "search-part-fa")
    persian.context.close()
    page.check("#action-toggle")
    page.get_by_role("button", name="Select every matching job, in all entries").click()
    expect(page.locator(".action-counter")).to_have_text(
        "Every matching job selected, in all entries"
    )
    page.select_option("select[name=action]", "delete")
    with page.expect_navigation():
        page.click("#changelist-form button[name=index]")
    expect(page.locator("h2.djqueue-question")).to_have_text("Delete all 25 jobs?")
    with page.expect_navigation():
        page.get_by_role("button", name="Yes, I’m sure").click()
    expect(messages(page)).to_have_text(["Deleted 25 jobs."])
    assert sorted(e.display_name for e in DeadSet().jobs(0, 100)) == ["tests.Hay"] * 25
    client = djqueue.Client()
    for n in range(50):
        client.push(
            {"class": "tests.Needle" if n % 2 else "tests.Hay", "args": [n], "queue": "long"}
        )
    # Counts alone on a queue (the dead set's are kept): only the counts are a part.
    go(page, mount.url("queue", queue="long") + "?_facets=1&part=2")
    expect(count).to_have_text(
        "50 jobs · counts of entries 21–40 · Count entries 1–20 · Count entries 41–50"
    )
    expect(rows(page)).to_have_count(25)
    expect(page.locator("#changelist-filter")).to_contain_text("tests.Needle (10)")
    shoot(page, mount, "counts-part-light")


def test_clear_a_queue_quiet_a_process_disable_a_periodic_job(
    page: Page, mount: Mount, worker: Callable[..., Running], r: redis.Redis
) -> None:
    for n in range(3):
        ok.set(queue="mailers").perform_async(n)
    running = worker()
    periodic_entry(r, "cleanup.sessions")
    go(page, mount.url("queues"))
    mailers = rows(page).filter(has=page.get_by_role("link", name="mailers", exact=True))
    with page.expect_navigation():
        mailers.get_by_role("button", name="Clear").click()
    expect(page.locator("h2.djqueue-question")).to_have_text(
        "Clear queue mailers: delete all 3 of its jobs?"
    )
    assert Queue("mailers").size == 3
    with page.expect_navigation():
        page.get_by_role("button", name="Yes, I’m sure").click()
    expect(messages(page)).to_have_text(["Cleared queue mailers: deleted 3 jobs."])
    assert Queue("mailers").size == 0

    go(page, mount.url("busy"))
    process = page.locator(f'tr[data-identity="{running.identity}"]')
    with page.expect_navigation():
        process.get_by_role("button", name="Quiet").click()
    expect(messages(page)).to_have_text(["Quieted 1 process."])
    wait_for(lambda: running.launcher.manager.quiet, what="the worker quiet")
    running.stop()

    go(page, mount.url("periodic"))
    entry = page.locator('#result_list tr[data-name="cleanup.sessions"]')
    with page.expect_navigation():
        entry.get_by_role("button", name="Disable").click()
    expect(messages(page)).to_have_text(["Disabled cleanup.sessions."])
    expect(entry.locator(".djqueue-disabled")).to_have_text("disabled")


# -- live -------------------------------------------------------------------------------------


def test_dashboard_figures_follow_a_worker(
    page: Page, mount: Mount, worker: Callable[..., Running]
) -> None:
    go(page, mount.url("index") + "?poll=2")
    expect(page.locator('[data-figure="processed"]')).to_have_text("0")
    page.evaluate("window.notReloaded = true")
    running = worker()
    for n in range(5):
        ok.perform_async(n)
    expect(page.locator('[data-figure="processed"]')).to_have_text("5", timeout=15_000)
    expect(page.locator('[data-figure="processes"]')).to_have_text("1")
    assert page.evaluate("window.notReloaded") is True
    running.stop()


@pytest.mark.parametrize(
    "tab", ["retries", "queue", "scheduled", "dead", "queues", "busy", "periodic"]
)
def test_live_poll_keeps_selection_and_scroll(
    page: Page, mount: Mount, tab: str, r: redis.Redis, worker: Callable[..., Running]
) -> None:
    """Live poll on: what changes in Redis shows up without a reload; ticked rows stay ticked
    and the page stays where it was scrolled to. Pause: nothing changes any more."""
    page.set_viewport_size({"width": 1280, "height": 300})

    def add(n: int) -> str:
        """One more entry in the page's list; the text that shows it."""
        if tab in ("retries", "dead", "scheduled", "queue", "queues"):
            job = {"class": f"tests.Live{n}", "args": [n], "jid": f"{n:024x}", "queue": "q"}
            if tab == "retries":
                r.zadd("retry", {dumps({**job, "retry_count": 0}): time.time() + 900})
            elif tab == "dead":
                DeadSet().kill(job)
            elif tab == "scheduled":
                r.zadd("schedule", {dumps(job): time.time() + 900})
            else:
                r.lpush("queue:q", dumps(job))
                r.sadd("queues", "q")
            return f"tests.Live{n}" if tab != "queues" else f"q{r.llen('queue:q')}"
        if tab == "periodic":
            periodic_entry(r, f"live.{n}")
            return f"live.{n}"
        return worker().identity

    for n in range(12 if tab != "busy" else 1):
        add(n)
    routes = {"queue": ("queue", {"queue": "q"})}
    name, arguments = routes.get(tab, (tab, {}))
    go(page, mount.url(name, **arguments))
    page.evaluate("window.notReloaded = true")
    boxes = page.locator("input.action-select")
    if boxes.count():
        boxes.nth(1).check()
    page.evaluate("window.scrollTo(0, 120)")
    scrolled = page.evaluate("window.scrollY")
    assert scrolled > 0
    toggle = page.locator(".djqueue-live-toggle")
    toggle.click()
    expect(toggle).to_have_attribute("aria-pressed", "true")
    text = add(40)
    expect(page.locator("#djqueue-refresh")).to_contain_text(text, timeout=15_000)
    if boxes.count():
        checked = page.locator("input.action-select:checked")
        expect(checked).to_have_count(1)
        expect(page.locator(".action-counter")).to_contain_text("1 of")
    assert page.evaluate("window.scrollY") == scrolled
    assert page.evaluate("window.notReloaded") is True
    shoot(page, mount, f"live-{tab}")
    toggle.click()
    expect(toggle).to_have_attribute("aria-pressed", "false")


def test_a_list_fits_420_px_and_its_filters_stay_as_left_under_the_live_poll(
    page: Page, mount: Mount, r: redis.Redis, worker: Callable[..., Running]
) -> None:
    """At a phone's width the list fits (its table scrolls in its box) and the filters are
    folded; a live refresh brings fresh filters, which stay as the reader left them: the one
    tapped open stays open, the others folded."""
    fail(worker, 3)
    check_narrow_list(page, mount.url("retries"), prefix=mount.name)  # opens the first filter
    filters = page.locator("#changelist-filter details")
    assert filters.count() > 1
    toggle = page.locator(".djqueue-live-toggle")
    toggle.click()
    expect(toggle).to_have_attribute("aria-pressed", "true")
    job = {"class": "tests.Fresh", "args": [1], "jid": "f" * 24, "queue": "q", "retry_count": 0}
    r.zadd("retry", {dumps(job): time.time() + 900})
    expect(page.locator("#djqueue-refresh")).to_contain_text("tests.Fresh", timeout=15_000)
    opened = filters.evaluate_all("all => all.map(d => d.open)")
    assert opened == [True] + [False] * (len(opened) - 1), opened
    shoot(page, mount, "retries-420px-live")
    toggle.click()


# -- metrics ----------------------------------------------------------------------------------


def test_metrics_page_shows_what_a_worker_ran_and_a_hostile_name_as_text(
    page: Page, mount: Mount, worker: Callable[..., Running], r: redis.Redis
) -> None:
    """N jobs of A and M failures of B, and a job whose class is markup: the page's figures,
    its chart and histogram, a class's link to its retries, the range and the name filter."""
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    hostile = {"class": HOSTILE, "args": [], "jid": "f" * 24, "queue": "default", "retry": 1}
    r.lpush("queue:default", dumps(hostile))
    running = worker()
    for n in range(4):
        ok.perform_async(n)
    charge.perform_async("order-1")
    charge.perform_async("order-2")
    wait_for(lambda: int(r.get("stat:processed") or 0) == 7, what="all jobs counted")
    running.stop()
    go(page, mount.url("metrics"))
    figures = {
        name: [
            page.locator(f'#result_list tr[data-name="{name}"] [data-figure="{f}"]').inner_text()
            for f in ("processed", "failed", "retried", "dead", "discarded", "failure_rate")
        ]
        for name in ("browser.ok", "browser.charge", HOSTILE)
    }
    # Every failure here was retried (to the retry set), none dead or discarded.
    assert figures == {
        "browser.ok": ["4", "0", "0", "0", "0", "0.0%"],
        "browser.charge": ["2", "2", "2", "0", "0", "100.0%"],
        HOSTILE: ["1", "1", "1", "0", "0", "100.0%"],
    }
    expect(page.locator("#djqueue-metrics-chart h2")).to_contain_text("browser.ok")
    expect(page.locator("#djqueue-metrics-histogram .djqueue-bar")).to_have_count(26)
    assert page.locator("#content-main script:not([src])").count() == 0
    assert page.locator("#content-main img[src=x]").count() == 0
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        shoot(page, mount, f"metrics-{scheme}")
    page.locator('#result_list tr[data-name="browser.charge"] a.djqueue-chart-link').click()
    expect(page.locator("#djqueue-metrics-chart h2")).to_contain_text("browser.charge")
    page.get_by_role("link", name="72h").click()
    expect(page.locator("#content-main")).to_contain_text("Histograms are kept for 8 hours")
    page.locator("#searchbar").fill("OK")
    page.locator("#searchbar").press("Enter")
    expect(page.locator("#result_list tbody tr")).to_have_count(1)
    expect(page.locator('[data-name="browser.ok"] [data-figure="processed"]')).to_have_text("4")
    go(page, mount.url("metrics"))
    page.locator('#result_list tr[data-name="browser.charge"] a.djqueue-retries-link').click()
    expect(rows(page)).to_have_count(2)
    expect(page.locator("#content-main")).to_contain_text("card declined for order-2")
    assert dialogs == []


def test_metrics_page_polls_live_and_keeps_its_range_filter_and_class(
    page: Page, mount: Mount, worker: Callable[..., Running], r: redis.Redis
) -> None:
    """Live poll on the Metrics page: jobs a worker runs meanwhile show in the figures and the
    chart without a reload; the range, the name filter, the chosen class and text typed in
    the filter box (not yet sent) stay as they were."""
    running = worker()
    ok.perform_async(0)
    wait_for(lambda: int(r.get("stat:processed") or 0) == 1, what="the first job counted")
    go(page, mount.url("metrics") + "?range=3h&name=browser.ok&job=browser.ok")
    processed = page.locator('#result_list tr[data-name="browser.ok"] [data-figure="processed"]')
    expect(processed).to_have_text("1")
    page.evaluate("window.notReloaded = true")
    page.locator("#searchbar").fill("browser.o")
    toggle = page.locator(".djqueue-live-toggle")
    toggle.click()
    expect(toggle).to_have_attribute("aria-pressed", "true")
    page.locator("#searchbar").blur()  # typed, not sent: a refresh waits while it has the focus
    for n in range(1, 4):
        ok.perform_async(n)
    expect(processed).to_have_text("4", timeout=15_000)
    expect(page.locator("#djqueue-metrics-chart polyline.djqueue-chart-processed")).to_have_count(1)
    expect(page.locator(".djqueue-ranges strong")).to_have_text("3h")
    expect(page.locator("#djqueue-metrics-chart h2")).to_contain_text("browser.ok")
    expect(page.locator("#searchbar")).to_have_value("browser.o")
    expect(page.locator(".djqueue-updated")).to_contain_text("updated")
    assert page.evaluate("window.notReloaded") is True
    shoot(page, mount, "metrics-live")
    toggle.click()
    expect(toggle).to_have_attribute("aria-pressed", "false")
    running.stop()


# -- hostile data -----------------------------------------------------------------------------


def test_a_hostile_job_is_text_on_every_page(
    browser: Browser,
    mount: Mount,
    problems: Problems,
    worker: Callable[..., Running],
    r: redis.Redis,
) -> None:
    """Class, arguments, error, queue name, periodic name, process tag: all markup, all shown
    as text; a dialog opening would mean a script ran."""
    job = {
        "class": HOSTILE,
        "args": [HOSTILE, {"note": HOSTILE}],
        "jid": "e" * 24,
        "queue": HOSTILE,
        "error_class": HOSTILE,
        "error_message": HOSTILE,
        "error_backtrace": [HOSTILE],
        "retry_count": 1,
        "failed_at": time.time(),
    }
    raw = dumps(job)
    r.zadd("retry", {raw: time.time() + 900})
    r.zadd("schedule", {raw: time.time() + 900})
    DeadSet().kill(job)
    r.lpush(f"queue:{HOSTILE}", raw)
    r.sadd("queues", HOSTILE)
    running = worker(tag=HOSTILE)
    periodic_entry(r, HOSTILE, job=HOSTILE)
    dialogs: list[str] = []
    page = open_page(browser, mount, problems)
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    pages = every_page(mount, HOSTILE, HOSTILE)
    for name, url in pages.items():
        go(page, url)
        if name not in ("dashboard", "job-status", "metrics"):  # metrics: see its own test
            expect(page.locator("#content-main")).to_contain_text(HOSTILE)
        assert page.locator("#content-main script:not([src])").count() == 0
        assert page.locator("#content-main img[src=x]").count() == 0
        shoot(page, mount, f"hostile-{name}")
    running.stop()
    page.context.close()
    assert dialogs == []
    assert problems.take() == []


# -- limits -----------------------------------------------------------------------------------


def test_limits_page_shows_each_limiter_its_use_and_refusals(
    page: Page, mount: Mount, r: redis.Redis
) -> None:
    fill_limiters(r)
    go(page, mount.url("limits"))
    check_limits_page(page.content())
    used = page.locator('#result_list tr[data-name="stripe"] meter')
    assert (used.get_attribute("value"), used.get_attribute("max")) == ("3", "3")
    expect(page.locator("nav.djqueue-nav .active")).to_contain_text("Limits")
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        shoot(page, mount, f"limits-{scheme}")
    # The parked job counts beside its queue's size, and leads to the Limits page.
    page.emulate_media(color_scheme="light")
    go(page, mount.url("queues"))
    parked = page.locator('#result_list tr[data-name="default"] td a[href*="limits"]')
    expect(parked).to_have_text("1")
    shoot(page, mount, "queues-parked")


# -- batches ----------------------------------------------------------------------------------


def test_batches_pages_show_progress_failures_and_cancel(
    page: Page, mount: Mount, r: redis.Redis
) -> None:
    fill_batches(r)

    def link(path: str) -> str:
        bid, _, jid = path.partition("/job/")
        return mount.url("batch_job", bid=bid, jid=jid) if jid else mount.url("batch", bid=bid)

    go(page, mount.url("batches"))
    check_batches_page(page.content(), link)
    expect(page.locator("nav.djqueue-nav .active")).to_contain_text("Batches")
    bar = page.locator(f'#result_list tr[data-bid="{CHILD}"] svg.djqueue-progress')
    box = bar.bounding_box()
    assert box is not None and box["width"] > 100 and box["height"] >= 8
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        shoot(page, mount, f"batches-{scheme}")
    page.emulate_media(color_scheme="light")
    page.locator(f'#result_list tr[data-bid="{CHILD}"] th a').click()
    page.wait_for_url(f"**{link(CHILD)}")
    check_batch_page(page.content(), link)
    shoot(page, mount, "batch")
    page.get_by_role("button", name="Cancel batch").click()
    expect(page.locator("h2.djqueue-question")).to_contain_text("Cancel batch <b>part 1</b>?")
    page.get_by_role("button", name="Yes, I’m sure").click()
    expect(messages(page)).to_have_text(["Cancelled batch <b>part 1</b>."])
    expect(page.locator(".djqueue-batch h2 .djqueue-tag")).to_have_attribute(
        "data-status", "cancelled"
    )
    assert page.get_by_role("button", name="Cancel batch").count() == 0
    shoot(page, mount, "batch-cancelled")
