"""check_claims on planted results (claims 3, 5 and 6 can fail), the claims figure, and the opted-out group's share of
distinct training images counted by content."""
from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from fedtrain.clientdp.accounting import group_epsilon  # noqa: E402
from fedtrain.fedhdp.experiments import check_claims, grid_provenance  # noqa: E402
from fedtrain.fedhdp.figures import personal_accuracy, plot_claims_vs_ratio  # noqa: E402

Z, Q, T, DELTA = 1.133, 0.05, 200, 1e-4
EPS = group_epsilon(Z, Q, T, DELTA)


def _row(ds, method, ratio, seed, acc_g, *, eps=EPS, rounds=T, delta_g=0.0):
    groups = {"nonprivate": {"clients": 2000, "epsilon": "inf", "rounds_released": 0}}
    metrics = {"acc_g": acc_g, "acc_g_p": math.nan, "acc_g_np": acc_g, "delta_g": math.nan, "acc_l_p": math.nan,
               "acc_l_np": 99.0, "delta_l": math.nan}
    if method != "nonprivate":
        groups = {"private": {"clients": 2000 if method == "dp-fedavg" else 1900, "epsilon": eps,
                              "rounds_released": rounds}}
        metrics.update(acc_g_p=acc_g, acc_l_p=98.0)
        if method != "dp-fedavg":
            groups["nonprivate"] = {"clients": 100, "epsilon": "inf", "rounds_released": 0}
            metrics.update(acc_g_np=acc_g + delta_g, delta_g=delta_g, acc_l_np=100.0, delta_l=2.0)
    return {"config": {"dataset": ds, "method": method, "ratio": ratio, "seed": seed, "noise_multiplier": Z,
                       "sample_rate": Q, "rounds": T},
            "metrics": metrics, "wall_time": 10.0 + seed,
            "privacy": {"groups": groups, "accountant": "rdp", "delta": DELTA, "sample_rate": Q,
                        "effective_noise_multiplier": Z, "adjacency": "client-level DP: add/remove one client",
                        "unaccounted": "tuning", "epsilon": eps},
            "data": {"identity": {"files": {ds: "0" * 8}}, "real": True}}


def _grid(curve_plain, curve_skewed, spread=(-0.3, 0.0, 0.3), base=70.0):
    rows = []
    for ds, curve in (("a", curve_plain), ("b", curve_skewed)):
        for s, d in enumerate(spread):
            rows += [_row(ds, m, 1.0, s, base + d) for m in ("nonprivate", "dp-fedavg", "hdp-fedavg")]
            rows += [_row(ds, "fedhdp", r, s, acc + d, delta_g=1.0) for r, acc in curve.items()]
    return rows


def _outcome(checks, prefix):
    return [c.holds for c in checks if c.claim.startswith(prefix)]


def test_claim3_needs_a_clear_order_not_just_another_argmax():
    plain = {0.0: 40.0, 0.1: 80.0, 0.5: 75.0}
    clear = check_claims(_grid(plain, {0.0: 10.0, 0.1: 72.0, 0.5: 78.0}), plain="a", skewed="b")
    assert _outcome(clear, "3") == [True]
    assert "best r: 0.1 (a) vs 0.5 (b)" in next(c.detail for c in clear if c.claim.startswith("3"))
    # the same arg-max, but both datasets nearly flat between the two ratios: seed noise, not a moved optimum
    flat = check_claims(_grid({0.0: 40.0, 0.1: 75.1, 0.5: 75.0}, {0.0: 10.0, 0.1: 75.0, 0.5: 75.1},
                              spread=(-3.0, 0.0, 3.0)), plain="a", skewed="b")
    assert _outcome(flat, "3") == [False]
    same = check_claims(_grid(plain, {0.0: 10.0, 0.1: 78.0, 0.5: 72.0}), plain="a", skewed="b")
    assert _outcome(same, "3") == [False]


def _verdicts(checks, prefix):
    return [c.verdict for c in checks if c.claim.startswith(prefix)]


def test_claim3_on_point_estimates_only_is_a_tie_not_a_hold():
    """The plain data clearly prefer their best r (0.1) to the skewed data's (0.5), but the skewed data prefer 0.5 to
    0.1 only within 2 SE (seed spread ±3): the arg-max moved on point estimates only, a tie."""
    from fedtrain.fedhdp.experiments import CLAIM3_SCOPE, FAILS, HOLDS, TIE

    plain = {0.0: 40.0, 0.1: 80.0, 0.5: 75.0}
    rows = _grid(plain, {0.0: 10.0, 0.1: 75.0, 0.5: 76.0})
    for r in rows:  # a wide spread over seeds on the skewed data only
        c = r["config"]
        if c["dataset"] == "b" and c["method"] == "fedhdp":
            r["metrics"]["acc_g"] += (-3.0, 0.0, 3.0)[c["seed"]]
    (c3,) = [c for c in check_claims(rows, plain="a", skewed="b") if c.claim.startswith("3")]
    assert c3.verdict == TIE and not c3.holds and c3.scope == CLAIM3_SCOPE, c3
    assert "best r: 0.1 (a) vs 0.5 (b)" in c3.detail
    clear = check_claims(_grid(plain, {0.0: 10.0, 0.1: 72.0, 0.5: 78.0}), plain="a", skewed="b")
    assert _verdicts(clear, "3") == [HOLDS]
    same = check_claims(_grid(plain, {0.0: 10.0, 0.1: 78.0, 0.5: 72.0}), plain="a", skewed="b")
    assert _verdicts(same, "3") == [FAILS]


def test_claim1_within_two_se_is_a_tie():
    from fedtrain.fedhdp.experiments import FAILS, HOLDS, TIE

    for gain, want in ((5.0, HOLDS), (0.2, TIE), (0.0, TIE), (-0.2, TIE), (-5.0, FAILS)):
        rows = _grid({0.0: 40.0, 0.1: 70.0 + gain}, {0.0: 10.0, 0.1: 70.0 + gain})
        assert set(_verdicts(check_claims(rows, plain="a", skewed="b"), "1 ")) == {want}, (gain, want)


def test_claim5_says_it_holds_by_construction_and_is_an_implementation_check():
    from fedtrain.fedhdp.experiments import CLAIM5_SCOPE, IMPLEMENTATION_CHECK, PAPER_CLAIM, format_checks

    checks = check_claims(_grid({0.0: 40.0, 0.1: 80.0}, {0.0: 10.0, 0.1: 80.0}), plain="a", skewed="b")
    five = [c for c in checks if c.claim.startswith("5")]
    assert five and all(c.kind == IMPLEMENTATION_CHECK and c.scope == CLAIM5_SCOPE for c in five)
    assert "by construction at r = 1" in CLAIM5_SCOPE
    assert all(c.kind == PAPER_CLAIM for c in checks if c.claim[0] in "1234")
    text = format_checks(checks)
    assert "| implementation check |" in text and "*Claim 5:* Holds by construction" in text
    assert text.count("*Claim 5:*") == 1


def test_claim5_fails_when_dp_and_hdp_fedavg_differ():
    rows = _grid({0.0: 40.0, 0.1: 80.0}, {0.0: 10.0, 0.1: 80.0})
    assert _outcome(check_claims(rows, plain="a", skewed="b"), "5") == [True, True]
    for r in rows:
        if r["config"]["method"] == "hdp-fedavg" and r["config"]["dataset"] == "b":
            r["metrics"]["acc_g"] -= 5.0
    assert _outcome(check_claims(rows, plain="a", skewed="b"), "5") == [True, False]


def test_claim6_recomputes_epsilon_and_compares_with_the_target():
    rows = _grid({0.0: 40.0, 0.1: 80.0}, {0.0: 10.0, 0.1: 80.0})
    assert _outcome(check_claims(rows, plain="a", skewed="b", epsilon_target=3.6), "6") == [True]
    assert _outcome(check_claims(rows, plain="a", skewed="b", epsilon_target=3.5), "6") == [False]
    assert not _outcome(check_claims(rows, plain="a", skewed="b"), "6")  # no target: not checked
    rows[4]["privacy"]["groups"]["private"]["epsilon"] = EPS * 0.9  # a recorded ε its rounds do not give
    assert _outcome(check_claims(rows, plain="a", skewed="b", epsilon_target=3.6), "6") == [False]


def test_grid_provenance_reads_the_rows():
    rows = _grid({0.0: 40.0, 0.1: 80.0}, {0.0: 10.0, 0.1: 80.0})
    p = grid_provenance(rows, "claims-fashion", target_epsilon=3.6, command="cmd", rows_commit="abc", missing=2)
    assert p["epsilon_spent"] == EPS and p["noise_multiplier"] == Z and p["missing_runs"] == 2 and p["seeds"] == [0, 1, 2]
    assert p["seconds_per_run"]["median"] == 11.0 and p["data_identity"]["a"] == {"files": {"a": "0" * 8}}
    assert p["target_epsilon"] == 3.6
    for bad in (0.0, -1.0, math.inf, "3.6"):
        with pytest.raises(ValueError, match="target_epsilon must be a positive finite number"):
            grid_provenance(rows, "claims-fashion", target_epsilon=bad, command="cmd")
    # without rows_commit: the commits the rows' provenance names, counted; rows without one say so
    for r in rows[:3]:
        r["provenance"] = {"commit": "c1"}
    rows[3]["provenance"] = {"commit": "c2"}
    n = len(rows)
    assert grid_provenance(rows, "claims-fashion", target_epsilon=3.6, command="cmd")["rows_commit"] == \
        f"c1 (3 runs), c2 (1 run), not recorded ({n - 4} runs)"
    rows[0]["config"]["noise_multiplier"] = 2.0
    with pytest.raises(ValueError, match="noise multiplier"):
        grid_provenance(rows, "claims-fashion", target_epsilon=3.6, command="cmd")


def test_personal_accuracy_weights_groups_by_clients():
    row = _row("a", "fedhdp", 0.1, 0, 80.0)  # 1900 private clients at 98 %, 100 opted out at 100 %
    assert personal_accuracy(row) == pytest.approx((1900 * 98.0 + 100 * 100.0) / 2000)
    assert personal_accuracy(_row("a", "nonprivate", 1.0, 0, 80.0)) == 99.0


def test_claims_figure_has_labelled_panels_bands_and_r0_note():
    rows = _grid({0.0: 10.0, 0.01: 60.0, 0.1: 80.0}, {0.0: 10.0, 0.01: 60.0, 0.1: 80.0})
    fig = plot_claims_vs_ratio(rows, ("a", "b"), setting="setting line")
    axes = np.array(fig.axes).reshape(2, 2)
    assert [ax.get_title() for ax in axes[0]] == ["a", "b"]
    assert all(ax.get_xlabel() for ax in axes[1]) and all(ax.get_ylabel() for ax in axes[:, 0])
    for ax in fig.axes:
        labels = [t.get_text() for t in ax.get_legend().get_texts()]
        assert len(labels) == 4 and any("DP-FedAvg" in t for t in labels)
        assert len(ax.patches) >= 3  # one band per baseline
    assert any("r = 0: 10.0" in t.get_text() and "below the axis" in t.get_text() for t in axes[0, 0].texts)
    assert any(t.get_text() == "setting line" for t in fig.texts)
    plt.close(fig)


def test_opted_out_share_of_distinct_images_counted_by_content():
    from fedtrain.data.noniid_fashion import nonprivate_distinct_share
    from fedtrain.data.registry import load_dataset

    d = load_dataset("noniid-digits", num_clients=200, samples_per_client=30, test_per_client=2)
    held, total, share = nonprivate_distinct_share(d)
    flat = np.concatenate(d.train_x)
    assert total == len(np.unique(flat, axis=0)) and 0 < held <= total and share == held / total
    mine = np.concatenate([d.train_x[j] for j in d.info["nonprivate_clients"]])
    assert held == len(np.unique(mine, axis=0))


def test_the_digit_scale_still_runs_from_its_store(tmp_path, monkeypatch, capsys):
    """``fedtrain fedhdp-claims --scale claims`` serves the committed digit runs from a store holding them (trains
    nothing), checks claims 1-5 and packs the scale's file into a committed store, which serves the same rows."""
    import json

    from fedtrain.book_results import committed_store
    from fedtrain.cli import main
    from fedtrain.config import ENGINE_VERSION
    from fedtrain.results import FORMAT, MANIFEST
    from tests.conftest import store_that_must_not_train

    name = "fedhdp-claims-digits"
    rows = committed_store().client_rows(name)
    store = store_that_must_not_train(rows, tmp_path / "store", monkeypatch, "fedtrain fedhdp-claims --scale claims")
    out = tmp_path / "committed"
    out.mkdir()
    (out / MANIFEST).write_text(json.dumps({"format": FORMAT, "engine_version": ENGINE_VERSION, "files": {}}))
    assert main(["fedhdp-claims", "--scale", "claims", "--results", str(store.root), "--pack", str(out)]) == 0
    text = capsys.readouterr().out
    assert "[holds] claim 4" in text and "claim 5 (noniid-digits)" in text and "claim 6" not in text
    packed = committed_store(out)
    assert {k: v for k, v in packed.client_header(name).items() if k != "manifest"} == {
        "scale": "claims", "command": "fedtrain fedhdp-claims --scale claims"}
    key = lambda rs: [json.dumps([r["config"], r["metrics"], r["privacy"]], sort_keys=True) for r in rs]  # noqa: E731
    assert key(packed.client_rows(name)) == key(rows)


def test_rounds_within_is_the_last_round_inside_the_budget():
    from fedtrain.clientdp.accounting import rounds_within

    for acc in ("rdp", "pld"):
        t = rounds_within(1.0, 1.5, 0.05, 1e-4, acc)
        assert group_epsilon(1.5, 0.05, t, 1e-4, acc) <= 1.0 < group_epsilon(1.5, 0.05, t + 1, 1e-4, acc)
    # the calibrated grid: z = 1.133 fits exactly its 200 rounds within the paper's 3.6 (RDP)
    assert rounds_within(3.6, Z, Q, DELTA) == T
    assert rounds_within(1e-3, 1.5, 0.05, 1e-4) == 0  # one round already costs more
    for kw, match in (({"epsilon": 0.0}, "epsilon must be"), ({"noise_multiplier": 0.0}, "noise_multiplier must be")):
        args = {"epsilon": 1.0, "noise_multiplier": 1.5, "sample_rate": 0.05, "delta": 1e-4, **kw}
        with pytest.raises(ValueError, match=match):
            rounds_within(**args)
    with pytest.raises(ValueError, match="raise max_rounds"):
        rounds_within(100.0, 5.0, 0.05, 1e-4, max_rounds=10)
