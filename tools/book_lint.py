"""Lint the built HTML book for the defects a reader of a textbook should never meet.

Usage: ``python tools/book_lint.py [_build/html] [--page PATH ...] [--no-browser] [--strict]``; exit status 1
when a page has a problem that the allow-list does not cover.  ``tests/book/test_book_lint.py`` runs it on planted
pages (each check must fail on its defect) and, with ``FEDBOOK_BROWSER_BOOK=_build/html``, on the built book
(``make test``, after the build).

Checks per page (``KINDS``):

``table-tex``   TeX left unrendered in a table: a backslash command, a ``$``, or a bare TeX name such as
                ``varepsilon`` (what a double-escaped header renders as), outside math and code;
``caption``     an image in the text that is not a numbered figure with a caption (``<figure>`` with a
                ``<figcaption>`` holding a caption number and text);
``overflow``    display math or a table whose content is wider than its box at a 1,280 px window, so part of it
                is cut off or hidden behind a horizontal scroll bar (headless Chromium, after MathJax);
``internal``    an absolute machine path (``/work/...``, ``/home/...``) or project-internal wording (``issue 14``)
                in the page's text;
``raw-float``   a cell output that prints a float with 10 or more significant digits (a raw ``repr``), e.g.
                ``0.01778279410038923``;
``zero-spread`` a spread printed as zero (``± 0.000``): too few repeats, or too few digits, to show it.

All but ``overflow`` are read from the HTML with BeautifulSoup; only ``overflow`` needs the browser.

:data:`ALLOWED` is the explicit allow-list: for each page, the kinds of problem it may still have, with the
reason.  It names only the kinds a page still fails on, with what fixing them needs; every other page must be
clean.  Shrink it as chapters are fixed: ``--strict`` ignores
it and shows everything that is left.
"""
from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

KINDS = ("table-tex", "caption", "overflow", "internal", "raw-float", "zero-spread")

SKIP_DIRS = {"_static", "_sources", "_images", "_vendor", "_sphinx_design_static", ".doctrees", "jupyter_execute"}
# Sphinx's generated pages (search, index) and the API pages' highlighted module sources
SKIP_PAGES = {"search.html", "genindex.html", "py-modindex.html"}

#: page -> {kind: reason}: problems a page may still have, each with what it would take to fix it.
ALLOWED: dict[str, dict[str, str]] = {}

_TEX_NAMES_ONLY = re.compile(r"\\[A-Za-z]+|\$|(?<![A-Za-z])(?:h?varepsilon|mathrm|mathcal|mathbb|frac|sqrt|cdot"
                             r"|ldots|infty|operatorname)(?![A-Za-z])")
_ABS_PATH = re.compile(r"(?<![\w.~/-])/(?:work|home|root|tmp|Users|mnt|srv|opt|var/folders)/[\w.@+-]+")
_ISSUE = re.compile(r"\b[Ii]ssue\s*#?\s*\d+")
# a decimal with a fraction part; significant digits are counted without leading zeros and the exponent
_FLOAT = re.compile(r"(?<![\w.])[-+]?(\d+\.\d+|\.\d+)(?:[eE][-+]?\d+)?(?![\w.])")
RAW_FLOAT_DIGITS = 10
_ZERO_SPREAD = re.compile(r"±\s*0(?:\.0+)?(?![\d.])")


@dataclass
class LintReport:
    page: str
    problems: list[tuple[str, str]] = field(default_factory=list)

    def add(self, kind: str, detail: str) -> None:
        self.problems.append((kind, detail))

    def unexpected(self, allowed: dict[str, dict[str, str]] | None = None) -> list[tuple[str, str]]:
        """The problems the allow-list does not cover."""
        ok = (ALLOWED if allowed is None else allowed).get(self.page, {})
        return [(k, d) for k, d in self.problems if k not in ok]


def significant_digits(number: str) -> int:
    """Significant digits of a decimal literal: ``'0.0177827941'`` has 9, ``'1.2205603701012706'`` 17."""
    mantissa = re.split(r"[eE]", number.lstrip("+-"))[0].replace(".", "")
    return len(mantissa.lstrip("0"))


def raw_floats(text: str) -> list[str]:
    """The decimals in ``text`` with at least :data:`RAW_FLOAT_DIGITS` significant digits."""
    return [m.group(0) for m in _FLOAT.finditer(text) if significant_digits(m.group(0)) >= RAW_FLOAT_DIGITS]


def _article(soup):
    return soup.select_one("article.bd-article") or soup.select_one("main") or soup.body or soup


def _text_without(el, selectors: str) -> str:
    import copy

    el = copy.copy(el)
    for bad in el.select(selectors):
        bad.decompose()
    return el.get_text(" ", strip=True)


def lint_html(html: str, page: str) -> LintReport:
    """The static checks (everything except ``overflow``) of one page's HTML."""
    from bs4 import BeautifulSoup

    report = LintReport(page)
    soup = BeautifulSoup(html, "html.parser")
    art = _article(soup)
    for t in art.find_all("table"):
        text = _text_without(t, ".math, span.math, div.math, mjx-container, code, pre, script, style")
        m = _TEX_NAMES_ONLY.search(text)
        if m:
            i = m.start()
            report.add("table-tex", f"unrendered TeX {m.group(0)!r} in a table: {text[max(0, i - 40):i + 40]!r}")
    for img in art.find_all("img"):
        fig = img.find_parent("figure")
        cap = fig.find("figcaption") if fig is not None else None
        number = cap.select_one(".caption-number") if cap is not None else None
        text = cap.get_text(" ", strip=True) if cap is not None else ""
        if fig is None or cap is None or number is None or len(text) <= len(number.get_text(strip=True)) + 3:
            where = img.find_parent(class_="fedbook-widget")
            what = "widget frame" if where is not None else "image"
            report.add("caption", f"{what} {str(img.get('src', ''))[:70]!r} is not a numbered figure with a caption")
    text = art.get_text(" ", strip=True)
    for m in _ABS_PATH.finditer(text):
        report.add("internal", f"absolute path {m.group(0)!r}")
    for m in _ISSUE.finditer(text):
        i = m.start()
        report.add("internal", f"project-internal wording {text[max(0, i - 30):i + 40]!r}")
    for out in art.select(".cell_output"):
        text = _text_without(out, "script, style, img")
        for num in raw_floats(text):
            report.add("raw-float", f"raw float repr {num!r} in a cell output")
        for m in _ZERO_SPREAD.finditer(text):
            i = m.start()
            report.add("zero-spread", f"spread printed as zero: {text[max(0, i - 40):i + 10]!r}")
    return report


_OVERFLOW = r"""
const out = [];
const visible = (el) => !!(el.offsetWidth || el.offsetHeight || el.getClientRects().length);
const article = document.querySelector('article.bd-article') || document.querySelector('main') || document.body;
const boxes = [];
// MathJax repeats each equation inside its own assistive MathML (for screen readers): count the visible one once
article.querySelectorAll('mjx-container[display="true"]:not(mjx-assistive-mml mjx-container)')
  .forEach((m) => boxes.push(['equation', m]));
article.querySelectorAll('table').forEach((t) => boxes.push(['table', t]));
for (const [what, el] of boxes) {
  if (!visible(el)) continue;
  // the box that clips the element: itself, or its nearest ancestor with overflow-x other than visible
  let box = el;
  for (let a = el; a && a !== article; a = a.parentElement) {
    if (['auto', 'scroll', 'hidden'].includes(getComputedStyle(a).overflowX)) { box = a; break; }
  }
  const hidden = Math.max(el.scrollWidth, box.scrollWidth) - box.clientWidth;
  const spill = box.getBoundingClientRect().right - article.getBoundingClientRect().right;
  if (hidden > 2 || spill > 2) {
    const label = what === 'table' ? (el.querySelector('caption, th') || el).textContent.trim().slice(0, 60)
                                   : (el.getAttribute('aria-label') || el.textContent || '').trim().slice(0, 60);
    out.push(`${what} ${Math.round(hidden > 2 ? hidden : spill)} px wider than its box: ${label}`);
  }
}
return out;
"""


def overflow_here(driver) -> list[str]:
    """``overflow`` problems of the page open in ``driver`` (a 1,280 px window, MathJax settled): the browser
    test calls it on its own 1,280 px load of each page, so that the lint does not load the page again."""
    return list(driver.execute_script(_OVERFLOW))


def overflow_problems(driver, url: str) -> list[str]:
    """``overflow`` problems of the page at ``url`` in a 1,280 px window (after MathJax has typeset)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import browser_check

    driver.set_window_size(1280, 900)
    driver.get(url)
    browser_check._mathjax_settled(driver)
    return overflow_here(driver)


def pages_of(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.html")
                  if not (set(p.relative_to(root).parts[:-1]) & SKIP_DIRS) and p.name not in SKIP_PAGES
                  and "_modules" not in p.relative_to(root).parts)


def lint_book(root: Path | str, pages: list[str] | None = None, *, browser: bool = True,
              overflow: dict[str, list[str]] | None = None) -> list[LintReport]:
    """Lint every page under ``root`` (or the given relative ``pages``): one report per page.

    ``overflow`` (page relative to ``root`` -> its :func:`overflow_here` problems, measured by the caller on a
    1,280 px load, e.g. the browser test's) is used instead of loading each page here; it must hold every page.
    """
    root = Path(root)
    if not (root / "index.html").exists() and not pages:
        raise FileNotFoundError(f"no built book at {root} (index.html missing); build it with `make book`")
    paths = [root / p for p in pages] if pages else pages_of(root)
    reports = [lint_html(p.read_text(encoding="utf-8"), p.relative_to(root).as_posix()) for p in paths]
    if overflow is not None:
        missing = [r.page for r in reports if r.page not in overflow]
        if missing:
            raise ValueError(f"overflow: no measurement for {len(missing)} page(s), e.g. {missing[:3]}")
        for rep in reports:
            for detail in overflow[rep.page]:
                rep.add("overflow", detail)
    elif browser:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import browser_check

        server, base = browser_check.serve(root)
        driver = browser_check.start_browser()
        try:
            for p, rep in zip(paths, reports):
                for detail in overflow_problems(driver, base + p.relative_to(root).as_posix()):
                    rep.add("overflow", detail)
        finally:
            driver.quit()
            server.shutdown()
    return reports


def format_reports(reports: list[LintReport], *, strict: bool = False) -> str:
    lines = []
    for r in reports:
        bad = r.problems if strict else r.unexpected()
        allowed = len(r.problems) - len(bad)
        status = "ok" if not bad else f"{len(bad)} problem(s)"
        lines.append(f"{r.page}: {status}" + (f" ({allowed} allowed)" if allowed else ""))
        lines.extend(f"    [{k}] {d}" for k, d in bad)
    totals = {k: sum(1 for r in reports for kk, _ in r.problems if kk == k) for k in KINDS}
    lines.append("all problems, allowed included: " + ", ".join(f"{k} {n}" for k, n in totals.items()))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", nargs="?", default="_build/html")
    parser.add_argument("--page", action="append", help="a page relative to root (repeatable)")
    parser.add_argument("--no-browser", action="store_true", help="skip the overflow check (no Chromium)")
    parser.add_argument("--strict", action="store_true", help="ignore the allow-list")
    args = parser.parse_args(argv)
    reports = lint_book(args.root, args.page, browser=not args.no_browser)
    print(format_reports(reports, strict=args.strict))
    bad = [r for r in reports if (r.problems if args.strict else r.unexpected())]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
