"""The browser harness itself: a page loads, a click runs its script, and a script error
fails the check (tests/browser_helpers.py)."""

from __future__ import annotations

import pytest


def test_a_page_runs_its_script(open_page, tmp_path):
    page_file = tmp_path / "page.html"
    page_file.write_text("<!doctype html><button id=b onclick=\"document.title='clicked'\">x"
                         "</button>")
    page = open_page(page_file)
    page.click("#b")
    assert page.title() == "clicked"


def test_a_script_error_is_caught(browser, tmp_path):
    page_file = tmp_path / "broken.html"
    page_file.write_text("<!doctype html><script>undefinedFunction()</script>")
    page = browser.new_page()
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(page_file.as_uri())
    page.wait_for_timeout(100)
    page.close()
    assert errors and "undefinedFunction" in errors[0]
