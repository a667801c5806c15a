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


# --------------------------------------------------------------------------------------------------
# Fig. 6 on the real-image grid (fedtrain.figures.plot_fig6, plot_fig6_lambda_profile), planted rows
# --------------------------------------------------------------------------------------------------
def _fashion_rows(keep=lambda c: True):
    """Planted fig6-fashion results: MR-MTL best at λ = 0.1 (inside the grid), seed 1 0.004 above seed 0."""
    from fedtrain.fig6_checks import fig6_kind

    base = {"Local": 0.60, "FedAvg": 0.40, "IFCA": 0.75, "IFCA → Local": 0.60, "MR-MTL": 0.70,
            "IFCA → MR-MTL": 0.74}
    rows = []
    for c in deep_grid("fig6-fashion"):
        if keep(c):
            v = (base[fig6_kind(c)] - 0.1 * c.dataset_options["mask_ratio"] - (0.0 if c.lam in (0.0, 0.1) else 0.03)
                 - (0.1 if math.isfinite(c.eps) else 0.0) + (0.002 if c.seed else -0.002))
            rows.append(fake_result(c, v, metric="accuracy", num_silos=40,
                                    data={"name": c.dataset, "real": True, "num_silos": 40, "train_size": 20000,
                                          "info": {"num_groups": 4}}))
    return rows


def test_plot_fig6_panels_lines_best_lambda_and_seed_counts():
    from fedtrain.figures import fig6_setting_text, plot_fig6

    # both seeds at mask 0, seed 0 only at the other masks
    rows = _fashion_rows(lambda c: c.seed == 0 or c.dataset_options["mask_ratio"] == 0.0)
    fig = plot_fig6(rows)
    axes = fig.axes
    assert [a.get_title().split("\n")[0] for a in axes] == ["ε = 4 per silo", "non-private"]
    assert all(a.get_title().endswith("1–2 seeds per point") for a in axes)
    lines = {l.get_label(): l for l in axes[0].get_lines() if not l.get_label().startswith("_")}
    assert set(lines) == {"Local", "FedAvg", "IFCA", "MR-MTL", "IFCA → Local", "IFCA → MR-MTL"}
    assert lines["IFCA → MR-MTL"].get_linestyle() == "--" and lines["MR-MTL"].get_linestyle() == "-"
    assert list(lines["MR-MTL"].get_ydata()) == pytest.approx([0.6, 0.573, 0.548], abs=1e-9)  # mean of the seeds
    texts = [t.get_text() for t in axes[0].texts]
    assert texts.count("λ=0.1") == 6  # the best λ of MR-MTL and IFCA → MR-MTL at each mask ratio
    foot = fig.texts[-1].get_text()
    assert foot.replace("\n", " ") == fig6_setting_text(rows) and "\n" in foot  # wrapped to the figure's width
    for part in ("rotated-masked-fashion (real data)", "40 silos in 4 rotation groups", "500 training images per silo",
                 "T=40 rounds", "η=0.1", "B=100", "C=1", "δ=1e-07", "{4, ∞ (no DP)}", "RDP accountant",
                 "add/remove-one", "seeds present: 0, 1"):
        assert part in foot, part
    # one seed everywhere: no error bars, open markers, said in the titles
    one = plot_fig6(_fashion_rows(lambda c: c.seed == 0 and c.dataset_options["mask_ratio"] == 0.0))
    assert all(a.get_title().endswith("1 seed per point") for a in one.axes)
    assert "seeds present: 0" in one.texts[-1].get_text()
    # a privacy level with no run yet
    empty = plot_fig6(_fashion_rows(lambda c: c.eps == 4.0), eps_values=[4.0, math.inf])
    assert any(t.get_text() == "no runs yet" for t in empty.axes[1].texts)
    with pytest.raises(ValueError, match="at least one run"):
        plot_fig6([])
    nothing = plot_fig6([], eps_values=[4.0, math.inf])  # a grid with no complete seed yet
    assert all(any(t.get_text() == "no runs yet" for t in a.texts) for a in nothing.axes)


def test_plot_fig6_lambda_profile_marks_the_best_lambda():
    from fedtrain.figures import plot_fig6_lambda_profile

    rows = _fashion_rows(lambda c: c.dataset_options["mask_ratio"] in (0.0, 0.5))
    fig = plot_fig6_lambda_profile(rows, eps_values=[4.0])
    (ax,) = [a for a in fig.axes]
    lams = DEEP_FIGURES["fig6-fashion"]["full"]["lams"]
    assert 0.1 in lams and min(lams) < 0.1 < max(lams)  # the planted best λ lies inside the grid
    run = sorted({r.config.lam for r in rows if r.config.lam > 0})  # the grid's λ and the cells' further λ
    assert set(lams) <= set(run) and [t.get_text() for t in ax.get_xticklabels()] == ["0"] + [f"{lam:g}" for lam in run]
    stars = [l for l in ax.get_lines() if l.get_marker() == "*"]
    assert len(stars) == 4  # (MR-MTL, IFCA → MR-MTL) x 2 mask ratios
    assert all(s.get_xdata()[0] == pytest.approx(math.log10(0.1)) for s in stars)
    assert ax.get_title().endswith("2 seeds per point")
    with pytest.raises(ValueError, match="λ > 0"):
        plot_fig6_lambda_profile([r for r in rows if r.config.method == "local"])
    nothing = plot_fig6_lambda_profile([], eps_values=[4.0])
    assert any(t.get_text() == "no runs yet" for t in nothing.axes[0].texts)
    # two panels: the further λ (run at ε = 4 only) is a tick of the ε = 4 panel alone, on one shared x range
    both = plot_fig6_lambda_profile(_fashion_rows(lambda c: c.dataset_options["mask_ratio"] == 0.0))
    private, open_ = both.axes[:2]
    extra = sorted(set(run) - set(lams))
    assert extra and all(f"{lam:g}" in [t.get_text() for t in private.get_xticklabels()] for lam in extra)
    assert [t.get_text() for t in open_.get_xticklabels()] == ["0"] + [f"{lam:g}" for lam in lams]
    assert private.get_xlim() == open_.get_xlim()
