"""The browser test of the built book: every page opened in headless Chromium (``tools/browser_check.py``).

``make test`` builds the book once and then runs this file with ``FEDBOOK_BROWSER_BOOK=_build/html``
(``make browser`` runs it on an existing build).  Without that variable the book is not built here:
a plain ``pytest tests`` skips this file instead of spending minutes on a build.  The full report is
written to ``<book>/../browser_report.txt``.
"""
from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))
import browser_check  # noqa: E402

BOOK = os.environ.get("FEDBOOK_BROWSER_BOOK")
pytestmark = pytest.mark.skipif(not BOOK, reason="run by `make test` after the book build (FEDBOOK_BROWSER_BOOK)")


@pytest.fixture(scope="module")
def reports(book_check):
    root = (REPO / BOOK).resolve()
    found = book_check[0]  # (tests/book/conftest.py: one browser, each page loaded once per width)
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


@pytest.mark.parametrize("kind", ["console", "math", "raw-tex", "image", "table", "aspect", "page-width", "alt",
                                  "dark", "markup"])
def test_no_page_has_problems_of_kind(reports, kind):
    problems = [f"{r.page}: {d}" for r in reports for k, d in r.problems if k == kind]
    assert not problems, f"{len(problems)} {kind} problem(s):\n" + "\n".join(problems)


def test_every_image_keeps_its_shape_at_both_widths(reports):
    # at 1,280 px and at a 390 px phone every image's drawn aspect is its natural one (within 2 %), and the
    # chapters' figures were measured at both widths
    for width in browser_check.LAYOUT_WIDTHS:
        measured = sum(r.layout.get(width, {}).get("images", 0) for r in reports)
        kept = sum(r.layout.get(width, {}).get("in_aspect", 0) for r in reports)
        worst = min((r.layout[width]["worst"] for r in reports if r.layout.get(width, {}).get("images")),
                    key=lambda v: -abs(v - 1))
        print(f"{width} px: {kept} of {measured} images in aspect (worst ratio {worst:.3f})")
        assert measured >= 32 and kept == measured, (width, kept, measured)


def test_no_page_is_wider_than_a_phone(reports):
    widths = sorted(((r.layout.get(390, {}).get("page_width", 0), r.page) for r in reports), reverse=True)
    print("widest pages at 390 px:", widths[:5])
    assert all(r.layout.get(390) for r in reports)
    assert widths[0][0] <= 390, widths[:5]


def test_every_page_shows_the_version_and_build_date(reports):
    import tomllib

    version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    pattern = re.compile(rf"fedbook {re.escape(version)}, built \d{{4}}-\d{{2}}-\d{{2}}")
    missing = [r.page for r in reports if r.page.startswith("book/") and not pattern.search(r.footer)]
    assert not missing, missing


def _search_hits(driver, base: str, query: str) -> list[str]:
    """The pages ``search.html?q=query`` lists once the search has finished (Sphinx's own searchtools.js writes
    its summary line, "Search finished, found N page(s)..." or "did not match", after the last hit is listed).

    (The theme's ``#search-progress`` is emptied when the search starts, so it never says when it ends.)"""
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get(f"{base}search.html?q={query}")
    WebDriverWait(driver, 30, poll_frequency=0.05).until(lambda d: d.execute_script(
        "const s = document.querySelector('#search-results p.search-summary');"
        "return !!(s && s.textContent.trim());"), message=f"the search for {query!r} did not finish in 30 s")
    hits = driver.execute_script(
        "return Array.from(document.querySelectorAll('#search-results ul.search li a'))"
        ".map(a => a.getAttribute('href'));")
    summary = driver.execute_script("return document.querySelector('#search-results p.search-summary').textContent;")
    found = re.search(r"found (\d+) page", summary)
    assert (int(found.group(1)) if found else 0) == len(hits), (query, summary, len(hits))  # every hit is listed
    return hits


def test_search_finds_accented_words_typed_without_accents(book_browser):
    """ "Renyi" finds the pages that write "Rényi" (book/_static/fedbook_search.js folds the index)."""
    _, base, driver = book_browser
    accented = _search_hits(driver, base, "R%C3%A9nyi")
    plain = _search_hits(driver, base, "Renyi")
    assert any("privacy_primer" in h for h in accented), accented
    assert set(plain) >= set(accented) and plain, (plain, accented)


#: words the chapters teach (a chapter must be the first hit)
TAUGHT = ("lambda", "epsilon", "crossover")


def _search_snippets(driver) -> list[list[str]]:
    """(page, snippet) of each hit shown with a snippet (at least 5 of them, or what is there after 20 s)."""
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.support.ui import WebDriverWait

    texts: list[str] = []

    def shown(d) -> bool:  # summaries are fetched page by page after the list appears
        texts[:] = d.execute_script(
            "return Array.from(document.querySelectorAll('#search-results li')).filter(li => li.querySelector("
            "'p.context')).map(li => [li.querySelector('a').getAttribute('href'), li.querySelector('p.context')"
            ".textContent]);")
        return len(texts) >= 5

    try:
        WebDriverWait(driver, 20, poll_frequency=0.05).until(shown)
    except TimeoutException:
        pass
    return texts


def test_search_ranks_chapters_first_and_shows_no_tex(book_browser):
    """For words the chapters teach, a chapter is the first hit and every API page comes after every other
    page (book/_static/fedbook_search.js); the snippets under the hits show no TeX source."""
    _, base, driver = book_browser
    chapters = {f"book/{p.stem}.html" for p in (REPO / "book").glob("*.ipynb")}
    ranks, snippets = {}, {}
    for query in TAUGHT:
        hits = [h.split("#")[0].split("?")[0] for h in _search_hits(driver, base, query)]
        snippets[query] = _search_snippets(driver)
        first_chapter = next(i for i, h in enumerate(hits) if h in chapters)
        api = [i for i, h in enumerate(hits) if "/api_" in h]
        other = [i for i, h in enumerate(hits) if "/api_" not in h]
        ranks[query] = (hits[0], first_chapter + 1, (api[0] + 1) if api else None,
                        (other[-1] + 1) if other else None, len(hits))
    print("search: query -> (first hit, rank of the first chapter, of the first API page, of the last other page, "
          "hits):", ranks)
    for query, (first, rank, api_rank, last_other, n) in ranks.items():
        assert rank == 1, (query, ranks[query])
        assert api_rank is None or last_other is None or api_rank > last_other, (query, ranks[query])
    tex = re.compile(r"\\[A-Za-z]+|\\\(|\\\[|\$")
    for query, texts in snippets.items():
        # (the API pages document TeX helpers: their code, e.g. ``\\quad``, is not math)
        texts = [t for page, t in texts if "/api_" not in page]
        assert texts, query
        bad = [t for t in texts if tex.search(t)]
        assert not bad, (query, bad[:2])
