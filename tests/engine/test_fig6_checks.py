"""fedtrain.fig6_checks: Fig. 6's readings hold on a planted grid that has them, and each fails when its effect
is planted away."""
from __future__ import annotations

import math
from types import SimpleNamespace

import pytest

from fedtrain.claim_check import FAILS, HOLDS, TIE
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


@pytest.mark.parametrize("end, want", [(0.66, HOLDS), (0.645, TIE), (0.62, FAILS)])
def test_a_best_lambda_at_the_grids_edge_is_located_only_when_the_end_beyond_it_is_at_least_as_good(end, want):
    """MR-MTL falling in λ (best at the grid's smallest λ, 0.649): located at λ = 0 when Local is at least as good;
    where Local is worse, a tie within the margin (0.01 here: the seeds agree) and not located beyond it (the optimum
    may lie between 0 and the grid's smallest λ)."""
    def plant(kind, ratio, lam):
        if kind == "MR-MTL":
            return 0.65 - 0.01 * lam
        return end if kind == "Local" else paper_like(kind, ratio, lam)

    (d,) = [c for c in fig6_checks(_grid(plant), 4.0) if c.name.startswith("(d)")]
    assert d.verdict == want, d.detail
    assert ("MR-MTL at mask 0: λ = 0 (Local 0.660" in d.detail) if want == HOLDS else (
        "MR-MTL at mask 0: λ = 0.1, the grid's smallest of [0.1, 1.0, 10.0], beats λ = 0 (Local)" in d.detail)
    assert ("within it, a tie" in d.detail) == (want == TIE)


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


# --------------------------------------------------------------------------------------------------
# a grid still being computed (fig6_status, complete_blocks) on the real-image grid's configurations
# --------------------------------------------------------------------------------------------------
def _fashion_like(kind, ratio, lam):
    """:func:`paper_like` on the fig6-fashion λ grid (0.01 ... 1): λ = 0.1, inside the grid, is the best."""
    return paper_like(kind, ratio, 0.0) + (0.0 if lam in (0.0, 0.1) else -0.03)


def _grid_rows(acc, keep=lambda c: True):
    """Planted results of the fig6-fashion grid's configurations kept by ``keep`` (seed 1 0.004 above seed 0);
    ``acc(kind, ratio, lam)`` the planted accuracy."""
    from fedtrain.presets import deep_grid
    from fedtrain.testing import fake_result

    return [fake_result(c, acc(fig6_kind(c), c.dataset_options["mask_ratio"], c.lam) + (0.002 if c.seed else -0.002),
                        metric="accuracy") for c in deep_grid("fig6-fashion") if keep(c)]


def test_status_on_the_whole_grid_is_the_checks():
    from fedtrain.fig6_checks import FAILS, HOLDS, fig6_status
    from fedtrain.presets import deep_grid

    rows = _grid_rows(_fashion_like)
    full = fig6_checks(rows, 4.0)
    status = fig6_status(rows, deep_grid("fig6-fashion"), 4.0)
    assert [s.name for s in status] == [c.name for c in full]
    assert [s.verdict for s in status] == [c.verdict for c in full]
    assert [s.kind for s in status] == [c.kind for c in full]
    assert [s.detail for s in status] == [c.detail for c in full]
    assert all(s.holds for s in status)


def test_status_reads_complete_seeds_only_and_says_what_is_pending():
    from fedtrain.fig6_checks import HOLDS, PENDING, complete_blocks, fig6_status
    from fedtrain.presets import REAL_IMAGE_GRIDS, deep_grid

    grid = deep_grid("fig6-fashion")
    # seed 0 done at mask 0; seed 0 at mask 0.25 lacks one run; nothing else
    keep = lambda c: c.seed == 0 and (c.dataset_options["mask_ratio"] == 0.0 or (  # noqa: E731
        c.dataset_options["mask_ratio"] == 0.25 and not (c.method == "mrmtl" and c.lam == 1.0)))
    rows = _grid_rows(_fashion_like, keep)
    kept, counts = complete_blocks(rows, grid, 4.0)
    per = sum(c.eps == 4.0 and c.seed == 0 and c.dataset_options["mask_ratio"] == 0.0 for c in grid)  # runs a block
    g = REAL_IMAGE_GRIDS["fig6-fashion"]
    reach = sum(len(lams) for ratio, eps, lams in g["extra_lams"]["ifca-mrmtl"] if (ratio, eps) == (0.0, 4.0))
    assert per == 3 + 2 * len(g["lams"]) + 1 + reach and reach == 2  # the warm start's λ grid reaches further here
    other = per - reach  # a block at mask 0.25 or 0.5
    assert counts[(0.0, 0)] == (per, per) and counts[(0.25, 0)] == (other - 1, other) and counts[(0.5, 1)] == (0, other)
    assert {c.config.dataset_options["mask_ratio"] for c in kept} == {0.0} and len(kept) == per
    status = {s.name: s for s in fig6_status(rows, grid, 4.0)}
    a = [s for n, s in status.items() if n.startswith("(a)")]
    assert len(a) == 3 and all(s.verdict == HOLDS and s.holds for s in a)
    assert all("(1 seed)" in s.detail for s in a)
    b = [s for n, s in status.items() if n.startswith("(b)")]
    assert [s.verdict for s in b] == [PENDING, PENDING] and all(s.holds is None for s in b)
    assert f"mask 0.25: {other - 1} of {2 * other} runs" in b[0].detail
    c = next(s for n, s in status.items() if n.startswith("(c)"))
    assert c.verdict == PENDING and c.detail.endswith(f"mask 0.5: 0 of {2 * other} runs")  # mask 0 is in
    d = next(s for n, s in status.items() if n.startswith("(d)"))
    assert d.verdict == HOLDS and "on mask 0; mask 0.25, 0.5 pending" in d.detail
    # a planted edge (MR-MTL best at λ = 0.01 without masks) is caught on the complete seed
    edge = _grid_rows(lambda k, r, lam: _fashion_like(k, r, lam) + (0.2 if k == "MR-MTL" and lam == 0.01 else 0), keep)
    d = next(s for s in fig6_status(edge, grid, 4.0) if s.name.startswith("(d)"))
    assert d.verdict == "fails" and "MR-MTL at mask 0: λ = 0.01" in d.detail
    # nothing complete: every check pending
    none = fig6_status(rows[:5], grid, 4.0)
    assert all(s.verdict == PENDING for s in none) and len(none) == len(status)


def test_status_bad_input():
    from fedtrain.fig6_checks import fig6_status
    from fedtrain.presets import deep_grid

    with pytest.raises(ValueError, match="eps must be a privacy level of the grid"):
        fig6_status([], deep_grid("fig6-fashion"), 8.0)
    with pytest.raises(ValueError, match="tol must be"):
        fig6_status([], deep_grid("fig6-fashion"), 4.0, tol=-0.1)


def test_status_table_names_every_check_and_status():
    from fedtrain.fig6_checks import fig6_status, fig6_status_html
    from fedtrain.presets import deep_grid

    grid = deep_grid("fig6-fashion")
    rows = _grid_rows(_fashion_like, lambda c: c.seed == 0 and c.dataset_options["mask_ratio"] == 0.0)
    cols = {"ε = 4": fig6_status(rows, grid, 4.0), "without DP": fig6_status(rows, grid, math.inf)}
    html = fig6_status_html(cols)
    # a heading row per kind: the paper's readings, then the checks of the grid
    assert html.count("<tr>") == 1 + 2 + len(cols["ε = 4"]) and "<th>without DP</th>" in html
    assert html.index("the paper&#x27;s readings") < html.index("(a) mask 0") < html.index(
        "checks of this project&#x27;s grid") < html.index("(d) every best")
    assert html.count("<b>holds</b>") == 8 and html.count("<b>pending</b>") == 6  # (a) x 3 and (d); (b) x 2 and (c)
    assert "IFCA → Local" in html and "&lt;" not in html
    with pytest.raises(ValueError, match="same checks"):
        fig6_status_html({"a": cols["ε = 4"], "b": cols["ε = 4"][:2]})


def test_a_spread_that_rounds_to_zero_is_not_printed_as_zero():
    from fedtrain.fig6_checks import _fmt

    assert _fmt({"mean": 0.5, "std": 0.0, "n": 2}) == "0.500 ± <0.001"
    assert _fmt({"mean": 0.5, "std": 0.01 * math.sqrt(2), "n": 2}) == "0.500 ± 0.010"
    assert _fmt({"mean": 0.5, "std": math.nan, "n": 1}) == "0.500 (1 seed)"


def test_spread_text_never_prints_a_zero_spread():
    from fedtrain.analysis import spread_text

    assert spread_text(0.0123, 3) == "0.012" and spread_text(0.0005, 3) == "0.001"
    assert spread_text(0.0004, 3) == "<0.001" and spread_text(0.0, 2) == "<0.01"


# --------------------------------------------------------------------------------------------------
# ties and kinds
# --------------------------------------------------------------------------------------------------
def _by_name(checks, part):
    (c,) = [c for c in checks if part in c.name]
    return c


@pytest.mark.parametrize("gap", [0.005, 0.0, -0.005])
@pytest.mark.parametrize("plant, part", [
    # Local level with MR-MTL at mask 0.5 (within the 0.01 margin): "MR-MTL is the best" is a tie, not a hold
    (lambda g: lambda k, r, l: paper_like("MR-MTL", r, 1.0) - g if k == "Local" and r == 0.5 else paper_like(k, r, l),
     "(b) mask 0.5"),
    # MR-MTL level with IFCA and its warm start at mask 0: "IFCA and its warm start are the best" is a tie
    (lambda g: lambda k, r, l: (paper_like("IFCA → MR-MTL", r, 1.0) - g if k == "MR-MTL" and r == 0 and l == 1.0
                                else paper_like(k, r, l)), "are the best"),
    # the warm start's gain the same at every mask: "the gain shrinks" is a tie
    (lambda g: lambda k, r, l: (paper_like("MR-MTL", r, l) + 0.05 - g * r if k == "IFCA → MR-MTL"
                                else paper_like(k, r, l)), "(c)"),
])
def test_a_reading_within_the_margin_is_a_tie_not_a_hold(plant, part, gap):
    from fedtrain.fig6_checks import TIE

    c = _by_name(fig6_checks(_grid(plant(gap)), 4.0), part)
    assert c.verdict == TIE and not c.holds, (c.name, c.detail)


@pytest.mark.parametrize("start, want", [(0.0, TIE), (-0.05, FAILS), (0.05, HOLDS)])
def test_the_gain_shrinks_only_where_there_is_a_gain_at_the_smallest_mask(start, want):
    """The warm start's gain falls by 0.1 from mask 0 to 0.5 in each case; "the gain shrinks" holds only where it
    starts as a gain beyond the margin (0.01 here): from no gain it is a tie, from a loss it fails."""
    def plant(k, r, l):
        if k == "IFCA → MR-MTL":
            return paper_like("MR-MTL", r, l) + start - 0.2 * r
        return paper_like(k, r, l)

    c = _by_name(fig6_checks(_grid(plant), 4.0), "(c)")
    assert c.verdict == want, c.detail
    assert ("no gain" in c.detail) == (want != HOLDS)


@pytest.mark.parametrize("drop, want", [(0.0, HOLDS), (0.055, TIE), (0.3, FAILS)])
def test_the_two_are_the_best_only_where_each_of_them_is(drop, want):
    """Reading (a) "IFCA and IFCA → MR-MTL are the best" asks it of both: IFCA alone on top does not make it hold.
    IFCA → MR-MTL dropped by 0.055 at mask 0 sits level with MR-MTL (0.695 vs 0.70, within the 0.01 margin): a tie;
    by 0.3, below MR-MTL and Local: a fail."""
    def plant(k, r, l):
        return paper_like(k, r, l) - (drop if k == "IFCA → MR-MTL" and r == 0 else 0.0)

    c = _by_name(fig6_checks(_grid(plant), 4.0), "are the best")
    assert c.verdict == want, c.detail
    assert c.detail.count("; ") >= 2  # one verdict for each of the two


def test_a_reading_beaten_beyond_the_margin_fails_and_one_clear_of_it_holds():
    from fedtrain.fig6_checks import FAILS, HOLDS

    def plant(gap):
        return lambda k, r, l: paper_like("MR-MTL", r, 1.0) - gap if k == "FedAvg" and r == 0.5 else paper_like(k, r, l)

    assert _by_name(fig6_checks(_grid(plant(-0.02)), 4.0), "(b) mask 0.5").verdict == FAILS
    assert _by_name(fig6_checks(_grid(plant(0.02)), 4.0), "(b) mask 0.5").verdict == HOLDS


def test_local_above_mrmtls_grid_makes_mrmtl_local_so_mrmtl_is_the_best_only_as_a_tie():
    """The one definition of the best λ (over {0} ∪ the grid; λ = 0 is Local): Local 0.02 above MR-MTL's best λ > 0
    (beyond the margin) at mask 0.5 makes MR-MTL's best λ 0, MR-MTL equal to Local there, and "MR-MTL is the best" a
    tie with Local, not a failure and not a hold; the table and the figure say λ = 0 (Local)."""
    from fedtrain.fig6_checks import TIE, best_lambda_text

    def plant(k, r, l):
        return paper_like("MR-MTL", r, 1.0) + 0.02 if k == "Local" and r == 0.5 else paper_like(k, r, l)

    rows = _grid(plant)
    c = _by_name(fig6_checks(rows, 4.0), "(b) mask 0.5")
    assert c.verdict == TIE and "MR-MTL" in c.detail and "λ = 0 (Local)" in c.detail, c.detail
    cell = fig6_table(rows, 4.0)[("MR-MTL", 0.5)]
    assert cell["lam"] == 0.0 and cell["end"] == "Local" and cell["grid"]["lam"] == 1.0
    assert best_lambda_text(cell) == "λ = 0 (Local)"
    assert best_lambda_text(fig6_table(rows, 4.0)[("MR-MTL", 0.25)]) == "λ = 1"


def test_labels_and_lambda_facts_come_from_the_registry():
    from fedtrain.fig6_checks import FAMILIES, KINDS, LAMBDA_ENDS, family_label
    from fedtrain.methods.registry import method_spec

    assert KINDS == tuple(family_label(f) for f in FAMILIES)
    assert family_label("ifca-mrmtl") == method_spec("ifca").label + " → " + method_spec("mrmtl").label
    # the λ profiles are exactly the families of the methods that take λ
    lam_families = [f for f in FAMILIES if f in ("mrmtl", "ifca-mrmtl") and method_spec(f).uses_lambda]
    assert list(LAMBDA_ENDS) == [family_label(f) for f in lam_families]
    assert not any(method_spec(f).uses_lambda for f in ("local", "fedavg", "ifca"))


def test_grid_checks_are_kept_apart_from_the_papers_readings():
    from fedtrain.fig6_checks import GRID_CHECK, PAPER_READING

    checks = fig6_checks(_grid(paper_like), 4.0)
    assert [c.kind for c in checks] == [PAPER_READING] * 6 + [GRID_CHECK]
    assert checks[-1].name.startswith("(d)")


def test_verdict_bad_input():
    from fedtrain.claim_check import ClaimCheck as PaperCheck, verdict

    with pytest.raises(ValueError, match="margin"):
        verdict(0.1, -1.0)
    with pytest.raises(ValueError, match="verdict"):
        PaperCheck("x", "maybe", "")
    with pytest.raises(ValueError, match="kind"):
        PaperCheck("x", "holds", "", "other")
