"""Plot functions and the helpers that choose what they plot (fedtrain.figures), on tiny real runs."""
from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from fedtrain.figures import (  # noqa: E402
    best_lambda_table,
    curves_by_method,
    data_label,
    lambda_curve,
    method_label,
    COLUMN_WIDTH_IN,
    eps_style,
    plot_lambda_sweep,
    readable_log_axis,
    settings_text,
    plot_privacy_utility,
    plot_theory_vs_training,
    plot_training_curves,
    privacy_table,
)
from fedtrain.config import RunConfig  # noqa: E402
from fedtrain.presets import book_grid  # noqa: E402
from fedtrain.sweep import expand_grid, run_sweep  # noqa: E402
from fedtrain.testing import fake_result  # noqa: E402

BASE = dict(dataset="gaussian", rounds=4, batch_size=10, lr=0.05, clip=5.0, eval_every=2,
            dataset_options={"num_silos": 4, "n": 30, "tau": 0.5})


@pytest.fixture(scope="module")
def rows():
    cs = []
    for m in ("local", "fedavg", "finetune"):
        cs += expand_grid({**BASE, "method": m}, eps=[2.0, math.inf], seed=[0, 1])
    cs += expand_grid({**BASE, "method": "mrmtl"}, eps=[2.0, math.inf], lam=[0.1, 1.0, 10.0], seed=[0, 1])
    cs += expand_grid({**BASE, "method": "ditto"}, eps=[2.0], lam=[1.0], seed=[0, 1])
    return run_sweep(cs, progress=False)


def _fake(method, eps, lam, lr, seed, value, metric="accuracy", curve=(0.5,)):
    cfg = RunConfig(method=method, eps=eps, lam=lam, lr=lr, seed=seed, rounds=5, batch_size=2, clip=1.0, dataset="x")
    return fake_result(cfg, value, metric=metric, num_silos=1, curve=curve)


def test_method_labels():
    assert method_label({"method": "ifca", "select_frac": 0.1}) == "IFCA (10% sel.)"
    assert method_label({"method": "ifca", "select_frac": 1.0}) == "IFCA (every round)"
    assert method_label({"method": "finetune", "finetune_frac": 0.5}) == "Finetune (50% FedAvg)"
    assert method_label({"method": "mrmtl"}) == "MR-MTL"
    assert method_label(RunConfig(dataset="x", method="ifca", select_frac=0.5)) == "IFCA (50% sel.)"


def test_best_lambda_picks_direction_of_metric():
    acc = [_fake("mrmtl", 1.0, lam, 0.1, s, v) for lam, vals in ((0.1, (0.5, 0.7)), (1.0, (0.8, 0.8))) for s, v in
           enumerate(vals)]
    (t,) = best_lambda_table(acc)
    assert (t["lam"], t["mean"], t["n"]) == (1.0, 0.8, 2)  # accuracy: higher wins
    mse = [fake_result(r.config, r.test_metric, metric="mse", num_silos=1) for r in acc]
    (t,) = best_lambda_table(mse)
    assert t["lam"] == 0.1 and t["mean"] == pytest.approx(0.6) and t["std"] == pytest.approx(np.std([0.5, 0.7], ddof=1))
    cur = lambda_curve(acc, 1.0)
    np.testing.assert_allclose(cur["lam"], [0.1, 1.0])
    np.testing.assert_allclose(cur["mean"], [0.6, 0.8])
    with pytest.raises(ValueError, match="no rows"):
        lambda_curve(acc, 2.0)


def test_privacy_table_and_labels(rows):
    tab = {(t["label"], t["eps"]): t for t in privacy_table(rows)}
    # same noise for local, FedAvg and MR-MTL; Ditto's second pass needs more noise at the same eps
    z = {label: t["z_median"] for (label, eps), t in tab.items() if eps == 2.0}
    assert z["Local"] == z["FedAvg"] == z["MR-MTL"] and z["Ditto"] > z["MR-MTL"]
    assert all(t["eps_spent_max"] <= 2.0 + 1e-9 for (_, e), t in tab.items() if e == 2.0)
    assert data_label(rows) == "gaussian (synthetic stand-in, τ=0.5)"
    assert data_label([_fake("local", 1.0, 0.0, 0.1, 0, 0.5)]) == "x (real data)"


def test_training_curves(rows):
    curves = curves_by_method([r for r in rows if r.config.method in ("local", "fedavg", "finetune")])
    assert len(curves) == 6
    c = curves[("Local", 2.0)]
    np.testing.assert_array_equal(c["rounds"], [2, 4])
    assert c["n"] == 2 and np.all(c["std"] >= 0)
    fig = plot_training_curves([r for r in rows if r.config.method in ("local", "fedavg")], note=" (test)")
    ax = fig.axes[0]
    assert len(ax.get_lines()) == 4 and "synthetic stand-in" in ax.get_title() and ax.get_title().endswith("(test)")
    assert "2 seeds" in settings_text(rows) and "2 seeds" not in ax.get_title()  # settings go to the caption
    assert ax.get_xlabel() == "training round" and "MSE" in ax.get_ylabel()
    # every (method, ε) curve has its own (colour, line style, marker); the legend sits outside the axes
    styles = {(ln.get_color(), str(ln.get_linestyle()), ln.get_marker()) for ln in ax.get_lines()}
    assert len(styles) == 4 and ax.get_legend() is None and len(fig.legends) == 1
    assert fig.get_size_inches()[0] == pytest.approx(COLUMN_WIDTH_IN)
    plt.close(fig)
    with pytest.raises(ValueError, match="eval_every"):
        curves_by_method([_fake("local", 1.0, 0.0, 0.1, 0, 0.5, curve=None)])


def test_diverged_runs_are_left_out_of_the_best_lambda():
    rows = [_fake("mrmtl", 1.0, 0.1, 0.1, s, v, metric="mse") for s, v in enumerate((0.5, float("nan")))]
    rows += [_fake("mrmtl", 1.0, 1.0, 0.1, s, float("nan"), metric="mse") for s in (0, 1)]  # every seed diverged
    (t,) = best_lambda_table(rows)
    assert t["lam"] == 0.1 and t["mean"] == 0.5 and t["n"] == 1 and t["diverged"] == 1


def test_privacy_utility_and_lambda_plots(rows):
    fig = plot_privacy_utility(rows)
    ax = fig.axes[0]
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert labels == ["Local", "FedAvg", "Finetune (50% FedAvg)", "MR-MTL", "Ditto"] and ax.get_legend() is None
    assert [t.get_text() for t in ax.get_xticklabels()] == ["2", "∞\n(non-private)"]
    plt.close(fig)
    # the zoom panel at one ε: one row per method, sorted by the metric, the legend under both panels
    fig = plot_privacy_utility(rows, zoom_eps=2.0)
    main, zoom = fig.axes
    assert len(zoom.get_yticklabels()) == 5 and zoom.get_title() == "zoom: ε = 2"
    means = [ln.get_xdata()[0] for ln in zoom.get_lines() if ln.get_marker() in ("o", ">", "<")]
    assert means == sorted(means) and len(fig.legends) == 1 and main.get_legend() is None
    lo_x, hi_x = zoom.get_xlim()
    assert all(lo_x <= m <= hi_x for m in means)
    plt.close(fig)
    with pytest.raises(ValueError, match="zoom_eps"):
        plot_privacy_utility(rows, zoom_eps=3.0)
    fig = plot_privacy_utility([], empty_text="no whole seed yet")  # a grid still being computed
    assert [t.get_text() for t in fig.axes[0].texts] == ["no whole seed yet"]
    plt.close(fig)
    with pytest.raises(ValueError, match="rows must hold"):
        plot_privacy_utility([])
    fig = plot_lambda_sweep(rows, [2.0, math.inf])
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and "λ" in ax.get_xlabel()
    assert "best λ" in [t.get_text() for t in fig.legends[0].get_texts()]
    # ε = 2 and non-private differ in line style and marker, not only in colour
    (l2, _), (linf, _) = [(ln, None) for ln in ax.get_lines() if ln.get_label().startswith("MR-MTL")]
    assert (l2.get_linestyle(), l2.get_marker()) != (linf.get_linestyle(), linf.get_marker())
    plt.close(fig)


def test_eps_styles_are_distinct_and_log_ticks_readable():
    eps = [0.5, 1.0, 2.0, 4.0, 8.0, math.inf]
    styles = [tuple(sorted((k, str(v)) for k, v in eps_style(e, eps).items())) for e in eps]
    assert len(set(styles)) == len(eps)
    fig, ax = plt.subplots()
    ax.plot([1, 2], [0.021, 0.049])
    ax.set_yscale("log")
    readable_log_axis(ax, "y")
    fig.canvas.draw()
    labels = [t.get_text() for t in ax.get_yticklabels() if t.get_text()]
    lo, hi = ax.get_ylim()
    shown = [float(t) for t in labels if lo <= float(t) <= hi]
    assert len(shown) >= 3 and all("10" not in t for t in labels)  # 0.03, 0.04, ... not 3×10⁻²
    plt.close(fig)


def test_theory_vs_training_plot():
    lams = np.array([0.0, 0.1, 1.0, 10.0])
    fig = plot_theory_vs_training(lams, np.array([1.0, 0.8, 0.5, 0.9]), np.full(4, 0.05), lambda l: 1 / (1 + l) + l / 20,
                                  lam_star_theory=1.0, fedavg=(0.9, 0.02), theory_fedavg=0.95, title="t")
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and ax.get_title() == "t"
    assert len(ax.containers) == 1 and len(ax.containers[0].lines[0].get_xdata()) == 3  # lambda = 0 not on a log axis
    plt.close(fig)


def test_book_grids_are_small_and_valid():
    for fig in ("fig2", "fig3", "fig4", "fig5"):
        for ds in ("school", "vehicle-standin", "gleam-standin"):
            reduced = book_grid(fig, ds, full=False)
            assert {c.seed for c in reduced} == {0, 1000} and max(c.rounds for c in reduced) <= 40  # 2 repeats
            full = book_grid(fig, ds, full=True)
            assert {c.seed for c in full} == {1000 * r for r in range(5)} and len(full) >= len(reduced)
    with pytest.raises(ValueError, match="figure must be one of"):
        book_grid("fig9", "school")


def _trained(s_loc, tau, K, offset=0.0, n_sets=6, seed=0):
    """A fake gaussian_lambda_sweep entry whose runs scatter around the closed form (+ ``offset`` at lambda > 0)."""
    from fedtheory.mean_estimation import fedavg_mse, mse

    rng = np.random.default_rng(seed)
    lam = np.array([0.0, 0.1, 0.3, 1.0, 3.0, 10.0])
    s0 = s_loc * (1 + 0.05 * rng.standard_normal(n_sets))
    runs = np.vstack([s0, mse(lam[1:, None], s0[None, :], tau**2, K) * (1 + 0.01 * rng.standard_normal((5, n_sets)))
                      + offset])
    fed = fedavg_mse(s0, tau**2, K) * (1 + 0.01 * rng.standard_normal(n_sets))
    return {"lam": lam, "mean": runs.mean(1), "se": runs.std(1, ddof=1) / np.sqrt(n_sets), "runs": runs,
            "fedavg_runs": fed, "fedavg_mean": fed.mean(), "fedavg_se": fed.std(ddof=1) / np.sqrt(n_sets),
            "delta": 0.01, "accountant": "rdp"}


def test_theory_summary_and_paired_z():
    from fedtrain.figures import paired_z, theory_summary

    tau, K = 0.25, 50
    trained = {1.0: _trained(0.08, tau, K), math.inf: _trained(0.02, tau, K, seed=1)}
    summ = theory_summary(trained, tau=tau)
    for eps, t in trained.items():
        s = summ[eps]
        assert s.s_loc == pytest.approx(t["mean"][0]) and s.se0 == pytest.approx(t["se"][0])
        assert s.lam_star == pytest.approx(s.s_loc / tau**2)  # Thm 6.3: lambda* = sigma_loc^2 / tau^2
        assert s.lam_trained == t["lam"][1:][np.argmin(t["mean"][1:])]
    assert summ[1.0].lam_star > summ[math.inf].lam_star
    z, zf = paired_z(trained[1.0], num_silos=K, tau=tau)
    assert z.shape == (5,) and np.all(np.abs(z) < 6) and abs(zf) < 6  # runs scatter around the closed form
    z_off, _ = paired_z(_trained(0.08, tau, K, offset=0.01), num_silos=K, tau=tau)
    assert np.all(z_off > 10)  # a systematic excess over the closed form is flagged
    with pytest.raises(ValueError, match="lam"):
        theory_summary({1.0: {**trained[1.0], "lam": trained[1.0]["lam"] + 1}}, tau=tau)


def test_theory_meets_training_figure_reads_at_column_width():
    from fedtrain.figures import plot_theory_meets_training

    tau, K = 0.25, 50
    trained = {1.0: _trained(0.08, tau, K), 3.0: _trained(0.03, tau, K, seed=2), math.inf: _trained(0.02, tau, K, seed=1)}
    fig, summ = plot_theory_meets_training(trained, num_silos=K, tau=tau, n=50, sigma=1.0)
    w, h = fig.get_size_inches()
    assert w <= 7.5 and len(fig.axes) == 3
    xs = [ax.get_position().x0 for ax in fig.axes]
    ys = [ax.get_position().y0 for ax in fig.axes]
    assert max(xs) - min(xs) < 1e-9 and ys[0] > ys[1] > ys[2]  # stacked vertically, one column
    assert len(fig.legends) == 1 and all(ax.get_legend() is None for ax in fig.axes)  # one legend for all panels
    assert all(t.get_fontsize() >= 9 for t in fig.legends[0].get_texts())
    titles = [ax.get_title() for ax in fig.axes]
    assert titles[0].startswith("ε=1, δ=0.01 (RDP)") and titles[2].startswith("non-private")
    assert f"λ*={summ[1.0].lam_star:.2f}" in titles[0]
    # each panel's dotted line sits at that panel's closed-form lambda*
    for ax, s in zip(fig.axes, summ.values()):
        assert any(np.allclose(line.get_xdata(), s.lam_star) for line in ax.lines)
    assert "K=50, n=50, τ=0.25, σ=1; 6 synthetic datasets" in fig._suptitle.get_text()
    plt.close(fig)


def test_best_by_label_and_best_lambda_by_eps():
    from fedtrain.figures import best_by_label, best_lambda_by_eps

    rows = [_fake("mrmtl", 1.0, lam, 0.1, s, v + 0.01 * s, metric="mse")
            for lam, v in ((0.1, 0.5), (1.0, 0.3), (10.0, 0.4)) for s in (0, 1)]
    rows += [_fake("mrmtl", math.inf, lam, 0.1, s, v, metric="mse") for lam, v in ((0.1, 0.2), (1.0, 0.25)) for s in (0, 1)]
    rows += [_fake("local", 1.0, 0.0, 0.1, s, 0.9, metric="mse") for s in (0, 1)]
    star = best_lambda_by_eps(rows, [1.0, math.inf])
    assert star[1.0]["lam"] == 1.0 and star[1.0]["mean"] == pytest.approx(0.305)
    assert star[1.0]["std"] == pytest.approx(np.std([0.3, 0.31], ddof=1))
    assert star[math.inf]["lam"] == 0.1
    acc = [_fake("mrmtl", 1.0, lam, 0.1, 0, v) for lam, v in ((0.1, 0.5), (1.0, 0.3))]  # accuracy: higher is better
    assert best_lambda_by_eps(acc, [1.0])[1.0]["lam"] == 0.1
    tab = best_by_label(rows)
    assert tab[("MR-MTL", 1.0)]["lam"] == 1.0 and tab[("Local", 1.0)]["mean"] == pytest.approx(0.9)


def test_privacy_utility_panels_are_stacked(rows):
    from fedtrain.figures import plot_privacy_utility_panels

    fig = plot_privacy_utility_panels({"a": rows, "b": rows}, notes={"a": "\nnote a"})
    assert len(fig.axes) == 2 and fig.get_size_inches()[0] <= 9
    a, b = fig.axes
    assert a.get_position().y0 > b.get_position().y1 and a.get_title().endswith("note a")
    plt.close(fig)


def test_zoom_panel_keeps_an_outlier_off_scale():
    rows = [_fake(m, 6.0, 0.0, 0.03, s, v + 0.0002 * s, metric="mse")
            for m, v in (("fedavg", 0.0259), ("mrmtl", 0.0250), ("ditto", 0.0246), ("ifca", 0.1149)) for s in (0, 1)]
    fig = plot_privacy_utility(rows, zoom_eps=6.0)
    zoom = fig.axes[1]
    labels = [t.get_text() for t in zoom.get_yticklabels()]
    assert labels[-1].endswith("(0.115, off scale)") and not any("off scale" in t for t in labels[:-1])
    lo_x, hi_x = zoom.get_xlim()
    assert hi_x < 0.03 and lo_x > 0.02  # the three close methods fill the panel
    plt.close(fig)


def test_mean_gap_is_difference_of_means_and_larger_std():
    from fedtrain.analysis import mean_gap

    table = {("A", 1.0): {"mean": 0.5, "std": 0.01}, ("B", 1.0): {"mean": 0.2, "std": 0.03}}
    diff, std = mean_gap(table, "A", "B", 1.0)
    assert math.isclose(diff, 0.3) and std == 0.03
    assert mean_gap(table, "B", "A", 1.0) == (-diff, std)


def test_book_figures_by_name(tmp_path):
    from fedtrain import figures

    assert set(figures.BOOK_FIGURES) == set(figures.CATALOGUE)
    with pytest.raises(ValueError, match="name must be one of"):
        figures.book_figure("fig-99")
    # the command under the figure: draws it from the committed store and writes it at twice the density
    out = tmp_path / "f.png"
    assert figures.main(["local-vs-fedavg", "-o", str(out)]) == 0
    import matplotlib.image as mpimg

    h, w = mpimg.imread(out).shape[:2]
    assert w >= 2 * 100 * figures.COLUMN_WIDTH_IN * 0.9  # about 1,360 px for a 680 px column
    plt.close("all")


def test_catalogue_covers_real_image_and_fedhdp_figures(tmp_path, capsys):
    """The catalogue names Fig. 6 and Fig. 3(d) on real images and FedHDP's figures and tables, each drawable by
    ``python -m fedtrain.figures NAME``; the listing (no NAME, or --list) prints every name."""
    from fedtrain import figures
    from fedtrain.presets import REAL_IMAGE_GRIDS

    cat = figures.CATALOGUE
    assert {"fig6-fashion", "fig6-fashion-lambda", "fig3d-fashion"} <= set(cat)
    assert {"fedhdp-claims-fashion", "fedhdp-table-fashion", "fedhdp-table-fashion-skewed", "fedhdp-theory-link"} <= set(cat)
    assert {cat[n].chapter for n in ("fig6-fashion", "fig3d-fashion")} == {"deep_models"}
    assert {e.chapter for n, e in cat.items() if n.startswith("fedhdp-")} == {"fedhdp_practice"}
    assert cat["fedhdp-table-fashion"].suffix == ".md" and cat["fig6-fashion"].suffix == ".png"
    # each chapter named is a notebook of the book
    book = Path(__file__).resolve().parents[2] / "book"
    assert all((book / f"{e.chapter}.ipynb").exists() for e in cat.values()), sorted({e.chapter for e in cat.values()})
    # the listing
    assert figures.main(["--list"]) == 0
    listed = [line.split()[0] for line in capsys.readouterr().out.splitlines()]
    assert listed == list(cat)
    # Fig. 3(d) from the committed grid: the runs drawn are the grid's complete seeds, all real images
    f = figures.book_figure("fig3d-fashion")
    assert f.rows and all(r.data["name"] == REAL_IMAGE_GRIDS["fig3d-fashion"]["dataset"] and r.data["real"] for r in f.rows)
    plt.close("all")
    # one cheap figure through the command line (a fresh interpreter, as the book's captions say)
    env = dict(os.environ, PYTHONPATH=str(book.parent), MPLBACKEND="Agg")
    out = subprocess.run([sys.executable, "-m", "fedtrain.figures", "fedhdp-table-fashion"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    text = (tmp_path / "fedhdp-table-fashion.md").read_text()
    assert text.startswith("**noniid-fashion:") and "| Alg | r |" in text and "DP-FedAvg+Ditto" in text
    with pytest.raises(SystemExit):
        figures.main(["no-such-figure"])
