"""The introduction's chapter map (``tools/book_map.py``) covers every chapter and is committed up to date."""
from __future__ import annotations

import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))
import book_map  # noqa: E402

# pages that serve every chapter and are not drawn as boxes
REFERENCE_PAGES = {"intro", "notation", "glossary", "reference", "reproducing", "bibliography", "cite", "errata"}


def _toc_chapters() -> set[str]:
    toc = yaml.safe_load((REPO / "_toc.yml").read_text(encoding="utf-8"))
    files = []

    def walk(entries):
        for e in entries:
            files.append(Path(e["file"]).name)
            walk(e.get("sections", []))

    for part in toc["parts"]:
        walk(part["chapters"])
    return {f for f in files if f not in REFERENCE_PAGES and not f.startswith("api_")}


def test_map_has_every_chapter_of_the_toc():
    assert set(book_map.chapters()) == _toc_chapters()


def test_dependencies_and_path_point_to_chapters_on_the_map():
    stems = set(book_map.CHAPTERS)
    for stem, (_, _, (_, layer), deps) in book_map.CHAPTERS.items():
        assert set(deps) <= stems, stem
        # an arrow always points down the page: a chapter sits below everything it builds on
        assert all(book_map.CHAPTERS[d][2][1] < layer for d in deps), stem
    path = book_map.PRACTITIONER_PATH
    assert set(path) <= stems and len(set(path)) == len(path)
    for a, b in zip(path, path[1:]):  # each step of the path is an arrow of the map
        assert a in book_map.CHAPTERS[b][3], (a, b)


def test_committed_svg_is_current():
    committed = book_map.DEFAULT_OUT.read_text(encoding="utf-8")
    assert committed == book_map.svg_text(), "run: python tools/book_map.py"
