"""Compare the numbers two builds of the book print, page by page (a refactor must leave them unchanged).

    python tools/book_numbers.py OLD_BUILD/html NEW_BUILD/html [--pages deep_models,...] [--show N]

Reads each chapter's article text (scripts, styles, the page footer and the API pages' code left out), takes every
number it prints (integers, decimals, scientific notation; digits inside words such as commit hashes are not
numbers) and reports, per page, whether the sequence of numbers is the same, and the first differences where not.
Exit status 0 when every page compared is the same, 1 otherwise.
"""
from __future__ import annotations

import argparse
import difflib
import re
import sys
from html.parser import HTMLParser
from pathlib import Path

NUMBER = re.compile(r"(?<![\w.])[-−]?\d[\d,]*(?:\.\d+)?(?:[eE][-+−]?\d+)?(?![\w])")


class _Article(HTMLParser):
    """The text of a page's ``<article>``, without scripts, styles and footers."""

    SKIP = {"script", "style", "footer"}

    def __init__(self) -> None:
        super().__init__()
        self.depth = 0
        self.skip = 0
        self.parts: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag == "article":
            self.depth += 1
        if tag in self.SKIP:
            self.skip += 1

    def handle_endtag(self, tag):
        if tag == "article":
            self.depth -= 1
        if tag in self.SKIP and self.skip:
            self.skip -= 1

    def handle_data(self, data):
        if self.depth > 0 and not self.skip:
            self.parts.append(data)


def numbers(page: Path) -> list[str]:
    """The numbers a page's article prints, in order."""
    p = _Article()
    p.feed(page.read_text(encoding="utf-8", errors="replace"))
    return NUMBER.findall(" ".join(p.parts))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--pages", default=None, help="comma-separated page names to leave out (e.g. deep_models)")
    ap.add_argument("--show", type=int, default=5, help="differences to show per page")
    args = ap.parse_args(argv)
    old, new = Path(args.old), Path(args.new)
    skip = set(filter(None, (args.pages or "").split(",")))
    same = True
    for page in sorted((old / "book").glob("*.html")):
        name = page.stem
        if name in skip or name.startswith("api_"):
            continue
        other = new / "book" / page.name
        if not other.exists():
            print(f"{name}: missing in {new}")
            same = False
            continue
        a, b = numbers(page), numbers(other)
        if a == b:
            print(f"{name}: {len(a)} numbers, the same")
            continue
        same = False
        diff = [d for d in difflib.ndiff(a, b) if d[:1] in "+-"]
        print(f"{name}: {len(a)} -> {len(b)} numbers, {len(diff)} differ: {' '.join(diff[:args.show])}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
