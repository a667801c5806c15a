"""The noise-bound real-image grids: the validation hold-out, the tuning grids and the tuned grids they define."""
from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

from fedtrain.data.registry import load_dataset
from fedtrain.data.split import hold_out_validation
from fedtrain.presets import REAL_IMAGE_GRIDS, deep_grid, method_family, tuned_settings


def _standin():
    return load_dataset("rotated-masked-standin", num_silos=4, train_per_silo=50, test_per_silo=10, image_size=8)


def test_validation_holds_out_training_records_and_drops_the_test_records():
    data = _standin()
    val = hold_out_validation(data, 0.2)
    assert list(val.train_sizes) == [40] * 4 and list(val.test_sizes) == [10] * 4
    for k in range(4):
        train_rows = {r.tobytes() for r in data.train_x[k]}
        test_rows = {r.tobytes() for r in data.test_x[k]}
        held = {r.tobytes() for r in val.test_x[k]}
        kept = {r.tobytes() for r in val.train_x[k]}
        assert held <= train_rows and kept <= train_rows and not held & kept
        assert not held & test_rows  # the test records are never read for validation
    again = hold_out_validation(data, 0.2)  # the same records every time: every run of a tuning grid scores on them
    assert all(np.array_equal(a, b) for a, b in zip(val.test_x, again.test_x))
    assert val.info["validation"] == 0.2 and val.identity() == data.identity()


def test_load_dataset_takes_validation_as_an_option():
    val = load_dataset("rotated-masked-standin", num_silos=4, train_per_silo=50, test_per_silo=10, image_size=8,
                       validation=0.5)
    assert list(val.train_sizes) == [25] * 4 and list(val.test_sizes) == [25] * 4


@pytest.mark.parametrize("bad", [0.0, 1.0, -0.1, math.nan, math.inf])
def test_a_bad_validation_fraction_is_a_one_line_error_naming_it(bad):
    with pytest.raises(ValueError, match="validation"):
        hold_out_validation(_standin(), bad)


def _rows(configs, score):
    return [SimpleNamespace(config=c, test_metric=score(c)) for c in configs]


def test_tuning_grid_runs_every_configuration_at_each_eta_of_its_privacy_on_the_validation_split():
    for name, methods in (("fig6-fashion-tune", 10), ("fig3d-fashion-tune", 7)):
        g = REAL_IMAGE_GRIDS[name]
        cs = deep_grid(name)
        beyond = sum(len(v) for v in g.get("extra_lrs", {}).values())  # private runs past the bracket's top
        assert len(cs) == methods * (len(g["lrs"]["private"]) + len(g["lrs"]["nonprivate"])) + beyond
        assert len({c.key() for c in cs}) == len(cs)
        for c in cs:
            assert c.clip == 8.0 and c.dataset_options["validation"] == 0.2
            assert c.lr in g["lrs"]["private" if math.isfinite(c.eps) else "nonprivate"] + (
                g.get("extra_lrs", {}).get(c.method, ()) if math.isfinite(c.eps) else ())
            if "select_every" in g and c.method in ("ifca", "ifca-mrmtl"):
                assert c.options.select_every == 2
    assert {c.delta for c in deep_grid("fig3d-fashion-tune")} == {1e-4}  # the paper's Fig. 3(d) setting (App. C.4)


def test_tuned_settings_choose_the_best_eta_per_method_and_lambda_ties_to_the_smaller():
    cs = deep_grid("fig6-fashion-tune")
    # validation accuracy peaks at η = 0.03 for every private run except MR-MTL λ = 1 (tied: the smaller η wins)
    def score(c):
        if c.method == "mrmtl" and c.lam == 1.0 and math.isfinite(c.eps):
            return 0.5
        return 0.4 + (0.1 if c.lr in (0.03, 0.3) else 0.0) + 0.01 * c.lam
    lrs, best = tuned_settings(_rows(cs, score))
    assert lrs[("mrmtl", 1.0, True)] == 0.01 and lrs[("mrmtl", 0.1, True)] == 0.03
    assert lrs[("local", 0.0, False)] == 0.3 and lrs[("ifca-local", 0.0, True)] == 0.03
    assert best["mrmtl"] == (0.1, 0.03) and best["ifca-mrmtl"] == (1.0, 0.03) and best["ifca-local"] == (0.0, 0.03)
    with pytest.raises(ValueError, match="no finite metric"):
        tuned_settings(_rows(cs, lambda c: math.nan))


def test_tuned_grid_takes_each_eta_from_its_tuning_grid_and_adds_the_clip_only_controls():
    with pytest.raises(ValueError, match="fig6-fashion-tune"):
        deep_grid("fig6-fashion-tuned")
    tune = _rows(deep_grid("fig6-fashion-tune"), lambda c: 0.5 + (0.1 if c.lr in (0.01, 0.3) else 0.0) - 0.01 * c.lam)
    cs = deep_grid("fig6-fashion-tuned", tuning=tune)
    g = REAL_IMAGE_GRIDS["fig6-fashion-tuned"]
    controls = [c for c in cs if c.eps == g["clip_only_eps"]]
    grid = [c for c in cs if c.eps != g["clip_only_eps"]]
    assert len(grid) == 10 * 3 * 2 * 2 and len(controls) == 6 * 3 * 2 and len({c.key() for c in cs}) == len(cs)
    assert all(c.lr == (0.01 if math.isfinite(c.eps) else 0.3) for c in cs)
    # one control per method family at its best λ (the smallest, here), at every mask ratio and seed
    assert sorted({(method_family(c), c.lam) for c in controls}) == sorted(
        {("local", 0.0), ("fedavg", 0.0), ("ifca", 0.0), ("ifca-local", 0.0), ("mrmtl", 0.01), ("ifca-mrmtl", 0.01)})
    assert {(c.dataset_options["mask_ratio"], c.seed) for c in controls} == {(m, s) for m in (0.0, 0.25, 0.5)
                                                                             for s in (0, 1)}
    assert all(c.clip == 8.0 and "validation" not in c.dataset_options for c in cs)


def test_step_controls_repeat_the_grids_run_without_dp_at_each_clip_only_controls_eta():
    from fedtrain.deep_grids import step_controls

    # private runs best at η = 0.01, runs without DP at 0.3, except MR-MTL λ = 1 best at 0.3 with DP too
    tune = _rows(deep_grid("fig6-fashion-tune"),
                 lambda c: 0.5 + (0.1 if c.lr in (0.01, 0.3) else 0.0) - 0.01 * c.lam
                 + (0.2 if c.method == "mrmtl" and c.lam == 1.0 and c.lr == 0.3 else 0.0))
    tuned = deep_grid("fig6-fashion-tuned", tuning=tune)
    ce = REAL_IMAGE_GRIDS["fig6-fashion-tuned"]["clip_only_eps"]
    steps = deep_grid("fig6-fashion-steps", tuning=tune)
    assert steps == step_controls(tuned, ce) and REAL_IMAGE_GRIDS["fig6-fashion-steps"]["eps"] == (math.inf,)
    controls = [c for c in tuned if c.eps == ce]
    by_sig = {(method_family(c), c.lam, c.seed, c.dataset_options["mask_ratio"]): c for c in controls}
    # one per control whose η differs from its run without DP: MR-MTL's best is λ = 1 at η = 0.3 = its no-DP η
    assert len(steps) == len(controls) - 6 and len({c.key() for c in steps}) == len(steps)
    assert not any(c.method == "mrmtl" for c in steps) and by_sig[("mrmtl", 1.0, 0, 0.0)].lr == 0.3
    nodp = {c.key(): c for c in tuned if math.isinf(c.eps)}
    for s in steps:
        control = by_sig[(method_family(s), s.lam, s.seed, s.dataset_options["mask_ratio"])]
        assert math.isinf(s.eps) and s.lr == control.lr == 0.01
        base = s.replace(lr=0.3)  # the grid's own run without DP, differing in η only
        assert base.key() in nodp and s.key() not in nodp
    with pytest.raises(ValueError, match="no run without DP"):
        step_controls([c for c in tuned if not math.isinf(c.eps)], ce)


def test_a_tuned_grid_is_undefined_until_its_tuning_grid_is_committed(tmp_path):
    import json

    from fedtrain.book_results import grid_configs
    from fedtrain.results import DEFAULT_RESULTS_DIR

    with pytest.raises(ValueError, match="fig3d-fashion-tune"):  # no store at all
        grid_configs("fig3d-fashion-tuned", tmp_path)
    manifest = json.loads((DEFAULT_RESULTS_DIR / "MANIFEST.json").read_text())
    manifest["files"] = {}
    (tmp_path / "MANIFEST.json").write_text(json.dumps(manifest))
    with pytest.raises(ValueError, match="takes its η from grid fig3d-fashion-tune"):  # a store without the tuning rows
        grid_configs("fig3d-fashion-tuned", tmp_path)
