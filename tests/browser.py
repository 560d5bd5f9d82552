"""What the browser tests (the admin's, the Flask dashboard's) need around Playwright:
Debian's Chromium (never a browser Playwright downloads), logging in through the admin's form,
screenshots, and a record of what went wrong in the page (script errors, failed requests) that
the tests assert is empty."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

try:
    from playwright.sync_api import expect, sync_playwright
except ImportError:  # the tests skip (fail in CI) with MISSING_PLAYWRIGHT
    expect = sync_playwright = None  # type: ignore[assignment]

if TYPE_CHECKING:
    from playwright.sync_api import Browser, ConsoleMessage, Page, Playwright, Response

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
MISSING_CHROMIUM = (
    f"Chromium not found at {CHROMIUM}: install it (Debian/Ubuntu: apt-get install chromium "
    "chromium-driver) so the browser tests can drive it; Playwright's own browsers "
    "are not used"
)
MISSING_PLAYWRIGHT = (
    "playwright (Python) not installed: pip install -e '.[dev]', and apt-get install chromium "
    "chromium-driver for the browser it drives (never `playwright install`)"
)
#: Where every test's screenshots go (git-ignored), and the one the docs show.
SCREENSHOTS = ROOT / "tests" / "screenshots"
DOCS_SCREENSHOT = ROOT / "docs" / "images" / "admin-dashboard.png"
#: Set to 1 to rewrite DOCS_SCREENSHOT; CI never sets it, so the tree stays as checked out.
UPDATE_DOCS = "DJQUEUE_UPDATE_DOCS_SCREENSHOTS"
VIEWPORT = {"width": 1280, "height": 800}
FAVICON = "/favicon.ico"


def require_browser() -> None:
    """Skip (fail in CI) when Playwright or Chromium is missing, as conftest does for Redis."""
    missing = None
    if sync_playwright is None:
        missing = MISSING_PLAYWRIGHT
    elif not (os.path.exists(CHROMIUM) and os.access(CHROMIUM, os.X_OK)):
        missing = MISSING_CHROMIUM
    if missing:
        if os.environ.get("CI"):
            pytest.fail(missing)
        pytest.skip(missing)


def launch(playwright: Playwright) -> Browser:
    return playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """One Chromium for a module; each test opens its own context (cookies, session)."""
    require_browser()
    with sync_playwright() as playwright:
        found = launch(playwright)
        yield found
        found.close()


@pytest.fixture
def problems() -> Problems:
    return Problems()


@dataclass
class Problems:
    """What went wrong in a page while a test drove it: uncaught script errors, console
    errors and responses of 400 or more (a missing stylesheet or script shows up here)."""

    found: list[str] = field(default_factory=list)

    def watch(self, page: Page) -> None:
        page.on("pageerror", lambda error: self.found.append(f"script error: {error}"))
        page.on("console", self._console)
        page.on("response", self._response)

    def _console(self, message: ConsoleMessage) -> None:
        # The browser asks for /favicon.ico on its own; the test site has none.
        if message.type == "error" and not message.location.get("url", "").endswith(FAVICON):
            self.found.append(f"console error: {message.text} ({message.location})")

    def _response(self, response: Response) -> None:
        if response.status >= 400 and not response.url.endswith(FAVICON):
            self.found.append(
                f"HTTP {response.status} for {response.request.method} {response.url}"
            )

    def take(self) -> list[str]:
        found, self.found = self.found, []
        return found


def log_in(page: Page, username: str, password: str) -> None:
    """Through the admin's own login form, as a person would."""
    page.goto("/admin/login/?next=/admin/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("#login-form [type=submit]")
    page.wait_for_url("**/admin/")


def screenshot(page: Page, name: str, prefix: str = "admin", **options: Any) -> Path:
    """The whole page as ``tests/screenshots/PREFIX-NAME.png``."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{prefix}-{name}.png"
    page.screenshot(path=str(path), full_page=True, animations="disabled", **options)
    return path


def update_docs_screenshot(path: Path) -> bool:
    """Copy a screenshot to the docs, only when DJQUEUE_UPDATE_DOCS_SCREENSHOTS=1."""
    if os.environ.get(UPDATE_DOCS) != "1":
        return False
    DOCS_SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(path, DOCS_SCREENSHOT)
    return True


__all__ = [
    "Problems",
    "browser",
    "expect",
    "launch",
    "log_in",
    "problems",
    "require_browser",
    "screenshot",
    "sync_playwright",
    "update_docs_screenshot",
]


#: The width a phone held upright gives a page (CSS pixels), which the list pages must fit.
NARROW = {"width": 420, "height": 900}


def check_narrow_list(page: Page, path: str, prefix: str) -> Path:
    """The list page at ``path`` at 420 px wide: the page itself does not scroll sideways, the
    table scrolls inside its box, and the filters are folded (one tap opens one)."""
    page.set_viewport_size(NARROW)
    page.goto(path)
    shot = screenshot(page, "retries-420px", prefix=prefix)
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= NARROW["width"], f"the page is {width} px wide"
    table = page.locator("#result_list")
    assert table.evaluate("e => e.scrollWidth > e.clientWidth"), "the table does not scroll"
    filters = page.locator("#changelist-filter details")
    assert filters.count() > 0
    assert filters.evaluate_all("all => all.every(d => !d.open)"), "the filters are not folded"
    filters.first.locator("summary").click()
    assert filters.first.evaluate("d => d.open")
    return shot
