"""The regime probes' driver (fedtrain.regime): its bad-input errors, the decomposition and the choice of cells."""
from __future__ import annotations

import math
import subprocess
import sys

import pytest

from fedtrain import regime


@pytest.mark.parametrize("values, fragment", [([], "empty"), ([0.1, float("nan")], "nan"),
                                              ([0.1, math.inf], "inf"), ([0.0], "0.0"), ([-0.3], "-0.3"),
                                              (["a"], "'a'")])
def test_grid_rejects_empty_nonfinite_nonpositive(values, fragment):
    with pytest.raises(ValueError, match="lrs must") as err:
        regime.check_positive_grid("lrs", values)
    assert fragment in str(err.value)
    assert regime.check_positive_grid("clips", ["1", 3, 8.0]) == (1.0, 3.0, 8.0)


@pytest.mark.parametrize("eps", [math.inf, float("nan"), "inf", 1e3, "x"])
def test_clip_only_eps_must_be_finite_and_large(eps):
    with pytest.raises(ValueError, match="clip_only_eps must"):
        regime.check_clip_only_eps(eps)
    assert regime.check_clip_only_eps("1e6") == 1e6


@pytest.mark.parametrize("argv, name", [(["--lrs", ""], "--lrs"), (["--lrs", "0.1,0"], "--lrs"),
                                        (["--clips", "1,nan"], "--clips"), (["--clip-only-eps", "inf"], "--clip-only-eps")])
def test_cli_bad_input_is_one_line_naming_the_argument(argv, name, tmp_path):
    out = subprocess.run([sys.executable, "-m", "fedtrain.regime", "--store", str(tmp_path), *argv],
                         capture_output=True, text=True)
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: " + name), out.stderr


def test_controls_differ_only_in_eps_and_no_dp_has_no_clip():
    c = regime.controls(0.3, 8.0, train_per_silo=1500, mask_ratio=0.5)
    assert (c["nodp"].eps, c["clip"].eps, c["private"].eps) == (math.inf, regime.CLIP_ONLY_EPS, regime.PRIVATE_EPS)
    assert c["clip"].replace(eps=regime.PRIVATE_EPS) == c["private"]
    assert c["clip"].clip == 8.0 and c["nodp"].clip == 1.0  # no DP: the engine clips nothing; one run per η
    assert c["private"].dataset_options == {"num_silos": 8, "train_per_silo": 1500, "mask_ratio": 0.5}
    assert c["private"].method == "local" and c["private"].batch_size == 100 and c["private"].delta == 1e-7


def test_noise_bound_decomposition():
    assert regime.decompose({"nodp": 0.70, "clip": 0.46, "private": 0.43}) == pytest.approx(
        {"clip_cost": 0.24, "noise_cost": 0.03})
    assert not regime.noise_bound({"nodp": 0.70, "clip": 0.46, "private": 0.43})  # the committed grid's cell
    assert regime.noise_bound({"nodp": 0.70, "clip": 0.68, "private": 0.60})
    assert not regime.noise_bound({"nodp": 0.70, "clip": math.nan, "private": 0.60})  # a diverged control


class FakeStore:
    """A store holding a made-up accuracy per (η, c, ε) of phase A's cells."""

    def __init__(self, acc):
        self.acc = acc

    def _look(self, c):
        o = c.dataset_options
        if o["train_per_silo"] != 500 or o["mask_ratio"] != 0.0:
            return None
        return self.acc(c.lr, c.clip, c.eps)

    def has(self, c):
        return self._look(c) is not None

    def get(self, c):
        v = self._look(c)
        if v is None:
            return None
        return type("Row", (), {"test_metric": v, "noise_multipliers": [1.0], "eps_spent": [c.eps],
                                "wall_time": 1.0})()


def test_phases_pick_the_best_private_cells_and_a_noise_bound_one():
    empty = FakeStore(lambda lr, c, eps: None)
    phases = dict(regime.probe_phases(empty))
    assert len({c.key() for c in phases["A"]}) == 3 + 2 * 9  # η within the paper's grid; no DP once per η
    assert {c.lr for c in phases["D"]} == {1.0} and len({c.key() for c in phases["D"]}) == 1 + 2 * 3
    assert phases["B1"] == phases["B2"] == [] == phases["C2"]  # chosen only once A is done
    assert {(c.lr, c.clip) for c in phases["C"] if math.isfinite(c.eps)} == {(0.1, 1.0)}

    def acc(lr, c, eps):  # private best at (0.3, 3) and (0.1, 3); only (0.03, 8) is noise-bound
        if math.isinf(eps):
            return 0.75
        clip_only = 0.74 if (lr, c) == (0.03, 8.0) else 0.60
        private = {(0.3, 3.0): 0.58, (0.1, 3.0): 0.57, (0.03, 8.0): 0.55}.get((lr, c), 0.50)
        return clip_only if eps == regime.CLIP_ONLY_EPS else private

    store = FakeStore(acc)
    assert regime.best_cells(store, regime.LR_PROBES, regime.CLIP_PROBES) == [(0.03, 8.0), (0.3, 3.0), (0.1, 3.0)]
    phases = dict(regime.probe_phases(store))
    assert {(c.lr, c.clip, c.dataset_options["train_per_silo"]) for c in phases["B1"] if math.isfinite(c.eps)} == {
        (0.03, 8.0, 1500)}
    assert {(c.lr, c.clip, c.dataset_options["train_per_silo"]) for c in phases["B2"] if math.isfinite(c.eps)} == {
        (0.3, 3.0, 1500), (0.1, 3.0, 1500)}

    def acc2(lr, c, eps):  # as acc, and (0.1, 8) noise-bound too, with a poor private accuracy
        return 0.40 if (lr, c, eps) == (0.1, 8.0, regime.PRIVATE_EPS) else acc(lr, c, eps)

    b2 = dict(regime.probe_phases(FakeStore(acc2)))["B2"]
    cells = [(c.lr, c.clip) for c in b2 if math.isfinite(c.eps) and c.eps != regime.CLIP_ONLY_EPS]
    assert cells == [(0.1, 8.0), (0.3, 3.0), (0.1, 3.0)]  # the other noise-bound cell before the best private ones
    assert {(c.lr, c.clip) for c in phases["C"] if math.isfinite(c.eps)} == {(0.03, 8.0)}
    assert {(c.lr, c.clip) for c in phases["C2"] if math.isfinite(c.eps)} == {(0.3, 3.0), (0.1, 3.0), (0.1, 1.0)}
    rows = regime.summary_rows(store)
    assert len(rows) == 12 and [(r["lr"], r["clip"]) for r in rows if r["noise_bound"]] == [(0.03, 8.0)]


def _row(lr, clip, nodp, clip_only, private, per=500, mask=0.0):
    acc = {"nodp": nodp, "clip": clip_only, "private": private}
    return {"train_per_silo": per, "mask_ratio": mask, "lr": lr, "clip": clip, "acc_private": private,
            "noise_bound": regime.noise_bound(acc)}


def test_choose_prefers_noise_bound_within_the_papers_eta_grid():
    rows = [_row(0.3, 1.0, 0.73, 0.64, 0.59),  # best private, clipping-bound
            _row(0.1, 8.0, 0.73, 0.70, 0.55),  # noise-bound
            _row(0.03, 8.0, 0.70, 0.69, 0.50),  # noise-bound, worse
            _row(1.0, 8.0, 0.74, 0.73, 0.60),  # noise-bound and best, but η = 1 is outside the paper's grid
            _row(0.3, 8.0, 0.60, 0.58, 0.40, mask=0.5)]  # a masked cell does not choose
    got = regime.choose(rows)
    assert (got["lr"], got["clip"], got["noise_bound"]) == (0.1, 8.0, True)
    got = regime.choose(rows[:1])
    assert (got["lr"], got["clip"], got["noise_bound"]) == (0.3, 1.0, False) and "no probed setting" in got["why"]
    with pytest.raises(ValueError, match="rows must"):
        regime.choose(rows[3:])
