"""fedtrain.fig3d_checks: Fig. 3(d)'s readings hold on a planted grid that has them, each fails when its effect is
planted away, a reading level within the margin is a tie (not a hold), and a privacy level without a complete seed
is pending."""
from __future__ import annotations

import math
from types import SimpleNamespace

import pytest

from fedtrain.fig3d_checks import CHECK_KINDS, CHECKS, complete_rows, fig3d_kind, fig3d_status, fig3d_table
from fedtrain.claim_check import FAILS, GRID_CHECK, HOLDS, PAPER_READING, PENDING, TIE
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
        assert all(c.verdict == HOLDS for c in checks), (eps, [(c.name, c.detail) for c in checks])


@pytest.mark.parametrize("plant, failing", [
    (lambda k, e, l: paper_like(k, e, l) + (0.3 if k == "FedAvg" else 0.0), (0,)),  # FedAvg above MR-MTL
    (lambda k, e, l: paper_like(k, e, l) + (0.15 if k == "IFCA" else 0.0), ()),  # IFCA is no endpoint: no check
    (lambda k, e, l: paper_like(k, e, l) - (0.1 if k == "Finetune" else 0.0), (1,)),
    (lambda k, e, l: paper_like(k, e, l) + (0.2 * l if k == "MR-MTL" else 0.0), (2,)),  # best λ at the grid's top
    (lambda k, e, l: paper_like(k, e, l) + (0.2 if k == "MR-MTL" and l == 0.01 else 0.0), (2,)),  # at its bottom
])
def test_each_check_fails_when_its_effect_is_planted_away(plant, failing):
    for checks in fig3d_status(_rows(plant), GRID).values():
        failed = {i for i, c in enumerate(checks) if c.verdict == FAILS}
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
        assert checks[check].verdict == TIE and checks[check].holds is False, (eps, checks[check])
        assert checks[2].verdict == HOLDS, (eps, checks[2])  # the grid check is not what is planted


def test_local_above_every_lambda_makes_mrmtl_local_and_its_reading_a_tie():
    """The one definition of the best λ (over {0} ∪ the grid, λ = 0 being Local): with Local above MR-MTL at every λ
    of the grid, MR-MTL at its best λ is Local, so "MR-MTL beats both" is a tie (with Local), never a hold, and the
    best λ is located at the λ = 0 end."""
    def plant(k, e, l):
        return paper_like(k, e, l) + (0.15 if k == "Local" else 0.0)

    for eps, checks in fig3d_status(_rows(plant), GRID).items():
        assert checks[0].verdict == TIE and "at λ = 0 (Local)" in checks[0].detail, (eps, checks[0].detail)
        assert checks[1].verdict == FAILS  # Local 0.75 above Finetune 0.65
        assert checks[2].verdict == HOLDS and checks[2].detail == "λ = 0.1"  # the grid's best is inside it
    t = fig3d_table(_rows(plant))
    assert t[("MR-MTL", 4.0)]["lam"] == 0.0 and t[("MR-MTL", 4.0)]["grid"]["lam"] == 0.1
    assert t[("MR-MTL", 4.0)]["mean"] == t[("Local", 4.0)]["mean"]


def test_finetune_a_tenth_of_the_margin_above_local_is_a_tie_and_one_and_a_half_margins_above_holds():
    """The planted tie of the issue: Finetune = Local + 0.1 × margin, the margin computed here independently of the
    module (two seeds at ∓ d: SE of each mean d, of the difference d √2, margin max(0.01, 2 √2 d))."""
    d = 0.02
    m = max(0.01, 2 * math.sqrt(2) * d)

    def rows(gap):
        def acc(kind, eps, lam):
            return paper_like("Local", eps, 0.0) + gap if kind == "Finetune" else paper_like(kind, eps, lam)
        return [SimpleNamespace(config=c, test_metric=acc(fig3d_kind(c), c.eps, c.lam) + (d if c.seed else -d),
                                diverged=False, metric="accuracy") for c in GRID]

    for eps, checks in fig3d_status(rows(0.1 * m), GRID).items():
        assert checks[1].verdict == TIE and checks[1].holds is False, (eps, checks[1].detail)
        assert f"margin {m:.3f}" in checks[1].detail
    for eps, checks in fig3d_status(rows(1.5 * m), GRID).items():
        assert checks[1].verdict == HOLDS, (eps, checks[1].detail)
    for eps, checks in fig3d_status(rows(-1.5 * m), GRID).items():
        assert checks[1].verdict == FAILS, (eps, checks[1].detail)


def test_readings_and_grid_checks_are_counted_apart():
    from fedtrain.claim_check import GRID_CHECK, PAPER_KINDS, tally

    # MR-MTL's best at the grid's top, beating FedAvg: the grid check fails, the readings still hold
    def plant(k, e, l):
        return paper_like(k, e, l) + (0.2 * l if k == "MR-MTL" else 0.0)

    checks = [c for cs in fig3d_status(_rows(plant), GRID).values() for c in cs]
    assert tally(checks) == {HOLDS: 10, TIE: 0, FAILS: 0, PENDING: 0}
    assert tally(checks, [GRID_CHECK]) == {HOLDS: 0, TIE: 0, FAILS: 5, PENDING: 0}
    assert sum(c.of_paper for c in checks) == 10 and PAPER_READING in PAPER_KINDS


def test_the_checks_say_their_kind():
    checks = fig3d_status(_rows(paper_like), GRID)[4.0]
    assert [c.kind for c in checks] == list(CHECK_KINDS) == [PAPER_READING, PAPER_READING, GRID_CHECK]


def test_a_privacy_level_without_a_complete_seed_is_pending_and_its_rows_are_not_read():
    rows = _rows(paper_like)
    gone = next(r for r in rows if r.config.eps == 2.0 and r.config.seed == 0)
    partial = [r for r in rows if r is not gone and not (r.config.eps == 2.0 and r.config.seed == 1)]
    status = fig3d_status(partial, GRID)
    assert all(c.verdict == PENDING and "6 of 14 runs" in c.detail for c in status[2.0])
    assert all(c.verdict == HOLDS for c in status[4.0])
    kept = complete_rows(partial, GRID)
    assert not any(r.config.eps == 2.0 for r in kept) and len(kept) == len(partial) - 6
    # one complete seed is read (its numbers say "1 seed")
    one = [r for r in rows if not (r.config.eps == 8.0 and r.config.seed == 1)]
    assert all(c.verdict == HOLDS for c in fig3d_status(one, GRID)[8.0])
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
        assert checks[2].verdict == HOLDS and checks[2].detail.startswith("λ = 0 (Local"), checks[2].detail


@pytest.mark.parametrize("gap, want", [(0.004, TIE), (0.03, FAILS)])
def test_a_best_lambda_at_the_grids_bottom_beating_local_within_the_margin_is_a_tie(gap, want):
    """MR-MTL falling in λ, its grid's smallest λ ``gap`` above Local: within the margin (0.01 here) the grid check
    cannot tell whether the optimum lies below the grid (a tie), beyond it the grid must reach further (fails)."""
    def plant(kind, eps, lam):
        if kind == "MR-MTL":
            return paper_like("Local", eps, 0.0) + gap - 0.01 * lam
        return paper_like(kind, eps, lam)

    for checks in fig3d_status(_rows(plant), GRID).values():
        assert checks[2].verdict == want and "beats λ = 0 (Local)" in checks[2].detail, checks[2].detail
