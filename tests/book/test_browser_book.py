"""The browser test of the built book: every page opened in headless Chromium (``tools/browser_check.py``).

``make test`` builds the book once and then runs this file with ``FEDBOOK_BROWSER_BOOK=_build/html``
(``make browser`` runs it on an existing build).  Without that variable the book is not built here:
a plain ``pytest tests`` skips this file instead of spending minutes on a build.  The full report is
written to ``<book>/../browser_report.txt``.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))
import browser_check  # noqa: E402

BOOK = os.environ.get("FEDBOOK_BROWSER_BOOK")
pytestmark = pytest.mark.skipif(not BOOK, reason="run by `make test` after the book build (FEDBOOK_BROWSER_BOOK)")


@pytest.fixture(scope="module")
def reports():
    root = (REPO / BOOK).resolve()
    found = browser_check.check_book(root)
    text = browser_check.format_reports(found)
    (root.parent / "browser_report.txt").write_text(text + "\n", encoding="utf-8")
    print(text)
    return found


def test_every_chapter_was_opened(reports):
    pages = {r.page for r in reports}
    chapters = {p.stem for p in (REPO / "book").glob("*.ipynb")}
    assert {f"book/{c}.html" for c in chapters} <= pages


def test_every_widget_is_there_and_redraws(reports):
    # 8 widgets in 5 chapters; each one's controls were moved by the checker
    per_page = {r.page: r.widgets for r in reports if r.widgets}
    assert per_page == {"book/fedhdp_theory.html": 3, "book/mean_estimation.html": 2,
                        "book/privacy_primer.html": 1, "book/secagg.html": 1, "book/tuning_cost.html": 1}
    problems = [(r.page, d) for r in reports for kind, d in r.problems if kind == "widget"]
    assert problems == []


def test_every_live_widget_computes_fedtheorys_numbers(reports):
    # the closed-form widgets are live: at random slider positions the page's numbers equal fedtheory's
    # (1e-9 relative), each slider changes the plotted data, a typed value is used as typed
    live = {r.page: r.live for r in reports if r.live}
    assert live == {"book/fedhdp_theory.html": 3, "book/mean_estimation.html": 2}
    for r in reports:
        assert r.live_compared == r.live * (browser_check.LIVE_TRIALS + 1), r.page
    problems = [f"{r.page}: {d}" for r in reports for kind, d in r.problems if kind == "live"]
    assert not problems, f"{len(problems)} live problem(s):\n" + "\n".join(problems)


#: HTML bytes of the widget chapters when every widget inlined its pre-drawn frames (the book built
#: before the live widgets, from otherwise the same sources): the pages must stay within half of it
HTML_BYTES_WITH_INLINE_FRAMES = {"mean_estimation": 1_774_372, "fedhdp_theory": 1_790_809, "privacy_primer": 683_124,
                                 "tuning_cost": 652_403, "secagg": 1_065_822}


@pytest.mark.parametrize("chapter", sorted(HTML_BYTES_WITH_INLINE_FRAMES))
def test_widget_chapters_weigh_at_most_half_of_inline_frames(reports, chapter):
    # live widgets carry formulas, not frames; frame widgets' frames are files fetched when selected
    size = (REPO / BOOK / "book" / f"{chapter}.html").stat().st_size
    assert size <= HTML_BYTES_WITH_INLINE_FRAMES[chapter] / 2, f"{chapter}.html: {size:,} bytes"


@pytest.mark.parametrize("kind", ["console", "math", "raw-tex", "image", "table"])
def test_no_page_has_problems_of_kind(reports, kind):
    problems = [f"{r.page}: {d}" for r in reports for k, d in r.problems if k == kind]
    assert not problems, f"{len(problems)} {kind} problem(s):\n" + "\n".join(problems)


def _search_hits(driver, base: str, query: str) -> list[str]:
    """The pages ``search.html?q=query`` lists once the search has finished (Sphinx's own searchtools.js)."""
    import time

    driver.get(f"{base}search.html?q={query}")
    deadline = time.time() + 30
    while time.time() < deadline:
        done = driver.execute_script(
            "const s = document.getElementById('search-progress');"
            "return !!(s && s.textContent && !/Preparing|Searching/.test(s.textContent));")
        if done:
            break
        time.sleep(0.2)
    return driver.execute_script(
        "return Array.from(document.querySelectorAll('#search-results ul.search li a'))"
        ".map(a => a.getAttribute('href'));")


def test_search_finds_accented_words_typed_without_accents():
    """ "Renyi" finds the pages that write "Rényi" (book/_static/fedbook_search.js folds the index)."""
    root = (REPO / BOOK).resolve()
    server, base = browser_check.serve(root)
    driver = browser_check.start_browser()
    try:
        accented = _search_hits(driver, base, "R%C3%A9nyi")
        plain = _search_hits(driver, base, "Renyi")
    finally:
        driver.quit()
        server.shutdown()
    assert any("privacy_primer" in h for h in accented), accented
    assert set(plain) >= set(accented) and plain, (plain, accented)
