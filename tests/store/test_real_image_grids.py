"""The real-image grids (fedtrain.presets.REAL_IMAGE_GRIDS, FEDHDP_GRIDS): what they contain, and FedHDP's
noise multiplier calibrated to the paper's ε for the rounds run (checked against the accountant)."""
from __future__ import annotations

import math

import pytest

from fedtrain.clientdp.accounting import group_epsilon
from fedtrain.presets import (DEEP_FIGURES, FEDHDP_GRIDS, REAL_IMAGE_GRIDS, deep_grid, deep_grid_note, fedhdp_grid,
                              fedhdp_noise_for_epsilon)


def test_fig6_fashion_grid_has_every_method_mask_privacy_level_and_seed():
    g = REAL_IMAGE_GRIDS["fig6-fashion"]
    assert DEEP_FIGURES["fig6-fashion"]["full"] is g and DEEP_FIGURES["fig6-fashion"]["reduced"] is g
    cs = deep_grid("fig6-fashion")
    cells = {(c.dataset_options["mask_ratio"], c.eps, c.seed) for c in cs}
    assert len(cells) == len(g["mask_ratios"]) * len(g["eps"]) * len(g["seeds"]) >= 3 * 2 * 2
    assert 0.0 in g["mask_ratios"] and math.inf in g["eps"] and any(e < math.inf for e in g["eps"])
    reach = {(ratio, eps): lams for ratio, eps, lams in g["extra_lams"]["ifca-mrmtl"]}  # cells reaching further
    assert set(g["extra_lams"]) == {"ifca-mrmtl"} and reach == {(0.0, 4.0): (3.0, 10.0)}
    for cell in cells:  # local, fedavg, ifca; MR-MTL; warm-started λ ∪ {0} (and the cell's further λ)
        assert sum((c.dataset_options["mask_ratio"], c.eps, c.seed) == cell for c in cs) == (
            3 + len(g["lams"]) + len(g["lams"]) + 1 + len(reach.get(cell[:2], ())))
    for c in cs:
        assert (c.model, c.batch_size, c.clip, c.local_epochs, c.rounds) == ("convnet", 100, 1.0, 1, g["rounds"])
        assert c.dataset == "rotated-masked-fashion" and c.dataset_options["train_per_silo"] >= 500
        if c.method in ("ifca", "ifca-mrmtl"):
            assert c.options.select_frac * c.rounds >= 10 and c.options.num_clusters == 4  # the paper's 10 selections
    assert {c.lam for c in cs if c.method == "ifca-mrmtl"} == {0.0, *g["lams"], 3.0, 10.0}
    assert {c.lam for c in cs if c.method == "ifca-mrmtl" and c.lam > max(g["lams"])} == {3.0, 10.0}
    assert {(c.dataset_options["mask_ratio"], c.eps) for c in cs if c.lam > max(g["lams"])} == {(0.0, 4.0)}
    assert "real Fashion-MNIST" in deep_grid_note("fig6-fashion") and "R=40" in deep_grid_note("fig6-fashion")


def test_fig3d_fashion_grid():
    cs = deep_grid("fig3d-fashion")
    assert {c.method for c in cs} == {"local", "fedavg", "finetune", "mrmtl", "ifca"}
    assert {c.dataset for c in cs} == {"hetero-fashion"} and {c.model for c in cs} == {"convnet"}
    assert len(cs) == 70 and {c.rounds for c in cs} == {10}  # 200 DP-SGD steps per ~2,000-image silo at B = 100
    assert {c.eps for c in cs} == {1.0, 2.0, 4.0, 8.0, math.inf} and {c.seed for c in cs} == {0, 1}


def test_fedhdp_noise_is_calibrated_to_the_papers_epsilon():
    z500 = fedhdp_noise_for_epsilon(3.6, sample_rate=0.05, rounds=500, delta=1e-4)
    assert z500 == pytest.approx(1.5, abs=0.005)  # the paper: z = 1.5, q = 0.05, 500 rounds -> 3.6
    g = FEDHDP_GRIDS["claims-fashion"]
    z = fedhdp_noise_for_epsilon(g["target_epsilon"], sample_rate=g["sample_rate"], rounds=g["rounds"],
                                 delta=g["delta"])
    eps = group_epsilon(z, g["sample_rate"], g["rounds"], g["delta"])
    assert 3.59 < eps <= 3.6  # rounded up: never above the target
    assert group_epsilon(z - 0.002, g["sample_rate"], g["rounds"], g["delta"]) > 3.6
    with pytest.raises(ValueError, match="sample_rate"):
        fedhdp_noise_for_epsilon(3.6, sample_rate=1.5, rounds=10, delta=1e-4)
    with pytest.raises(ValueError, match="rounds"):
        fedhdp_noise_for_epsilon(3.6, sample_rate=0.05, rounds=0, delta=1e-4)


def test_fedhdp_claims_grid():
    g = FEDHDP_GRIDS["claims-fashion"]
    cs = fedhdp_grid("claims-fashion")
    assert len(cs) == len(g["datasets"]) * len(g["seeds"]) * (3 + len(g["ratios"]))
    assert {c.dataset for c in cs} == {"noniid-fashion", "noniid-fashion-skewed"}
    assert {c.model for c in cs} == {"fc"} and {c.hidden for c in cs} == {50}  # Table 6
    assert len({c.noise_multiplier for c in cs}) == 1 and {c.rounds for c in cs} == {g["rounds"]}
    assert sorted({c.ratio for c in cs if c.method == "fedhdp"}) == sorted(g["ratios"])
    with pytest.raises(ValueError, match="name must be one of"):
        fedhdp_grid("nope")


def test_cifar_standin_caption_says_toy_or_paper_size():
    assert "toy size (~20 images/silo; paper ~1,670)" in deep_grid_note("fig3d", full=False)
    assert "paper size (~1,666 images/silo)" in deep_grid_note("fig3d", full=True)
