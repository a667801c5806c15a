"""The JavaScript that the live widgets run, run here with Node.js: every generated function equals
the sympy expression it was printed from, and every live figure's ``compute`` gives fedtheory's
numbers (its numeric functions, written independently of the derivations) within 1e-9 relative, at
random parameters over each notebook slider's full range.  The browser test repeats the second check
in the built book.  Skipped where ``node`` is missing (``tools/setup_env.sh`` needs npm, hence node).
"""
from __future__ import annotations

import functools
import json
import random
import shutil
import subprocess
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pytest
import sympy as sp

from fedtheory import jsgen
from fedtheory.widgets_live import LIVE_FIGURES, compare_live, live_controls

REPO = Path(__file__).resolve().parents[2]
RUNTIME = REPO / "book" / "_static" / "fedbook_live.js"
NODE = shutil.which("node")
needs_node = pytest.mark.skipif(NODE is None, reason="node (Node.js) is not installed")


def run_node(script: str):
    out = subprocess.run([NODE, "-e", script], capture_output=True, text=True, timeout=60, check=True)
    return json.loads(out.stdout, parse_constant=float)


@needs_node
def test_every_generated_function_equals_its_sympy_expression():
    rng = random.Random(1)
    calls, expected = [], []
    for name in jsgen.FUNCTIONS:
        expr, symbols = jsgen.expression(name)
        f = sp.lambdify(symbols, expr, "mpmath")
        for _ in range(5):
            args = [rng.randint(2, 50) if str(s).startswith(("N", "K", "n")) else 10 ** rng.uniform(-2, 1)
                    for s in symbols]
            if name == "me_eps_cross":  # a crossover exists only where τ² > σ²/n
                args[1] = args[0] / args[2] * 2
            calls.append(f"{name}({', '.join(map(repr, map(float, args)))})")
            expected.append(float(f(*args).real))
    js = jsgen.js_library(jsgen.FUNCTIONS) + f"\nconsole.log(JSON.stringify([{', '.join(calls)}]));"
    got = run_node(js)
    np.testing.assert_allclose(got, expected, rtol=1e-12)


def test_provenance_names_the_sympy_expression():
    code = jsgen.js_function("me_E")
    assert "fedtheory.mean_estimation.symbolic.error_curve()[\"E\"]" in code and "Lemma 6.7" in code
    assert code.count("function me_E(") == 1
    with pytest.raises(ValueError, match="name must be one of"):
        jsgen.expression("nope")


@functools.lru_cache(maxsize=None)
def _widget_controls():
    """The live widgets of the notebooks, with their ipywidgets controls (built once)."""
    from tests.book.test_widgets import WIDGET_CELLS, build_notebook_widget

    out = {}
    for nb, index, source in WIDGET_CELLS:
        if "live=" in source:
            w = build_notebook_widget(nb, index)
            out[w.live] = dict(w.controls)
            plt.close("all")
    return out


def test_every_live_figure_is_used_by_a_notebook():
    assert set(_widget_controls()) == set(LIVE_FIGURES)


def _random_params(controls, rng):
    ctls, fixed = live_controls(controls)
    p = dict(fixed)
    for c in ctls:
        u = rng.random()
        if c["kind"] == "log":
            p[c["name"]] = float(f"{10 ** (c['lo'] + u * (c['hi'] - c['lo'])):.3g}")
        elif c["kind"] == "int":
            p[c["name"]] = int(round(c["min"] + u * (c["max"] - c["min"])))
        else:
            p[c["name"]] = float(f"{c['min'] + u * (c['max'] - c['min']):.3g}")
    return p


@needs_node
@pytest.mark.parametrize("name", sorted(LIVE_FIGURES))
def test_live_figure_computes_fedtheorys_numbers(name):
    controls = _widget_controls()[name]
    fig = LIVE_FIGURES[name]
    rng = random.Random(hash(name) % 1000)
    params = [_random_params(controls, rng) for _ in range(6)]
    params.append({k: v.value for k, v in controls.items()})  # the notebook's defaults
    js = (f"globalThis.window = globalThis;\n{RUNTIME.read_text()}\nvar U = window.fedbookLiveUtil;\n"
          f"{jsgen.js_library(fig.functions)}\nvar F = {{{', '.join(f'{f}: {f}' for f in fig.functions)}}};\n"
          f"function compute(p, F, U) {{{fig.compute}}}\n"
          f"var out = {json.dumps(params)}.map(function (p) {{ return compute(p, F, U).values; }});\n"
          "console.log(JSON.stringify(out, function (k, v) { return (typeof v === 'number' && !isFinite(v)) ? String(v) : v; }));")
    results = run_node(js)
    for p, values in zip(params, results):
        assert not compare_live(name, p, values), compare_live(name, p, values)
        assert set(fig.reference(p, values)) <= set(values)


def test_compare_live_reports_a_wrong_number():
    p = {"K": 20, "n": 200, "sigma": 0.4, "tau": 0.08, "eps": 0.25, "delta": 1e-5, "c": 1.0}
    right = LIVE_FIGURES["mean_estimation.error_curve"].reference(p, {"lam": [0.5, 1.0, 2.0]})
    page = {k: (v.tolist() if hasattr(v, "tolist") else v) for k, v in right.items()} | {"lam": [0.5, 1.0, 2.0]}
    assert compare_live("mean_estimation.error_curve", p, page) == []
    page["E"] = [page["E"][0], page["E"][1] * (1 + 1e-8), page["E"][2]]
    (problem,) = compare_live("mean_estimation.error_curve", p, page)
    assert "E[1]" in problem and "1 of 3 differ" in problem
    del page["E_star"]
    assert any("does not compute 'E_star'" in t for t in compare_live("mean_estimation.error_curve", p, page))


def _run_compute(name: str, params: list[dict]) -> list[dict]:
    """``compute(p)`` of the live figure ``name`` in node, for each of ``params``: readout, panel titles, edges."""
    fig = LIVE_FIGURES[name]
    js = (f"globalThis.window = globalThis;\n{RUNTIME.read_text()}\nvar U = window.fedbookLiveUtil;\n"
          f"{jsgen.js_library(fig.functions)}\nvar F = {{{', '.join(f'{f}: {f}' for f in fig.functions)}}};\n"
          f"function compute(p, F, U) {{{fig.compute}}}\n"
          f"var out = {json.dumps(params)}.map(function (p) {{ var r = compute(p, F, U); return {{readout: r.readout, "
          "titles: r.panels.map(function (q) { return q.title; }), edges: r.panels.map(function (q) { return q.edges || []; }), "
          "values: r.values}; });\n"
          "console.log(JSON.stringify(out, function (k, v) { return (typeof v === 'number' && !isFinite(v)) ? String(v) : v; }));")
    return run_node(js)


@needs_node
def test_no_r_star_is_reported_when_nobody_opts_out():
    base = {"N": 10, "alpha2": 1.0, "tau2": 0.2, "gamma2": 2.0}
    (server_none, server_some) = _run_compute("fedhdp.server_error", [base | {"rho_np": 0.0}, base | {"rho_np": 0.3}])
    assert "r* = " not in server_none["readout"] and "r has no" in server_none["readout"]
    assert "r* = " in server_some["readout"]
    (opt_none,) = _run_compute("fedhdp.opt_out", [base | {"rho_np": 0.0}])
    assert "private r =" not in opt_none["titles"][1] and "nobody opts out" in opt_none["titles"][1]


@needs_node
def test_a_best_lambda_beyond_the_plotted_range_is_named_at_its_edge():
    base = {"N": 10, "rho_np": 0.1, "alpha2": 1.0, "gamma2": 2.0}
    (far, near) = _run_compute("fedhdp.opt_out", [base | {"tau2": 0.001}, base | {"tau2": 0.2}])
    best = far["values"]["rstar_opted_out_best_lambda"]
    assert best > 100
    (edge,) = far["edges"][1]
    assert edge["side"] == 1 and "opted out" in edge["text"] and U_fmt(best) in edge["text"]
    assert near["edges"] == [[], []]


def U_fmt(v: float) -> str:
    """fedbook_live.js's ``U.fmt``: 4 significant digits, shortest form."""
    return repr(float(f"{v:.4g}")).removesuffix(".0")
