"""The numbers of a built HTML book, per page and in total: how much a reader reads, sees and downloads.

Usage: ``python tools/book_stats.py [_build/html] [--page PATH ...] [--no-browser] [--json FILE]``.

Per page (the pages :func:`book_lint.pages_of` lints: chapters and reference pages, not Sphinx's generated ones):

``words``        words of the visible text of the article: collapsed blocks (``<details>``: hidden code, an
                 exercise's solution) count only their summary line; scripts, styles and display math do not
                 count; inline math counts as the words of its TeX source;
``figures``      numbered figures with a caption (``<figure>`` with a caption number and text);
``uncaptioned``  images that are not such a figure: :func:`book_lint.lint_html`'s ``caption`` problems;
``exercises``    exercises in the book's pattern (a paragraph that opens with a bold "Exercise", as the chapters
                 write ``**Exercise 1 (...).**``) plus sphinx-exercise / ``prf:exercise`` blocks;
``equations``    display equations (with the browser: as MathJax typeset them, cell outputs included; without it:
                 the ``div.math`` blocks of the text); ``tables``: tables;
``eq wide``, ``tab wide``  display equations and tables wider than their box at a 1,280 px window (the
                 ``overflow`` check of ``tools/book_lint.py``, run in headless Chromium; ``-`` without the browser);
``KB``           page weight: the HTML file plus every local image it references (each file once per page),
                 in kilobytes (1,000 bytes).

The total line sums the pages; its ``KB`` counts an image shared by several pages once.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent))
import book_lint  # noqa: E402

_EXERCISE = re.compile(r"^\s*Exercise\b")
_DISPLAY_MATH = ("const a = document.querySelector('article.bd-article') || document.querySelector('main') || document.body;"
                 "return a.querySelectorAll('mjx-container[display=\"true\"]:not(mjx-assistive-mml mjx-container)').length;")
COLUMNS = ("words", "figures", "uncaptioned", "exercises", "equations", "eq_wide", "tables", "tab_wide", "kb")
HEADERS = ("words", "figures", "uncaptioned", "exercises", "equations", "eq wide", "tables", "tab wide", "KB")


@dataclass
class PageStats:
    page: str
    words: int = 0
    figures: int = 0
    uncaptioned: int = 0
    exercises: int = 0
    equations: int = 0
    eq_wide: int | None = None   # None: not measured (no browser)
    tables: int = 0
    tab_wide: int | None = None
    kb: float = 0.0
    images: tuple[str, ...] = ()  # the local image files the page references (paths relative to the book root)


def visible_words(article) -> int:
    """Words of ``article``'s text a reader sees without opening anything (see the module docstring)."""
    import copy

    art = copy.copy(article)
    for el in art.select("script, style, div.math, mjx-container[display='true']"):
        el.decompose()
    for det in art.find_all("details"):
        if det.has_attr("open"):
            continue
        summary = det.find("summary")
        keep = summary.get_text(" ", strip=True) if summary is not None else ""
        det.clear()
        det.append(keep)
    return len(art.get_text(" ", strip=True).split())


def count_exercises(article) -> int:
    """Exercises in the book's pattern (a paragraph opening with a bold "Exercise ...") plus exercise blocks."""
    bold = sum(1 for p in article.find_all("p")
               if (first := p.find(["strong", "b"])) is not None and _EXERCISE.match(first.get_text())
               and p.get_text().lstrip().startswith(first.get_text().lstrip()))
    blocks = len(article.select("div.exercise, div.prf-exercise, div.proof.exercise"))
    return bold + blocks


def numbered_figures(article) -> int:
    """Figures with a caption number and caption text (what ``book_lint``'s ``caption`` check accepts)."""
    n = 0
    for fig in article.find_all("figure"):
        cap = fig.find("figcaption")
        number = cap.select_one(".caption-number") if cap is not None else None
        if number is not None and len(cap.get_text(" ", strip=True)) > len(number.get_text(strip=True)) + 3:
            n += 1
    return n


def local_images(article, page: Path, root: Path) -> list[Path]:
    """The image files under ``root`` that the page's ``<img>`` elements load (data URIs and remote ones excluded)."""
    found: list[Path] = []
    for img in article.find_all("img"):
        src = str(img.get("src", ""))
        if not src or src.startswith("data:") or urlsplit(src).scheme:
            continue
        path = (page.parent / unquote(urlsplit(src).path)).resolve()
        if path.is_file() and root.resolve() in path.parents and path not in found:
            found.append(path)
    return found


def page_stats(path: Path, root: Path) -> PageStats:
    """The static numbers (all but the two ``wide`` counts) of the page at ``path``."""
    from bs4 import BeautifulSoup

    html = path.read_text(encoding="utf-8")
    name = path.relative_to(root).as_posix()
    art = book_lint._article(BeautifulSoup(html, "html.parser"))
    images = local_images(art, path, root)
    return PageStats(
        page=name, words=visible_words(art), figures=numbered_figures(art),
        uncaptioned=sum(1 for k, _ in book_lint.lint_html(html, name).problems if k == "caption"),
        exercises=count_exercises(art), equations=len(art.select("div.math")), tables=len(art.find_all("table")),
        kb=(path.stat().st_size + sum(p.stat().st_size for p in images)) / 1000,
        images=tuple(p.relative_to(root.resolve()).as_posix() for p in images))


def book_stats(root: Path | str, pages: list[str] | None = None, *, browser: bool = True) -> list[PageStats]:
    """:class:`PageStats` of every page under ``root`` (or of the given relative ``pages``)."""
    root = Path(root)
    if not (root / "index.html").exists() and not pages:
        raise FileNotFoundError(f"no built book at {root} (index.html missing); build it with `make book`")
    paths = [root / p for p in pages] if pages else book_lint.pages_of(root)
    stats = [page_stats(p, root) for p in paths]
    if browser:
        import browser_check

        server, base = browser_check.serve(root)
        driver = browser_check.start_browser()
        try:
            for p, s in zip(paths, stats):
                wide = book_lint.overflow_problems(driver, base + p.relative_to(root).as_posix())
                s.eq_wide = sum(d.startswith("equation") for d in wide)
                s.tab_wide = sum(d.startswith("table") for d in wide)
                s.equations = int(driver.execute_script(_DISPLAY_MATH))  # the page overflow_problems loaded
        finally:
            driver.quit()
            server.shutdown()
    return stats


def totals(stats: list[PageStats], root: Path | str) -> PageStats:
    """The sums over the pages; ``kb`` counts each image once, however many pages show it."""
    root = Path(root).resolve()
    t = PageStats("total")
    for c in COLUMNS[:-1]:
        values = [getattr(s, c) for s in stats]
        setattr(t, c, None if any(v is None for v in values) else sum(values))
    images = {i for s in stats for i in s.images}
    html = sum((root / s.page).stat().st_size for s in stats)
    t.kb = (html + sum((root / i).stat().st_size for i in images)) / 1000
    return t


def format_stats(stats: list[PageStats], total: PageStats) -> str:
    width = max(len(s.page) for s in stats + [total])
    cell = lambda v: "-" if v is None else f"{v:,.0f}"  # noqa: E731
    lines = [f"{'page':<{width}}  " + "  ".join(f"{h:>9}" for h in HEADERS)]
    for s in stats + [total]:
        if s is total:
            lines.append("-" * len(lines[0]))
        lines.append(f"{s.page:<{width}}  " + "  ".join(f"{cell(getattr(s, c)):>9}" for c in COLUMNS))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", nargs="?", default="_build/html")
    parser.add_argument("--page", action="append", help="a page relative to root (repeatable)")
    parser.add_argument("--no-browser", action="store_true", help="skip the overflow counts (no Chromium)")
    parser.add_argument("--json", help="also write the numbers to this JSON file")
    args = parser.parse_args(argv)
    stats = book_stats(args.root, args.page, browser=not args.no_browser)
    total = totals(stats, args.root)
    print(format_stats(stats, total))
    if args.json:
        Path(args.json).write_text(json.dumps([asdict(s) for s in stats + [total]], indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
