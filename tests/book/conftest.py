"""The built book in one browser: with ``FEDBOOK_BROWSER_BOOK`` (``make test`` after the build), the browser test
(``test_browser_book.py``) and the book lint (``test_book_lint.py``) share one local HTTP server and one headless
Chromium for the whole session, and each page is loaded once per width (1,280 px and 390 px): the lint's
``overflow`` check is measured on the browser test's 1,280 px load of the page instead of a load of its own.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))
import book_lint  # noqa: E402
import browser_check  # noqa: E402

BOOK = os.environ.get("FEDBOOK_BROWSER_BOOK")


@pytest.fixture(scope="session")
def book_browser():
    """(root of the built book, base URL that serves it, a headless Chromium), for the whole session."""
    if not BOOK:
        pytest.skip("run by `make test` after the book build (FEDBOOK_BROWSER_BOOK)")
    root = (REPO / BOOK).resolve()
    server, base = browser_check.serve(root)
    driver = browser_check.start_browser()
    try:
        yield root, base, driver
    finally:
        driver.quit()
        server.shutdown()


@pytest.fixture(scope="session")
def book_check(book_browser):
    """The browser check of every page of the built book, and the lint's ``overflow`` measured on the same
    1,280 px loads: (reports, {page: overflow problems})."""
    root, base, driver = book_browser
    overflow: dict[str, list[str]] = {}

    def measure_overflow(drv, report):
        overflow[report.page] = book_lint.overflow_here(drv)

    reports = browser_check.check_book(root, driver=driver, base=base, at_1280=measure_overflow)
    return reports, overflow
