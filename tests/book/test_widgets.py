"""The book's widgets, in Python: every slider of every widget in the chapters redraws the figure
with other numbers (the live ipywidgets version), and the static HTML version holds one distinct
precomputed figure per grid point.

The widgets are taken from the notebooks themselves: each cell that calls ``figure_widget`` is
evaluated after the notebook's top-level imports, so a widget added to a chapter is tested too.
"""
from __future__ import annotations

import ast
import base64
import json
import re
from pathlib import Path

import ipywidgets as widgets
import matplotlib.pyplot as plt
import nbformat
import numpy as np
import pytest

from fedtheory.widgets import FigureWidget, figure_data, figure_widget, static_grid

BOOK = Path(__file__).resolve().parents[2] / "book"


def _imports(tree: ast.Module) -> list[ast.stmt]:
    return [node for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))]


def notebook_widget_cells() -> list[tuple[str, int, str]]:
    found = []
    for path in sorted(BOOK.glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        for i, cell in enumerate(nb.cells):
            if cell.cell_type == "code" and "figure_widget(" in cell.source and "def " not in cell.source:
                found.append((path.name, i, cell.source))
    return found


def build_notebook_widget(name: str, index: int) -> FigureWidget:
    """Evaluate one notebook's widget cell after all of that notebook's top-level imports."""
    nb = nbformat.read(BOOK / name, as_version=4)
    namespace: dict = {}
    for cell in nb.cells:
        if cell.cell_type == "code":
            try:
                tree = ast.parse(cell.source)
            except SyntaxError:  # IPython magics: no imports to take from this cell
                continue
            exec(compile(ast.Module(body=_imports(tree), type_ignores=[]), name, "exec"), namespace)
    tree = ast.parse(nb.cells[index].source)
    *body, last = tree.body
    exec(compile(ast.Module(body=body, type_ignores=[]), name, "exec"), namespace)
    shown = last.value
    # a captioned widget is handed to a MyST figure by `glue(name, widget)`: the widget is its second argument
    if isinstance(shown, ast.Call) and getattr(shown.func, "id", None) == "glue" and len(shown.args) >= 2:
        shown = shown.args[1]
    widget = eval(compile(ast.Expression(shown), name, "eval"), namespace)
    assert isinstance(widget, FigureWidget)
    return widget


WIDGET_CELLS = notebook_widget_cells()


def test_the_book_has_its_widgets():
    per_chapter = {}
    for name, _, _ in WIDGET_CELLS:
        per_chapter[name] = per_chapter.get(name, 0) + 1
    assert per_chapter == {"fedhdp_theory.ipynb": 3, "mean_estimation.ipynb": 2, "privacy_primer.ipynb": 1,
                           "secagg.ipynb": 1, "tuning_cost.ipynb": 1}


def _differs(a: list[np.ndarray], b: list[np.ndarray]) -> bool:
    return len(a) != len(b) or any(x.shape != y.shape or not np.array_equal(x, y, equal_nan=True)
                                   for x, y in zip(a, b))


def _another_value(widget: FigureWidget, name: str):
    """A value of the control other than its current one: from the static grid, else the range's far end."""
    control = widget.controls[name]
    others = [v for v in widget.static_values[name] if v != control.value
              and not (isinstance(v, float) and v == pytest.approx(control.value))]
    if others:
        return others[-1]
    if hasattr(control, "options"):
        return [o for o in control.options if o != control.value][0]
    values = (control.min, control.max)
    if isinstance(control, widgets.FloatLogSlider):
        values = (control.base ** control.min, control.base ** control.max)
    return max(values, key=lambda v: abs(v - control.value))


@pytest.mark.parametrize("name,index", [(n, i) for n, i, _ in WIDGET_CELLS],
                         ids=[f"{n}:{i}" for n, i, _ in WIDGET_CELLS])
def test_every_slider_changes_the_figure(name, index):
    plt.close("all")  # figures other tests left open
    widget = build_notebook_widget(name, index)
    start = widget.last_figure_data
    assert start is not None  # drawn once on construction
    for control_name, control in widget.controls.items():
        if isinstance(control, widgets.fixed):
            continue
        before = widget.last_figure_data
        old = control.value
        control.value = _another_value(widget, control_name)
        assert control.value != old
        assert _differs(before, widget.last_figure_data), f"{name}: moving {control_name} left the figure unchanged"
        control.value = old
        assert not _differs(start, widget.last_figure_data), f"{name}: moving {control_name} back did not restore it"
    assert plt.get_fignums() == []
    widget.close()


def test_static_grid_keeps_current_values_rounds_and_respects_the_budget():
    tau = widgets.FloatLogSlider(value=0.08, base=10, min=-2.5, max=0, step=0.05)
    k = widgets.IntSlider(value=20, min=2, max=100)
    acc = widgets.Dropdown(options=["rdp", "pld"], value="pld")
    figure_widget(lambda tau, k, acc, c: plt.figure(), tau=tau, k=k, acc=acc, c=widgets.fixed(1.0))
    controls = dict(tau=tau, k=k, acc=acc, c=widgets.fixed(1.0))
    grid = static_grid(controls, max_frames=25)
    assert set(grid) == {"tau", "k", "acc"}  # fixed values are not controls
    assert 0.08 in grid["tau"] and 20 in grid["k"] and "pld" in grid["acc"]
    assert np.prod([len(v) for v in grid.values()]) <= 25 and len(grid["tau"]) == 5
    # automatic values, spread over the (value-aligned) step grid, rounded to 2 digits
    assert grid["tau"][0] == 0.0032 and grid["tau"][-1] == 0.9
    chosen = static_grid(controls, grid={"k": [3, 50]})
    assert chosen["k"] == [3, 20, 50] and chosen["tau"] == [0.08] and chosen["acc"] == ["pld"]
    exact = static_grid(controls, grid={"tau": [0.1, 0.01]})["tau"]  # off the slider's step grid: kept as given
    assert exact == [0.01, 0.08, 0.1]
    with pytest.raises(ValueError, match="max_frames"):
        static_grid(controls, max_frames=4, grid={"k": [3, 50, 90, 99]})
    with pytest.raises(ValueError, match="nope"):
        static_grid(controls, grid={"nope": [1]})


def _plot_line(a: float, b: int = 1):
    fig, ax = plt.subplots(figsize=(2, 2))
    ax.plot([0, 1, 2], [0, a, b * a])
    ax.set_title(f"a = {a:g}")
    return fig


def test_live_widgets_replace_frames_by_the_live_figure(monkeypatch):
    monkeypatch.delenv("FEDBOOK_WIDGET_FRAMES", raising=False)
    plt.close("all")
    live = [(n, i) for n, i, src in WIDGET_CELLS if "live=" in src]
    assert {n for n, _ in live} == {"mean_estimation.ipynb", "fedhdp_theory.ipynb"} and len(live) == 5
    w = build_notebook_widget(*[(n, i) for n, i in live if n == "mean_estimation.ipynb"][0])
    page = w._repr_mimebundle_()["text/html"]
    assert "fedbook-live" in page and "<img" not in page and "generated by sympy.jscode from" in page
    # every slider over its notebook control's full range, continuous, log where the control is: the
    # cell's τ = FloatLogSlider(min=-2.5, max=0), not the step-aligned min the kernel's slider gets
    assert w.live == "mean_estimation.error_curve"
    assert 'type="range" data-param="tau" min="-2.5" max="0" step="any"' in page
    assert 'type="range" data-param="K" min="2" max="100" step="1"' in page
    assert 'type="range" data-param="eps" min="-2" max="1" step="any"' in page
    assert 'type="range" data-param="sigma" min="0.05" max="2" step="any"' in page
    w.close()
    with pytest.raises(ValueError, match="live must be one of"):
        figure_widget(_plot_line, a=widgets.FloatSlider(value=1.0), live="nope")
    with pytest.raises(TypeError, match="live widgets take"):
        figure_widget(_plot_line, a=widgets.Dropdown(options=["x", "y"]), live="fedhdp.opt_out")
    assert plt.get_fignums() == []


def test_static_version_holds_one_distinct_figure_per_grid_point(monkeypatch):
    monkeypatch.delenv("FEDBOOK_WIDGET_FRAMES", raising=False)
    plt.close("all")
    w = figure_widget(_plot_line, a=widgets.FloatSlider(value=1.0, min=0.0, max=2.0, step=0.5),
                      b=widgets.IntSlider(value=1, min=1, max=3), grid={"a": [0.5, 1.5], "b": [3]})
    bundle = w._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle  # live version for a kernel
    page = bundle["text/html"]
    data = json.loads(re.search(r'<script type="application/json" class="fedbook-widget-data">(.*?)</script>',
                                page).group(1).replace("<\\/", "</"))
    assert [c["labels"] for c in data["controls"]] == [["0.5", "1", "1.5"], ["1", "3"]]
    assert len(data["frames"]) == 6 and len(set(data["frames"].values())) == 6 == len(data["images"])
    pngs = [base64.b64decode(s) for s in data["images"]]
    assert all(p.startswith(b"\x89PNG") for p in pngs)
    # the figure shown first is the one at the controls' current values (a = 1, b = 1: indices 1, 0)
    assert f'src="data:image/png;base64,{data["images"][data["frames"]["1,0"]]}"' in page
    assert page.count("<img") == 1  # one figure per widget
    assert "fixed here" not in page  # every control moves in this grid
    monkeypatch.setenv("FEDBOOK_WIDGET_FRAMES", "0")
    assert "text/html" not in w._repr_mimebundle_()
    assert plt.get_fignums() == []


def test_figure_data_sees_lines_texts_and_patches():
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])
    base = figure_data(fig)
    ax.axvspan(0.2, 0.3)
    assert _differs(base, figure_data(fig))
    ax.set_title("x")
    plt.close(fig)


def test_book_build_moves_frames_to_files(tmp_path, monkeypatch):
    # tools/fedbook_widget_assets.py: each distinct frame written once, the page keeps URLs only
    import sys

    sys.path.insert(0, str(BOOK.parent / "tools"))
    from fedbook_widget_assets import FRAMES_DIR, externalize_frames

    monkeypatch.delenv("FEDBOOK_WIDGET_FRAMES", raising=False)
    plt.close("all")
    w = figure_widget(_plot_line, a=widgets.FloatSlider(value=1.0, min=0.0, max=2.0, step=0.5), grid={"a": [0.5]})
    page = w.static_html()
    w.close()
    out = externalize_frames(page, "book/chapter", tmp_path)
    files = sorted((tmp_path / FRAMES_DIR).glob("*.png"))
    assert len(files) == 2 and all(f.read_bytes().startswith(b"\x89PNG") for f in files)
    assert "base64,iVBOR" not in out and len(out) < len(page) / 5
    data = json.loads(re.search(r'class="fedbook-widget-data">(.*?)</script>', out).group(1).replace("<\\/", "</"))
    assert sorted(data["urls"]) == sorted(f"../{FRAMES_DIR}/{f.name}" for f in files) and "images" not in data
    assert f'src="../{FRAMES_DIR}/' in out
