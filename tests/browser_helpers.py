"""Pages opened in a real browser: headless Chromium driven by Playwright.

`open_page(path)` (a fixture, from tests/conftest.py) loads a page the project wrote and returns
the Playwright `Page`; it fails the test on any script error the page raises, and when the
test fails a screenshot of the page is kept beside the test's temporary folder (pytest keeps
failed tests' folders).  Where Chromium or Playwright is missing the test is skipped with a
message saying what to install, unless `QWENGPU_REQUIRE_BROWSER=1` (set by `.ci/run`, which
installs both) turns the skip into a failure, so CI never passes a browser test unrun.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update",
                  "--disable-sync", "--disable-dev-shm-usage"]
INSTALL_HINT = ("install Debian's chromium (`apt-get install chromium`) and Playwright (`pip "
                "install playwright`), as .ci/run does")


def chromium_path() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


def skip_without_browser(why: str) -> None:
    message = f"no browser for the page tests ({why}): {INSTALL_HINT}"
    if os.environ.get("QWENGPU_REQUIRE_BROWSER") == "1":
        pytest.fail(message)
    pytest.skip(message)


class PageErrors(list):
    """The script errors and console errors a page raised, as text."""


def launch_browser(playwright):
    executable = chromium_path()
    if executable is None:
        skip_without_browser("Chromium is not installed")
    return playwright.chromium.launch(executable_path=executable, args=CHROMIUM_FLAGS)


def page_opener(request, browser, tmp_path: Path):
    """A function that opens a file in a new page; registers the checks made at the end."""
    pages = []

    def open_page(path, width: int = 1400, height: int = 900):
        page = browser.new_page(viewport={"width": width, "height": height})
        errors = PageErrors()
        page.on("pageerror", lambda error: errors.append(f"page error: {error}"))
        page.on("console", lambda message: message.type == "error" and
                errors.append(f"console error: {message.text}"))
        page.script_errors = errors
        page.goto(Path(path).resolve().as_uri())
        pages.append(page)
        return page

    yield open_page
    report = getattr(request.node, "report_call", None)
    for index, page in enumerate(pages):
        if report is not None and report.failed:
            page.screenshot(path=str(tmp_path / f"failed-page-{index}.png"), full_page=True)
        errors = list(page.script_errors)
        page.close()
        assert not errors, errors
