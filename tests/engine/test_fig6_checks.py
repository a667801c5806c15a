"""fedtrain.fig6_checks: Fig. 6's readings hold on a planted grid that has them, and each fails when its effect
is planted away."""
from __future__ import annotations

import math
from types import SimpleNamespace

import pytest

from fedtrain.fig6_checks import fig6_checks, fig6_kind, fig6_table

LAMS = (0.1, 1.0, 10.0)
RATIOS = (0.0, 0.25, 0.5)


def _run(method, lam, ratio, value, seed, eps=4.0):
    cfg = SimpleNamespace(method=method, lam=lam, lr=0.1, eps=eps, seed=seed,
                          dataset_options={"mask_ratio": ratio})
    return SimpleNamespace(config=cfg, test_metric=value, diverged=False, metric="accuracy")


def _grid(acc):
    """Two seeds (value ± 0.002) of every run; ``acc(kind, ratio, lam)`` the planted accuracy."""
    rows = []
    for ratio in RATIOS:
        plan = [("local", 0.0, "Local"), ("fedavg", 0.0, "FedAvg"), ("ifca", 0.0, "IFCA"),
                ("ifca-mrmtl", 0.0, "IFCA → Local")]
        plan += [("mrmtl", lam, "MR-MTL") for lam in LAMS] + [("ifca-mrmtl", lam, "IFCA → MR-MTL") for lam in LAMS]
        for method, lam, kind in plan:
            for seed, d in ((0, -0.002), (1, 0.002)):
                rows.append(_run(method, lam, ratio, acc(kind, ratio, lam) + d, seed))
    return rows


def paper_like(kind, ratio, lam):
    """The paper's picture: IFCA and its warm start best without masks, MR-MTL best with them, the warm start's
    gain shrinking, λ = 1 the best (interior)."""
    bump = 0.0 if lam in (0.0, 1.0) else -0.03
    base = {"Local": 0.60, "FedAvg": 0.40, "IFCA": 0.75 - 0.3 * ratio, "IFCA → Local": 0.60,
            "MR-MTL": 0.70 - 0.1 * ratio, "IFCA → MR-MTL": 0.75 - 0.2 * ratio}[kind]
    return base + bump


def test_the_paper_picture_passes_every_check():
    checks = fig6_checks(_grid(paper_like), 4.0)
    assert len(checks) == 3 + 2 + 1 + 1
    assert all(c.holds for c in checks), [(c.name, c.detail) for c in checks if not c.holds]


@pytest.mark.parametrize("plant, failing", [
    (lambda k, r, l: paper_like(k, r, l) + (0.1 if k == "IFCA → Local" else 0.0), "warm-starting local"),
    (lambda k, r, l: paper_like(k, r, l) - (0.1 if k == "IFCA → MR-MTL" and r == 0 else 0.0), "matches IFCA"),
    (lambda k, r, l: paper_like(k, r, l) + (0.2 if k == "Local" and r == 0.5 else 0.0), "(b) mask 0.5"),
    (lambda k, r, l: paper_like(k, r, l) + (0.1 * r if k == "IFCA → MR-MTL" else 0.0), "(c)"),
    (lambda k, r, l: paper_like(k, r, l) + (0.05 * l if k == "MR-MTL" else 0.0), "(d)"),
])
def test_each_check_fails_when_its_effect_is_planted_away(plant, failing):
    failed = [c.name for c in fig6_checks(_grid(plant), 4.0) if not c.holds]
    assert any(failing in name for name in failed), failed


def test_the_table_takes_each_kind_at_its_best_lambda_and_records_the_grid():
    t = fig6_table(_grid(paper_like), 4.0)
    cell = t[("MR-MTL", 0.25)]
    assert cell["lam"] == 1.0 and cell["lams"] == LAMS and cell["n"] == 2
    assert math.isclose(cell["mean"], 0.675, abs_tol=1e-12)
    assert fig6_kind(SimpleNamespace(method="ifca-mrmtl", lam=0.0)) == "IFCA → Local"


def test_bad_input_is_a_clear_error():
    rows = _grid(paper_like)
    with pytest.raises(ValueError, match="no runs at eps"):
        fig6_checks(rows, 8.0)
    with pytest.raises(ValueError, match="missing"):
        fig6_checks([r for r in rows if r.config.method != "ifca"], 4.0)
    with pytest.raises(ValueError, match="tol must be"):
        fig6_checks(rows, 4.0, tol=-1)
    with pytest.raises(ValueError, match="config.method"):
        fig6_kind(SimpleNamespace(method="ditto", lam=0.0))
