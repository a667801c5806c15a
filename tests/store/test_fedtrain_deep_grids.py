"""The deep chapter's grids, labels, tables and figure (fedtrain.presets.deep_grid, fedtrain.analysis,
fedtrain.figures.plot_mask_ratio_sweep)."""
from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")
import pytest  # noqa: E402

from fedtrain.analysis import best_by_setting, warm_start_label  # noqa: E402
from fedtrain.config import RunConfig  # noqa: E402
from fedtrain.figures import plot_mask_ratio_sweep  # noqa: E402
from fedtrain.presets import DEEP_FIGURES, deep_grid, deep_grid_note  # noqa: E402
from fedtrain.testing import fake_result  # noqa: E402


def test_fig6_grid_covers_methods_ratios_and_privacy():
    g = DEEP_FIGURES["fig6"]["reduced"]
    cs = deep_grid("fig6", full=False)
    assert {c.method for c in cs} == {"local", "fedavg", "ifca", "mrmtl", "ifca-mrmtl"}
    assert {c.dataset_options["mask_ratio"] for c in cs} == set(g["mask_ratios"])
    assert {c.eps for c in cs} == set(g["eps"]) and {c.model for c in cs} == {g["model"]}
    # IFCA-warm-started local training is ifca-mrmtl with lambda = 0
    assert any(c.method == "ifca-mrmtl" and c.lam == 0 for c in cs)
    assert all(c.select_frac == g["select_frac"] for c in cs if c.method.startswith("ifca"))
    full = deep_grid("fig6", full=True)
    assert {c.model for c in full} == {"convnet"} and {c.rounds for c in full} == {200}
    assert {c.batch_size for c in full} == {100} and {c.num_clusters for c in full if c.method == "ifca"} == {4}
    assert "reduced scale: linear model" in deep_grid_note("fig6", full=False)
    with pytest.raises(ValueError, match="figure must be one of"):
        deep_grid("fig7")


def test_fig6_convnet_grid_is_the_paper_model_on_the_reduced_data():
    cs = deep_grid("fig6-convnet", full=False)
    reduced = DEEP_FIGURES["fig6"]["reduced"]
    assert {c.model for c in cs} == {"convnet"} and {c.dataset for c in cs} == {reduced["dataset"]}
    assert {c.dataset_options["mask_ratio"] for c in cs} == {0.0} and {c.seed for c in cs} == {0}
    assert {c.method for c in cs} == {"local", "fedavg", "ifca", "mrmtl", "ifca-mrmtl"}
    assert not any(c.method == "ifca-mrmtl" and c.lam == 0 for c in cs)  # no IFCA -> Local here
    assert len(cs) == 5 * 2  # five methods, one lambda, eps in {8, inf}
    assert deep_grid("fig6-convnet", full=True) == cs
    assert "reduced scale: convnet model" in deep_grid_note("fig6-convnet", full=False)


def test_fig3d_grid():
    cs = deep_grid("fig3d", full=False)
    assert {c.method for c in cs} == {"local", "fedavg", "finetune", "mrmtl", "ifca"}
    assert {c.prox_mode for c in cs if c.method == "mrmtl"} == {"post-noise"}
    assert {c.clip for c in deep_grid("fig3d", full=True)} == {8.0}  # App. C.4, CIFAR-10


def test_warm_start_labels():
    base = dict(dataset="x", select_frac=0.05)
    assert warm_start_label(RunConfig(method="ifca-mrmtl", lam=0.0, **base)) == "IFCA (5% sel.) → Local"
    assert warm_start_label(RunConfig(method="ifca-mrmtl", lam=0.1, **base)) == "IFCA (5% sel.) → MR-MTL"
    assert warm_start_label(RunConfig(method="ifca", **base)) == "IFCA (5% sel.)"
    assert warm_start_label(RunConfig(dataset="x", method="fedavg")) == "FedAvg"


def _rows():
    rows = []
    for ratio in (0.0, 0.5):
        for method, lam, acc in [("local", 0.0, 0.6), ("mrmtl", 0.1, 0.7), ("mrmtl", 1.0, 0.5),
                                 ("ifca-mrmtl", 0.0, 0.62), ("ifca-mrmtl", 0.1, 0.8 - ratio)]:
            for seed, noise in ((0, 0.01), (1, -0.01)):
                c = RunConfig(dataset="rotated-masked-digits", method=method, lam=lam, eps=8.0, seed=seed,
                              dataset_options={"mask_ratio": ratio})
                rows.append(fake_result(c, acc + noise, metric="accuracy"))
    return rows


def test_best_by_setting_picks_best_lambda_per_setting():
    tab = best_by_setting(_rows(), lambda c: c.dataset_options["mask_ratio"], label=warm_start_label)
    assert tab[("MR-MTL", 0.0)]["lam"] == 0.1 and tab[("MR-MTL", 0.0)]["mean"] == pytest.approx(0.7)
    assert tab[("IFCA (10% sel.) → MR-MTL", 0.5)]["mean"] == pytest.approx(0.3)
    assert tab[("IFCA (10% sel.) → Local", 0.0)]["mean"] == pytest.approx(0.62)
    assert tab[("Local", 0.5)]["std"] == pytest.approx(0.01 * math.sqrt(2))
    assert best_by_setting([], lambda c: 0) == {}


def test_plot_mask_ratio_sweep():
    fig = plot_mask_ratio_sweep(_rows(), 8.0, note="; test")
    ax = fig.axes[0]
    assert ax.get_xlabel().startswith("mask ratio") and "accuracy" in ax.get_ylabel()
    assert "ε=8" in ax.get_title() and "; test" in ax.get_title()
    assert len(ax.get_legend().get_texts()) == 4
    with pytest.raises(ValueError, match="eps must be a privacy level"):
        plot_mask_ratio_sweep(_rows(), 1.0)


def test_co_clustering_agreement():
    from fedtrain.analysis import co_clustering_agreement

    assert co_clustering_agreement([1, 1, 0, 0], [0, 0, 3, 3]) == 1.0  # relabelled: recovered
    # silo 2 in the wrong cluster: (0,2), (1,2) together and (2,3) apart disagree, 3 of 6 pairs
    assert co_clustering_agreement([0, 0, 0, 1], [0, 0, 1, 1]) == 0.5
    assert co_clustering_agreement([0, 1, 2, 3], [0, 0, 0, 0]) == 0.0
    with pytest.raises(ValueError, match="assign and groups"):
        co_clustering_agreement([0, 1], [0, 1, 2])
