"""The book lint (``tools/book_lint.py``): each check fails on its planted defect and passes a clean page, and,
with ``FEDBOOK_BROWSER_BOOK=_build/html`` (``make test``, after the build), the built book has no problem that
the documented allow-list does not cover.
"""
from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))
import book_lint  # noqa: E402

BOOK = os.environ.get("FEDBOOK_BROWSER_BOOK")


def _page(body: str) -> str:
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>planted</title></head>"
            f"<body><main><article class='bd-article' style='width:700px'>{body}</article></main></body></html>")


CLEAN = """<h1>A clean page</h1>
<p>Inline math <span class="math notranslate nohighlight">\\(\\varepsilon\\)</span> in the text.</p>
<table><tr><th><span class="math notranslate nohighlight">\\(\\hat\\varepsilon\\)</span></th><th>ε</th></tr>
<tr><td>0.0178</td><td><code>\\frac</code></td></tr></table>
<figure class="align-default" id="fig-a"><img src="a.png" alt="a"/>
<figcaption><p><span class="caption-number">Fig. 1 </span><span class="caption-text">What it shows.</span></p>
</figcaption></figure>
<div class="cell_output"><pre>final test MSE 0.0231 ± 0.0009 (sd over 5 repeats), eps 1.2206, 12238 records</pre></div>
<p>Read from results/school.json.gz; see the issue tracker of Opacus.</p>"""

PLANTED = {
    "table-tex": "<table><tr><th>varepsilon</th><th>hvarepsilon</th></tr><tr><td>1</td><td>2</td></tr></table>",
    "caption": "<p><img src='b.png'/></p>",
    "internal": "<p>Issue 14 (item 1) found that the store CommittedStore('/work/main/results', rows=20910) ...</p>",
    "raw-float": "<div class='cell_output'><pre>{'nonprivate': 'inf', 'private': 1.2205603701012706}</pre></div>",
    "zero-spread": "<div class='cell_output'><pre>FedAvg 0.253 ± 0.000, MR-MTL 0.318 ± 0.000 over 2 seeds</pre></div>",
}


def test_clean_page_passes():
    assert book_lint.lint_html(_page(CLEAN), "clean.html").problems == []


@pytest.mark.parametrize("kind", sorted(PLANTED))
def test_each_planted_defect_is_caught(kind):
    problems = book_lint.lint_html(_page(CLEAN + PLANTED[kind]), "planted.html").problems
    assert {k for k, _ in problems} == {kind}, problems


def test_more_cases_of_each_check():
    # TeX commands left as text in a table, a figure without a caption number, a widget frame, a path
    bad = ("<table><tr><td>\\lambda^*</td></tr></table><figure><img src='c.png'/><figcaption><p>no number"
           "</p></figcaption></figure><div class='fedbook-widget'><img src='d.png'/></div>"
           "<p>written to /home/user/out.png</p>")
    kinds = [k for k, _ in book_lint.lint_html(_page(bad), "x.html").problems]
    assert kinds.count("table-tex") == 1 and kinds.count("caption") == 2 and kinds.count("internal") == 1
    assert book_lint.raw_floats("0.01778279410038923 and 0.123456789 and 1e-300 and 3.0000000001") == \
        ["0.01778279410038923", "3.0000000001"]
    assert book_lint.significant_digits("0.0177827941") == 9


def test_allow_list_names_pages_and_kinds_and_says_why(monkeypatch):
    assert set(book_lint.ALLOWED) <= {f"book/{p.stem}.html" for p in (REPO / "book").glob("*.ipynb")}
    for page, kinds in book_lint.ALLOWED.items():
        assert kinds and set(kinds) <= set(book_lint.KINDS) and all(reason for reason in kinds.values()), page
    # the list is empty today (every page passes every check): plant an entry to test how one is honoured
    monkeypatch.setitem(book_lint.ALLOWED, "book/fedhdp_theory.html", {"overflow": "planted for the test"})
    rep = book_lint.LintReport("book/fedhdp_theory.html", [("overflow", "x"), ("internal", "y")])
    assert rep.unexpected() == [("internal", "y")]


def _chromium() -> bool:
    return bool(shutil.which("chromium") or shutil.which("chromium-browser")) and bool(shutil.which("chromedriver"))


@pytest.mark.skipif(not _chromium(), reason="needs Debian's chromium and chromium-driver (tools/setup_env.sh)")
def test_overflow_of_equations_and_tables_is_caught(tmp_path):
    wide = "".join(f"<td>column {i} with some text</td>" for i in range(30))
    (tmp_path / "index.html").write_text(_page("<p>fits</p><table><tr><td>a</td><td>b</td></tr></table>"))
    (tmp_path / "wide.html").write_text(_page(
        f"<div style='overflow-x:auto;max-width:100%'><table><tr>{wide}</tr></table></div>"
        "<mjx-container display='true' style='display:block;overflow-x:auto;max-width:100%'>"
        "<span style='display:inline-block;width:1500px'>x = 1</span></mjx-container>"))
    reports = {r.page: r for r in book_lint.lint_book(tmp_path, ["index.html", "wide.html"])}
    assert reports["index.html"].problems == []
    found = [d for k, d in reports["wide.html"].problems if k == "overflow"]
    assert len(found) == 2 and found[0].startswith("equation") and found[1].startswith("table"), found
    # `make test` measures the overflow on the browser test's own 1,280 px load of each page
    # (tests/book/conftest.py): the same problems as the lint's load of its own
    import browser_check

    measured: dict[str, list[str]] = {}
    browser_check.check_book(tmp_path, ["index.html", "wide.html"],
                             at_1280=lambda drv, rep: measured.setdefault(rep.page, book_lint.overflow_here(drv)))
    shared = {r.page: r.problems for r in book_lint.lint_book(tmp_path, ["index.html", "wide.html"],
                                                               overflow=measured)}
    assert shared == {page: r.problems for page, r in reports.items()}
    with pytest.raises(ValueError, match="overflow: no measurement"):
        book_lint.lint_book(tmp_path, ["index.html", "wide.html"], overflow={"index.html": []})


@pytest.mark.skipif(not BOOK, reason="run by `make test` after the book build (FEDBOOK_BROWSER_BOOK)")
def test_built_book_has_no_problem_outside_the_allow_list(book_check):
    root = (REPO / BOOK).resolve()
    # the overflow of each page as the browser test measured it on its 1,280 px load (tests/book/conftest.py)
    reports = book_lint.lint_book(root, overflow=book_check[1])
    text = book_lint.format_reports(reports)
    (root.parent / "book_lint_report.txt").write_text(
        text + "\n\nstrict (allow-list ignored):\n" + book_lint.format_reports(reports, strict=True) + "\n",
        encoding="utf-8")
    print(text)
    bad = [f"{r.page}: [{k}] {d}" for r in reports for k, d in r.unexpected()]
    assert not bad, f"{len(bad)} problem(s):\n" + "\n".join(bad)
    # the allow-list holds no stale entry: every allowed kind still occurs on its page
    stale = [(r.page, k) for r in reports for k in book_lint.ALLOWED.get(r.page, {})
             if k not in {kk for kk, _ in r.problems}]
    assert not stale, f"allow-list entries no longer needed (remove them): {stale}"
