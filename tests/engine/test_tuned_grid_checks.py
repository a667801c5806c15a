"""The checks and the DP-cost decomposition on the noise-bound *tuned* grids (``fig6-fashion-tuned``,
``fig3d-fashion-tuned``), which are committed block by block: planted tuning rows define the grid (no store read),
planted results of part of it are read on complete blocks only, and the clip-only controls give each method's
no DP / clip only / private decomposition."""
from __future__ import annotations

import math
from types import SimpleNamespace

import pytest

from fedtrain.claim_check import FAILS, HOLDS, PENDING, TIE
from fedtrain.fig3d_checks import complete_rows, fig3d_kind, fig3d_status
from fedtrain.fig6_checks import complete_blocks, fig6_kind, fig6_status, grid_costs
from fedtrain.deep_grids import REAL_IMAGE_GRIDS, deep_grid, method_family


def _row(c, value):
    return SimpleNamespace(config=c, test_metric=value, diverged=False, metric="accuracy")


def _tuned(grid):
    """The tuned grid's configurations, from planted validation accuracies of its tuning grid: the larger η wins
    without DP, the smaller with DP; λ = 0.1 is the best private λ."""
    tune = REAL_IMAGE_GRIDS[grid]["tuned_by"]
    rows = [_row(c, 0.5 + (0.01 if c.lr in (0.01, 0.3) else 0.0) + (0.02 if c.lam == 0.1 else 0.0))
            for c in deep_grid(tune)]
    return deep_grid(grid, tuning=rows)


FIG6 = _tuned("fig6-fashion-tuned")
FIG3D = _tuned("fig3d-fashion-tuned")
CLIP_ONLY = REAL_IMAGE_GRIDS["fig6-fashion-tuned"]["clip_only_eps"]


def test_the_planted_tuning_defines_the_tuned_grids_with_their_controls():
    assert len(FIG6) == 156 and sum(c.eps == CLIP_ONLY for c in FIG6) == 36
    assert len(FIG3D) == 80 and sum(c.eps == CLIP_ONLY for c in FIG3D) == 10
    assert {c.lr for c in FIG6 if math.isfinite(c.eps)} == {0.01} and {c.lr for c in FIG6 if math.isinf(c.eps)} == {0.3}
    assert {c.clip for c in FIG6} == {8.0} and {c.delta for c in FIG3D} == {1e-4}


def _fig6_acc(c):
    """Noise-bound planted accuracies: no DP 0.75, clip only 0.70, private 0.55 (+0.03 for MR-MTL, whose averaging
    cancels noise); seed 1 0.004 above seed 0."""
    base = 0.75 if math.isinf(c.eps) else (0.70 if c.eps == CLIP_ONLY else 0.55)
    bonus = 0.03 if c.method == "mrmtl" and c.lam == 0.1 and math.isfinite(c.eps) and c.eps != CLIP_ONLY else 0.0
    return base + bonus + (0.002 if c.seed else -0.002)


def test_fig6_reads_complete_blocks_of_a_partial_tuned_grid_and_leaves_the_rest_pending():
    # seed 0 complete at every mask (and its controls); seed 1 only at mask 0, one run short
    missing = next(c for c in FIG6 if c.seed == 1 and c.eps == 4.0 and c.method == "ifca")
    keep = [c for c in FIG6 if (c.seed == 0 or _mask(c) == 0.0) and c is not missing]
    rows = [_row(c, _fig6_acc(c)) for c in keep]
    kept, counts = complete_blocks(rows, FIG6, 4.0)
    assert counts[(0.0, 1)] == (9, 10) and counts[(0.25, 1)] == (0, 10) and counts[(0.5, 0)] == (10, 10)
    assert {c.config.seed for c in kept} == {0} and len(kept) == 30
    status = fig6_status(rows, FIG6, 4.0)
    assert all(s.verdict != PENDING for s in status) and all("(1 seed)" in s.detail for s in status[:3])
    # the controls are a privacy level of their own, never mixed into the checks' cells
    assert not any(r.config.eps == CLIP_ONLY for r in kept)
    # only seed 0's mask-0 block at eps 4 is in, nothing at mask 0.25 and 0.5 for seed 1: still read, 1 seed
    only = [r for r in rows if r.config.seed == 0 and _mask(r.config) == 0.0]
    st = fig6_status(only, FIG6, 4.0)
    assert [s.verdict for s in st if s.name.startswith("(b)")] == [PENDING, PENDING]


def _mask(c):
    return float(c.dataset_options.get("mask_ratio", 0.0))


def test_grid_costs_decompose_every_method_on_complete_seeds_only():
    rows = [_row(c, _fig6_acc(c)) for c in FIG6]
    costs = grid_costs(rows, CLIP_ONLY)
    assert len(costs) == 6 * 3  # each method's best private configuration, at each mask ratio
    for d in costs:
        assert d.seeds == 2 and d.eps == 4.0 and d.setting.startswith("mask ")
        assert math.isclose(d.nodp, 0.75) and math.isclose(d.clip_only, 0.70)
        assert d.limit == "noise" and math.isclose(d.clip_cost, 0.05)
    assert {d.method for d in costs} == {"Local", "FedAvg", "IFCA", "MR-MTL", "IFCA → MR-MTL", "IFCA → Local"}
    assert all(d.label.startswith(d.method + " (") for d in costs)
    mr = [d for d in costs if d.method == "MR-MTL"]
    assert mr and all("λ = 0.1, η = 0.01" in d.label and math.isclose(d.noise_cost, 0.12) for d in mr)
    # planted away: clipping costs more than noise -> clipping-bound
    clip = [_row(c, 0.60 if c.eps == CLIP_ONLY else _fig6_acc(c)) for c in FIG6]
    assert {d.limit for d in grid_costs(clip, CLIP_ONLY)} == {"clipping"}
    # a partial grid: a control without its private run (or its no-DP run) gives nothing for that seed
    gone = {c.key() for c in FIG6 if c.seed == 1 and c.eps == 4.0}
    part = grid_costs([r for r in rows if r.config.key() not in gone], CLIP_ONLY)
    assert len(part) == 18 and {d.seeds for d in part} == {1}
    assert grid_costs([r for r in rows if r.config.eps != CLIP_ONLY], CLIP_ONLY) == []


def test_grid_costs_take_the_run_without_dp_at_the_private_eta_from_the_step_controls():
    from fedtrain.deep_grids import step_controls
    from fedtrain.dp_costs import costs_table

    steps = step_controls(FIG6, CLIP_ONLY)  # private η 0.01, without DP 0.3: every control has a step control
    assert len(steps) == 36 and {c.lr for c in steps} == {0.01}
    rows = [_row(c, _fig6_acc(c)) for c in FIG6]
    # planted: without DP at the private η 0.71, so the smaller step costs 0.04 and clipping only 0.01
    step_rows = [_row(c, 0.71 + (0.002 if c.seed else -0.002)) for c in steps]
    costs = grid_costs(rows, CLIP_ONLY, step_rows)
    assert len(costs) == 18 and all(d.seeds == 2 for d in costs)
    for d in costs:
        assert math.isclose(d.nodp, 0.71) and math.isclose(d.nodp_tuned, 0.75) and math.isclose(d.step_cost, 0.04)
        assert math.isclose(d.clip_cost, 0.01) and d.limit == "noise" and "step controls" in d.source
        assert "0.750 (no DP at its own η) → 0.710 → 0.700" in d.text()
    assert "| no DP at the private η |" in costs_table(costs) and "| step cost |" in costs_table(costs)
    assert "| +0.040 | +0.010 | +0.150 | noise |" in costs_table(costs)  # step, clipping, noise (MR-MTL: +0.03)
    # without the step controls: the run at its own η stands in, its clipping cost holding the step's
    plain = grid_costs(rows, CLIP_ONLY)
    assert all(d.nodp_tuned is None and d.step_cost is None and math.isclose(d.clip_cost, 0.05) for d in plain)
    assert "step cost" not in costs_table(plain)
    # planted away: the step costs nothing and clipping 0.20 -> clipping-bound even with the step controls
    flat = grid_costs(rows, CLIP_ONLY, [_row(c, 0.90) for c in steps])
    assert {d.limit for d in flat} == {"clipping"}
    # a cell with the step control on one seed only reads that seed, not a mix of the two kinds
    one = grid_costs(rows, CLIP_ONLY, [r for r in step_rows if r.config.seed == 0])
    assert all(d.seeds == 1 and math.isclose(d.nodp, 0.708) and math.isclose(d.nodp_tuned, 0.748) for d in one)


def test_where_the_private_and_the_tuned_eta_agree_the_grids_own_run_is_the_step_control():
    from fedtrain.deep_grids import step_controls
    from fedtrain.dp_costs import costs_table

    tune = [_row(c, 0.5 + (0.05 if c.lr == 0.3 else 0.0)) for c in deep_grid("fig3d-fashion-tune")]
    grid = deep_grid("fig3d-fashion-tuned", tuning=tune)  # η = 0.3 with and without DP
    assert step_controls(grid, CLIP_ONLY) == []
    costs = grid_costs([_row(c, 0.6 if math.isinf(c.eps) else 0.5) for c in grid], CLIP_ONLY)
    assert costs and all(d.nodp_tuned == d.nodp and d.step_cost == 0 and math.isclose(d.clip_cost, 0.1) for d in costs)
    assert "(no DP at its own η)" not in costs[0].text() and "| 0 (same η) |" in costs_table(costs)


def test_fig3d_tuned_leaves_its_controls_out_of_the_privacy_levels_and_decomposes_at_every_eps():
    def acc(c):
        base = {"Local": 0.70, "FedAvg": 0.55, "Finetune": 0.72, "MR-MTL": 0.70, "IFCA": 0.6}[fig3d_kind(c)]
        noise = 0.0 if math.isinf(c.eps) or c.eps == CLIP_ONLY else 0.2 / c.eps
        return base - noise + (0.05 if c.method == "mrmtl" and c.lam == 0.1 else 0.0) + (0.002 if c.seed else -0.002)

    rows = [_row(c, acc(c)) for c in FIG3D]
    status = fig3d_status(rows, FIG3D, clip_only_eps=CLIP_ONLY)
    assert list(status) == [1.0, 2.0, 4.0, 8.0, math.inf]
    assert all(cs[0].verdict == HOLDS for cs in status.values())
    assert not any(r.config.eps == CLIP_ONLY for r in complete_rows(rows, FIG3D, clip_only_eps=CLIP_ONLY))
    costs = grid_costs(rows, CLIP_ONLY)
    assert {d.eps for d in costs} == {1.0, 2.0, 4.0, 8.0} and len(costs) == 5 * 4
    assert all(d.setting == "all silos" and d.seeds == 2 for d in costs)
    local = {d.eps: d for d in costs if d.label.startswith("Local")}
    assert math.isclose(local[1.0].noise_cost, 0.2) and math.isclose(local[8.0].noise_cost, 0.025)
    # one seed at eps = 2 missing a run: eps 2 pending, the other levels read
    gone = next(c for c in FIG3D if c.eps == 2.0 and c.seed == 0 and c.method == "fedavg")
    part = [r for r in rows if r.config is not gone and not (r.config.eps == 2.0 and r.config.seed == 1)]
    st = fig3d_status(part, FIG3D, clip_only_eps=CLIP_ONLY)
    assert all(c.verdict == PENDING for c in st[2.0]) and st[4.0][0].verdict == HOLDS


def test_without_clip_only_eps_the_controls_would_be_read_as_a_privacy_level():
    rows = [_row(c, 0.5) for c in FIG3D]
    assert CLIP_ONLY in fig3d_status(rows, FIG3D)  # the reason clip_only_eps exists
    assert method_family(FIG6[0]) in ("local", "fedavg", "ifca", "mrmtl", "ifca-local", "ifca-mrmtl")
    assert fig6_kind(FIG6[0]) == "Local"


def test_tuning_scores_say_what_each_eta_scored_and_which_was_chosen():
    from fedtrain.fig6_checks import tuning_scores, tuning_table

    tune = deep_grid("fig6-fashion-tune")
    rows = [_row(c, 0.5 + (0.01 if c.lr in (0.01, 0.3) else 0.0) + (0.02 if c.lam == 0.1 else 0.0)) for c in tune]
    scores = tuning_scores(rows)
    assert len(scores) == 10 * 2  # 10 configurations (6 families, λ > 0 per λ) with and without DP
    mr = next(s for s in scores if s["label"] == "MR-MTL" and s["lam"] == 0.1 and s["private"])
    assert mr["scores"] == {0.01: pytest.approx(0.53), 0.03: pytest.approx(0.52), 0.1: pytest.approx(0.52),
                            0.3: pytest.approx(0.53)}
    assert mr["chosen"] == 0.01 and mr["best"]  # a tie between 0.01 and 0.3 goes to the smaller η
    assert not next(s for s in scores if s["label"] == "MR-MTL" and s["lam"] == 1.0 and s["private"])["best"]
    assert {s["chosen"] for s in scores if not s["private"]} == {0.3}
    table = tuning_table(rows)
    assert "**η = 0.01: 0.530**" in table and table.count("\n") == 1 + len(scores)
    with pytest.raises(ValueError, match="tuning grid"):
        tuning_table([])


def test_a_figure_shows_the_clipping_bound_grid_until_its_tuned_grid_is_committed():
    from fedtrain.fig6_checks import committed_grid, shown_grid

    empty = SimpleNamespace(manifest={"files": {}}, root=None)
    g = shown_grid(empty, "fig6")
    assert g["grid"] == "fig6-fashion" and g["regime"] == "clipping-bound" and g["rows"] == []
    assert len(g["configs"]) == len(deep_grid("fig6-fashion")) and g["clip_only_eps"] is None
    assert committed_grid(empty, "fig3d-fashion-tuned") is None and not g["tuned_committed"]
    # a tuned grid's file without its whole tuning grid is not read (the tuned grid is defined by the tuning)
    half = SimpleNamespace(manifest={"files": {"hetero-fashion-tuned.json.gz": {"grid": "fig3d-fashion-tuned"},
                                               "hetero-fashion-tune.json.gz": {"grid": "fig3d-fashion-tune",
                                                                               "missing": 3}}}, root=None)
    assert committed_grid(half, "fig3d-fashion-tuned") is None
    with pytest.raises(ValueError, match="figure must be one of"):
        shown_grid(empty, "fig5")


def test_a_figure_reads_its_step_controls_once_their_grid_is_committed(monkeypatch):
    import fedtrain.fig6_checks as f6
    from fedtrain.deep_grids import step_controls

    steps = step_controls(FIG6, CLIP_ONLY)
    rows = [_row(c, _fig6_acc(c)) for c in FIG6 if c.seed == 0 and _mask(c) == 0.0]
    step_rows = [_row(c, 0.71) for c in steps if c.seed == 0 and _mask(c) == 0.0]
    files = {"rotated-masked-fashion-tuned.json.gz": {"grid": "fig6-fashion-tuned"},
             "rotated-masked-fashion-tune.json.gz": {"grid": "fig6-fashion-tune", "missing": 0}}
    monkeypatch.setattr(f6, "grid_configs", lambda grid, root=None, store=None: steps if "steps" in grid else FIG6)
    monkeypatch.setattr(f6, "grid_rows", lambda store, grid, configs=None: store.grid_rows(grid))
    store = SimpleNamespace(manifest={"files": files}, root=None,
                            grid_rows=lambda grid: step_rows if "steps" in grid else rows)
    g = f6.shown_grid(store, "fig6")  # the step grid not committed: none read, its size unknown
    assert (g["steps"], g["step_rows"], g["step_runs"]) == ("fig6-fashion-steps", [], None)
    files["rotated-masked-fashion-steps.json.gz"] = {"grid": "fig6-fashion-steps"}
    g = f6.shown_grid(store, "fig6")
    assert g["step_rows"] == step_rows and g["step_runs"] == len(steps) == 36
    costs = grid_costs(g["rows"], g["clip_only_eps"], g["step_rows"])
    assert len(costs) == 6 and all(math.isclose(d.step_cost, 0.75 - 0.002 - 0.71) for d in costs)


def test_a_figure_shows_the_tuned_grid_once_a_whole_seed_of_it_is_committed(monkeypatch):
    import fedtrain.fig6_checks as f6

    seed0 = [_row(c, _fig6_acc(c)) for c in FIG6 if c.seed == 0 and _mask(c) == 0.0]
    files = {"rotated-masked-fashion-tuned.json.gz": {"grid": "fig6-fashion-tuned"},
             "rotated-masked-fashion-tune.json.gz": {"grid": "fig6-fashion-tune", "missing": 0}}
    monkeypatch.setattr(f6, "grid_configs", lambda grid, root=None, store=None: FIG6)
    monkeypatch.setattr(f6, "grid_rows", lambda store, grid, configs=None: store.grid_rows(grid))
    store = SimpleNamespace(manifest={"files": files}, root=None, grid_rows=lambda grid: seed0)
    g = f6.shown_grid(store, "fig6")
    assert (g["grid"], g["regime"], g["clip_only_eps"]) == ("fig6-fashion-tuned", "noise-bound", CLIP_ONLY)
    assert g["rows"] == seed0 and g["tuned_committed"]
    # its controls are read by the decomposition, its private and no-DP runs by the checks (mask 0 only: pending rest)
    assert {d.setting for d in grid_costs(g["rows"], g["clip_only_eps"])} == {"mask 0"}
    st = fig6_status(g["rows"], g["configs"], 4.0)
    assert [s.verdict for s in st if s.name.startswith("(b)")] == [PENDING, PENDING]
    # nothing whole yet (only ε = 4 runs, one short): the clipping-bound grid is shown, the tuned grid said committed
    part = [r for r in seed0 if r.config.eps == 4.0][1:]
    short = SimpleNamespace(manifest={"files": files}, root=None, grid_rows=lambda grid: part if "tuned" in grid
                            else [])
    monkeypatch.setattr(f6, "grid_configs",
                        lambda grid, root=None, store=None: FIG6 if "tuned" in grid else deep_grid(grid))
    g = f6.shown_grid(short, "fig6")
    assert g["grid"] == "fig6-fashion" and g["regime"] == "clipping-bound" and g["tuned_committed"]


def test_the_tuning_table_marks_a_choice_at_the_edge_of_the_bracket():
    from fedtrain.fig6_checks import tuning_scores, tuning_table

    tune = deep_grid("fig6-fashion-tune")
    # with DP: FedAvg best at the top η (0.3), Local at the bottom (0.01), the rest at 0.03; without DP all at 0.3
    def score(c):
        if math.isinf(c.eps):
            return 0.7 + c.lr / 10
        want = {"fedavg": 0.3, "local": 0.01}.get(c.method, 0.03)
        return 0.5 - abs(math.log(c.lr / want)) / 100
    rows = [_row(c, score(c)) for c in tune]
    scores = tuning_scores(rows)
    fedavg = next(s for s in scores if s["label"] == "FedAvg" and s["private"])
    local = next(s for s in scores if s["label"] == "Local" and s["private"])
    mr = next(s for s in scores if s["label"] == "MR-MTL" and s["private"] and s["lam"] == 0.1)
    assert (fedavg["chosen"], fedavg["edge"]) == (0.3, "top") and (local["chosen"], local["edge"]) == (0.01, "bottom")
    assert (mr["chosen"], mr["edge"]) == (0.03, None) and len(mr["scores"]) == 4
    assert all(s["edge"] == "top" for s in scores if not s["private"])
    table = tuning_table(rows)
    assert "**η = 0.3: 0.500** (top of the bracket)" in table and "**η = 0.01: 0.500** (bottom of the bracket)" in table
    assert "**η = 0.03: 0.500**," in table  # MR-MTL's choice inside the bracket, unmarked


def test_both_tuning_grids_run_the_paper_eta_grid_up_to_its_top_under_dp():
    from fedtrain.regime import PAPER_MAX_LR

    for name, configurations, beyond in (("fig6-fashion-tune", 10, 0), ("fig3d-fashion-tune", 7, 3)):
        tune = deep_grid(name)
        inside = {c.lr for c in tune if math.isfinite(c.eps) and c.lr <= PAPER_MAX_LR}
        assert inside == {0.01, 0.03, 0.1, 0.3} and max(inside) == PAPER_MAX_LR
        assert {c.lr for c in tune if math.isinf(c.eps)} == {0.1, 0.3}
        assert len(tune) == configurations * (4 + 2) + beyond
        # beyond the paper's grid only where a private choice sat at its top: Fig. 3(d)'s FedAvg, Finetune, IFCA at 1
        assert sorted(c.method for c in tune if c.lr > PAPER_MAX_LR) == (["fedavg", "finetune", "ifca"] if beyond
                                                                        else [])
        assert all(math.isfinite(c.eps) and c.lr == 1.0 for c in tune if c.lr > PAPER_MAX_LR)


def test_the_tuning_report_reads_the_committed_tuning_grid(monkeypatch):
    import fedtrain.fig6_checks as f6

    tune = deep_grid("fig6-fashion-tune")
    rows = [_row(c, 0.5 + c.lr) for c in tune]  # every choice at the top
    held = {"fig6-fashion-tune": (rows, tune)}
    monkeypatch.setattr(f6, "committed_grid", lambda store, grid: held.get(grid))
    rep = f6.tuning_report(None, "fig6-fashion-tuned")
    assert (rep["grid"], rep["present"], rep["runs"]) == ("fig6-fashion-tune", len(tune), len(tune))
    assert rep["bracket"]["private"] == (0.01, 0.03, 0.1, 0.3) and rep["table"].count("(top of the bracket)") == 20
    assert len(rep["at_edge"]) == 20 and {s["edge"] for s in rep["at_edge"]} == {"top"}
    assert rep["scores"] == f6.tuning_scores(rows) and {s["chosen"] for s in rep["scores"]} == {0.3}
    held.clear()
    assert f6.tuning_report(None, "fig6-fashion-tuned") is None
    for bad in ("fig6-fashion-tune", "fig6-fashion", "nope"):
        with pytest.raises(ValueError, match="tuned must be a tuned grid"):
            f6.tuning_report(None, bad)


def test_cluster_recovery_summarizes_ifca_rows_per_mask_privacy_and_kind():
    from fedtrain.analysis import cluster_recovery, cluster_recovery_table

    fig6 = [c for c in FIG6 if c.method in ("ifca", "ifca-mrmtl", "local")]
    def extras(c):
        if c.method == "local":
            return {}
        return {"cluster_ari": 1.0 if math.isinf(c.eps) else 0.5 + 0.1 * c.seed, "clusters_frozen_round": 4 + 2 * c.seed}
    rows = [SimpleNamespace(config=c, extras=extras(c)) for c in fig6]
    rec = cluster_recovery(rows)
    # 3 masks x 3 privacy levels (ε = 4, the clip-only controls, no DP) x 2 kinds
    assert len(rec) == 3 * 3 * 2 and [d["mask"] for d in rec] == sorted(d["mask"] for d in rec)
    ifca4 = next(d for d in rec if d["mask"] == 0.25 and d["eps"] == 4.0 and d["who"] == "IFCA")
    assert ifca4["runs"] == 2 and ifca4["ari"] == pytest.approx(0.55) and ifca4["ari_min"] == 0.5
    assert ifca4["recovered"] == 0 and ifca4["frozen"] == 5.0
    nodp = next(d for d in rec if d["mask"] == 0.0 and math.isinf(d["eps"]) and d["who"] == "IFCA warm starts")
    assert nodp["recovered"] == nodp["runs"] == 8 and nodp["ari"] == 1.0
    table = cluster_recovery_table(rows)
    assert table.count("\n") == 1 + len(rec) and "| 0.25 | ε = 4, IFCA | 2 | 0.55 (0.50) | 0 of 2 | 5 |" in table
    named = cluster_recovery_table(rows, clip_only_eps=CLIP_ONLY)
    assert f"| 0.25 | clip only (ε = {CLIP_ONLY:,.0f}), IFCA | 2 |" in named and f"ε = {CLIP_ONLY:g}" not in named
    assert "| 0.25 | ε = 4, IFCA | 2 | 0.55 (0.50) | 0 of 2 | 5 |" in named
    with pytest.raises(ValueError, match="cluster selection"):
        cluster_recovery_table([r for r in rows if r.config.method == "local"])
