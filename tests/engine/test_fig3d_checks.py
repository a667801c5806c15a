"""fedtrain.fig3d_checks: Fig. 3(d)'s readings hold on a planted grid that has them, each fails when its effect is
planted away, a reading level within the margin is a tie (not a hold), and a privacy level without a complete seed
is pending."""
from __future__ import annotations

import math
from types import SimpleNamespace

import pytest

from fedtrain.fig3d_checks import CHECK_KINDS, CHECKS, complete_rows, fig3d_kind, fig3d_status
from fedtrain.fig6_checks import FAILS, GRID_CHECK, HOLDS, PAPER_READING, PENDING, TIE
from fedtrain.presets import deep_grid

GRID = deep_grid("fig3d-fashion")


def _rows(acc, configs=GRID):
    """Every run of ``configs``, seeds 0 and 1 at the planted accuracy ∓ 0.002."""
    return [SimpleNamespace(config=c, test_metric=acc(fig3d_kind(c), c.eps, c.lam) + (0.002 if c.seed else -0.002),
                            diverged=False, metric="accuracy") for c in configs]


def paper_like(kind, eps, lam):
    """MR-MTL best (λ = 0.1 inside the grid), beating both endpoints at every ε; finetuning above local training."""
    base = {"Local": 0.60, "FedAvg": 0.50, "Finetune": 0.65, "MR-MTL": 0.70, "IFCA": 0.55}[kind]
    return base - (0.05 if kind == "MR-MTL" and lam != 0.1 else 0.0) - (0.1 / eps if math.isfinite(eps) else 0.0)


def test_the_paper_picture_passes_every_check_at_every_privacy_level():
    status = fig3d_status(_rows(paper_like), GRID)
    assert list(status) == [1.0, 2.0, 4.0, 8.0, math.inf]
    for eps, checks in status.items():
        assert [c.name for c in checks] == list(CHECKS)
        assert all(c.status == HOLDS for c in checks), (eps, [(c.name, c.detail) for c in checks])


@pytest.mark.parametrize("plant, failing", [
    (lambda k, e, l: paper_like(k, e, l) + (0.3 if k == "FedAvg" else 0.0), (0,)),  # FedAvg above MR-MTL
    (lambda k, e, l: paper_like(k, e, l) + (0.15 if k == "Local" else 0.0), (0, 1)),  # Local above both
    (lambda k, e, l: paper_like(k, e, l) - (0.1 if k == "Finetune" else 0.0), (1,)),
    (lambda k, e, l: paper_like(k, e, l) + (0.2 * l if k == "MR-MTL" else 0.0), (2,)),  # best λ at the grid's top
    (lambda k, e, l: paper_like(k, e, l) + (0.2 if k == "MR-MTL" and l == 0.01 else 0.0), (2,)),  # at its bottom
])
def test_each_check_fails_when_its_effect_is_planted_away(plant, failing):
    for checks in fig3d_status(_rows(plant), GRID).values():
        failed = {i for i, c in enumerate(checks) if c.status == FAILS}
        assert failed == set(failing), [(c.name, c.detail) for c in checks]


@pytest.mark.parametrize("kind, above, check", [
    ("Finetune", "Local", 1),  # finetuning level with local training: a tie, not "finetuning beats local training"
    ("Local", "MR-MTL", 0),  # MR-MTL level with Local: a tie, not "MR-MTL beats both"
    ("FedAvg", "MR-MTL", 0),
])
@pytest.mark.parametrize("gap", [0.005, 0.0, -0.005])
def test_a_reading_within_the_margin_is_a_tie_not_a_hold(kind, above, check, gap):
    """``kind`` planted ``gap`` below ``above`` (within the margin, 0.01 here): the reading is a tie at every level."""
    def plant(k, e, l):
        if k == kind:
            return paper_like(above, e, 0.1) - gap
        return paper_like(k, e, l)

    for eps, checks in fig3d_status(_rows(plant), GRID).items():
        assert checks[check].status == TIE and checks[check].holds is False, (eps, checks[check])
        assert checks[2].status == HOLDS, (eps, checks[2])  # the grid check is not what is planted


def test_the_checks_say_their_kind():
    checks = fig3d_status(_rows(paper_like), GRID)[4.0]
    assert [c.kind for c in checks] == list(CHECK_KINDS) == [PAPER_READING, PAPER_READING, GRID_CHECK]


def test_a_privacy_level_without_a_complete_seed_is_pending_and_its_rows_are_not_read():
    rows = _rows(paper_like)
    gone = next(r for r in rows if r.config.eps == 2.0 and r.config.seed == 0)
    partial = [r for r in rows if r is not gone and not (r.config.eps == 2.0 and r.config.seed == 1)]
    status = fig3d_status(partial, GRID)
    assert all(c.status == PENDING and "6 of 14 runs" in c.detail for c in status[2.0])
    assert all(c.status == HOLDS for c in status[4.0])
    kept = complete_rows(partial, GRID)
    assert not any(r.config.eps == 2.0 for r in kept) and len(kept) == len(partial) - 6
    # one complete seed is read (its numbers say "1 seed")
    one = [r for r in rows if not (r.config.eps == 8.0 and r.config.seed == 1)]
    assert all(c.status == HOLDS for c in fig3d_status(one, GRID)[8.0])
    assert "(1 seed)" in fig3d_status(one, GRID)[8.0][0].detail


def test_bad_input():
    with pytest.raises(ValueError, match="tol"):
        fig3d_status([], GRID, tol=-1)
    with pytest.raises(ValueError, match="configs"):
        fig3d_status([], [])
    with pytest.raises(ValueError, match="config.method"):
        fig3d_status([], deep_grid("fig6-fashion"))


def test_a_best_lambda_at_the_grids_bottom_is_located_when_local_is_at_least_as_good():
    """MR-MTL falling in λ below Local (its λ = 0 end): MR-MTL is then at best Local, and the best λ is located."""
    def plant(kind, eps, lam):
        if kind == "MR-MTL":
            return paper_like("Local", eps, 0.0) - 0.01 - 0.01 * lam
        return paper_like(kind, eps, lam)

    for checks in fig3d_status(_rows(plant), GRID).values():
        assert checks[2].status == HOLDS and checks[2].detail.startswith("λ = 0 (Local"), checks[2].detail
