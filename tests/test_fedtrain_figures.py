"""Plot functions and the helpers that choose what they plot (fedtrain.figures), on tiny real runs."""
from __future__ import annotations

import math

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
    plot_lambda_sweep,
    plot_privacy_utility,
    plot_theory_vs_training,
    plot_training_curves,
    privacy_table,
)
from fedtrain.sweep import book_grid, expand_grid, run_sweep  # noqa: E402

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


def _fake(method, eps, lam, lr, seed, value, metric="accuracy", **cfg):
    return {"key": f"{method}{eps}{lam}{lr}{seed}", "config": dict(method=method, eps=eps, lam=lam, lr=lr, seed=seed,
                                                                  rounds=5, batch_size=2, clip=1.0, dataset="x", **cfg),
            "result": {"metric": metric, "test_metric": value, "noise_multipliers": [1.0], "eps_spent": [eps],
                       "steps": [3], "accountant": "rdp", "delta": [1e-5]},
            "dataset": {"name": "x", "real": True}}


def test_method_labels():
    assert method_label({"method": "ifca", "select_frac": 0.1}) == "IFCA (10% sel.)"
    assert method_label({"method": "ifca", "select_frac": 1.0}) == "IFCA (every round)"
    assert method_label({"method": "finetune", "finetune_frac": 0.5}) == "Finetune (50% FedAvg)"
    assert method_label({"method": "mrmtl"}) == "MR-MTL"


def test_best_lambda_picks_direction_of_metric():
    acc = [_fake("mrmtl", 1.0, lam, 0.1, s, v) for lam, vals in ((0.1, (0.5, 0.7)), (1.0, (0.8, 0.8))) for s, v in
           enumerate(vals)]
    (t,) = best_lambda_table(acc)
    assert (t["lam"], t["mean"], t["n"]) == (1.0, 0.8, 2)  # accuracy: higher wins
    mse = [dict(r, result={**r["result"], "metric": "mse"}) for r in acc]
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
    curves = curves_by_method([r for r in rows if r["config"]["method"] in ("local", "fedavg", "finetune")])
    assert len(curves) == 6
    c = curves[("Local", 2.0)]
    np.testing.assert_array_equal(c["rounds"], [2, 4])
    assert c["n"] == 2 and np.all(c["std"] >= 0)
    fig = plot_training_curves([r for r in rows if r["config"]["method"] in ("local", "fedavg")], note=" (test)")
    ax = fig.axes[0]
    assert len(ax.get_lines()) == 4 and "synthetic stand-in" in ax.get_title() and "2 seeds" in ax.get_title()
    assert ax.get_xlabel() == "training round" and "MSE" in ax.get_ylabel()
    plt.close(fig)
    with pytest.raises(ValueError, match="eval_every"):
        curves_by_method([_fake("local", 1.0, 0.0, 0.1, 0, 0.5, curve=None)])


def test_privacy_utility_and_lambda_plots(rows):
    fig = plot_privacy_utility(rows)
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["Local", "FedAvg", "Finetune (50% FedAvg)", "MR-MTL", "Ditto"]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["2", "∞\n(non-private)"]
    plt.close(fig)
    fig = plot_lambda_sweep(rows, [2.0, math.inf])
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and "λ" in ax.get_xlabel() and "best λ" in ax.get_title()
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
            assert {c.seed for c in reduced} == {0, 1} and max(c.rounds for c in reduced) <= 40
            full = book_grid(fig, ds, full=True)
            assert {c.seed for c in full} == set(range(5)) and len(full) >= len(reduced)
    with pytest.raises(ValueError, match="figure must be one of"):
        book_grid("fig9", "school")
