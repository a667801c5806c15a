"""tools/tag_cells.py: the rules that hide plumbing in the book, their idempotency, and the committed tags."""
import importlib.util
import json
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("tag_cells", ROOT / "tools" / "tag_cells.py")
tag_cells = importlib.util.module_from_spec(spec)
spec.loader.exec_module(tag_cells)


def test_rules():
    rule = tag_cells.rule_tag
    assert rule("assert x == 1\nassert y  # comment") == "remove-cell"
    assert rule("for a in xs:\n    assert a > 0\nassert ok") == "remove-cell"
    assert rule("elapsed = time.perf_counter() - t0\nprint(elapsed)") == "remove-cell"
    assert rule("import time\nt0 = time.perf_counter()") == "hide-input"          # imports stay reachable
    assert rule("figure_widget(f, a=W.IntSlider())") == "remove-input"
    assert rule("import ipywidgets as W\nfigure_widget(f, a=W.IntSlider())") == "remove-input"
    assert rule("c = S.checks()\ndisplay(display_checks(c))\nassert all(c)") == "remove-input"
    assert rule("fig = F.plot()\nplt.show()") == "remove-input"
    assert rule("x = f()\nprint(x)\nassert x > 0") == "hide-input"
    assert rule("a = 1\nb = 2\nc = 3\nd = 4\ndisplay(a)") == "hide-input"        # computes: keep a toggle
    assert rule("%matplotlib inline\nassert True") == "remove-cell"
    assert rule("") is None


def test_idempotent_and_keeps_other_tags(tmp_path):
    nb = {"cells": [{"cell_type": "code", "id": "a", "metadata": {"tags": ["raises-exception", "hide-input"]},
                     "source": ["assert 1 == 1"], "outputs": [], "execution_count": None},
                    {"cell_type": "markdown", "id": "b", "metadata": {}, "source": ["# t"]}],
          "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    path = tmp_path / "x.ipynb"
    path.write_text(json.dumps(nb))
    assert tag_cells.main([str(path)]) == 0
    first = path.read_text()
    assert json.loads(first)["cells"][0]["metadata"]["tags"] == ["raises-exception", "remove-cell"]
    assert tag_cells.main([str(path), "--check"]) == 0 and tag_cells.main([str(path)]) == 0
    assert path.read_text() == first


def test_the_book_is_tagged(tmp_path):
    """Fails when a notebook's tags differ from the rules: run `python tools/tag_cells.py`."""
    copies = []
    for nb in sorted((ROOT / "book").glob("*.ipynb")):
        shutil.copy(nb, tmp_path / nb.name)
        copies.append(str(tmp_path / nb.name))
    assert copies and tag_cells.main(copies + ["--check"]) == 0
