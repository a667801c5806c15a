"""The book's numbers (``tools/book_stats.py``) on a planted mini-site whose numbers are known by construction."""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))
import book_stats  # noqa: E402


def _page(body: str) -> str:
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>planted</title>"
            f"<script>var hidden = 'not words';</script></head>"
            f"<body><main><article class='bd-article' style='width:700px'>{body}</article></main></body></html>")


CHAPTER = """<h1>One two</h1>
<p>three four five <span class="math notranslate nohighlight">\\(\\lambda\\)</span></p>
<div class="math notranslate nohighlight">\\[ a + b = c \\]</div>
<figure id="fig-a"><img src="../_images/a.png"/><figcaption><p><span class="caption-number">Fig. 1 </span>
<span class="caption-text">six seven.</span></p></figcaption></figure>
<p><img src="../_images/b.png"/></p>
<p><strong>Exercise 1 (eight).</strong> nine ten.</p>
<details class="hide above-input"><summary>eleven</summary><pre>hidden code is not counted here</pre></details>
<p><strong>Exercise 2.</strong> twelve</p>
<p>thirteen <strong>Exercise</strong> in the middle of a sentence is not one.</p>
<div class="exercise admonition"><p>a block</p></div>
<table><tr><td>x</td></tr></table>
<style>.x { color: red }</style>"""


@pytest.fixture()
def site(tmp_path):
    (tmp_path / "_images").mkdir()
    (tmp_path / "_images" / "a.png").write_bytes(b"a" * 3000)
    (tmp_path / "_images" / "b.png").write_bytes(b"b" * 5000)
    (tmp_path / "book").mkdir()
    (tmp_path / "index.html").write_text(_page("<p>home</p>"), encoding="utf-8")
    (tmp_path / "book" / "ch.html").write_text(_page(CHAPTER), encoding="utf-8")
    wide = "".join(f"<td>column {i} with some text</td>" for i in range(30))
    (tmp_path / "book" / "wide.html").write_text(_page(
        "<p><img src='../_images/a.png'/></p>"
        f"<div style='overflow-x:auto;max-width:100%'><table><tr>{wide}</tr></table></div>"
        "<mjx-container display='true' style='display:block;overflow-x:auto;max-width:100%'>"
        "<span style='display:inline-block;width:1500px'>x = 1</span></mjx-container>"), encoding="utf-8")
    return tmp_path


def test_static_numbers_of_a_planted_chapter(site):
    stats = {s.page: s for s in book_stats.book_stats(site, browser=False)}
    ch = stats["book/ch.html"]
    # words: "One two" 2, "three four five \(\lambda\)" 4, "Fig. 1 six seven." 4, exercise 1: 5, the summary 1,
    # exercise 2: 3, the sentence 11, the block 2, the table 1 = 33; the script, style, display math and the
    # collapsed code are not counted
    assert ch.words == 33
    assert (ch.figures, ch.uncaptioned, ch.exercises, ch.equations, ch.tables) == (1, 1, 3, 1, 1)
    assert ch.eq_wide is None and ch.tab_wide is None
    html = (site / "book" / "ch.html").stat().st_size
    assert ch.kb == pytest.approx((html + 8000) / 1000)
    total = book_stats.totals(list(stats.values()), site)
    pages = sum((site / p).stat().st_size for p in stats)
    assert total.kb == pytest.approx((pages + 8000) / 1000)  # a.png is on two pages and counted once
    assert total.exercises == 3 and total.uncaptioned == 2 and total.eq_wide is None
    text = book_stats.format_stats(list(stats.values()), total)
    assert text.splitlines()[-1].split()[:6] == ["total", f"{total.words:,}", "1", "2", "3", "1"]


def _chromium() -> bool:
    return bool(shutil.which("chromium") or shutil.which("chromium-browser")) and bool(shutil.which("chromedriver"))


@pytest.mark.skipif(not _chromium(), reason="needs Debian's chromium and chromium-driver (tools/setup_env.sh)")
def test_overflow_counts_come_from_the_lints_browser_check(site):
    stats = {s.page: s for s in book_stats.book_stats(site, ["book/ch.html", "book/wide.html"])}
    assert (stats["book/wide.html"].eq_wide, stats["book/wide.html"].tab_wide) == (1, 1)
    assert (stats["book/ch.html"].eq_wide, stats["book/ch.html"].tab_wide) == (0, 0)
    assert stats["book/wide.html"].equations == 1  # display math as the browser sees it
