"""IFCA's selection schedule (select_every) and the cluster recovery stored with every IFCA row."""
from __future__ import annotations

import math
import subprocess
import sys
from itertools import combinations

import numpy as np
import pytest

from fedtrain.config import RunConfig
from fedtrain.engine import run
from fedtrain.methods.ifca import schedule
from fedtrain.testing import tiny_federated


@pytest.fixture(scope="module")
def clustered():
    return tiny_federated("regression", num_silos=8, dim=5, clusters=2, cluster_scale=3.0, tau=0.1, n_range=(80, 120),
                          seed=7)


def cfg(method="ifca", **kw):
    base = dict(dataset="tiny", method=method, eps=2.0, lam=0.1, lr=0.05, rounds=12, batch_size=16, clip=1.0,
                seed=0, select_frac=0.25)
    base.update(kw)
    return RunConfig(**base)


def ari(a, b):
    """The adjusted Rand index from pair counts (Hubert & Arabie 1985), written out independently of sklearn."""
    pairs = list(combinations(range(len(a)), 2))
    same_a = np.array([a[i] == a[j] for i, j in pairs])
    same_b = np.array([b[i] == b[j] for i, j in pairs])
    both, n = float(np.sum(same_a & same_b)), len(pairs)
    expected = same_a.sum() * same_b.sum() / n
    top = 0.5 * (same_a.sum() + same_b.sum())
    return (both - expected) / (top - expected)


def test_schedule_spreads_the_selections():
    assert schedule(0.25, 40) == tuple(range(10))
    assert schedule(0.25, 40, 4) == tuple(range(0, 40, 4))
    assert schedule(0.01, 40, 7) == (0,)  # at least one selection


def test_default_schedule_keeps_the_stored_keys():
    a, b = cfg(), cfg(select_every=2)
    assert "select_every" not in a.to_dict()["options"] and b.to_dict()["options"]["select_every"] == 2
    assert a.key() != b.key() and RunConfig.from_dict(a.to_dict()) == a and RunConfig.from_dict(b.to_dict()) == b


def test_schedule_past_the_last_round_is_an_error(clustered):
    with pytest.raises(ValueError, match=r"select_every=4 puts IFCA's last private selection \(of 3\) at round 9, "
                                         r"past the last round 8: select_every must be <= 3"):
        run(cfg(rounds=8, select_frac=0.4, select_every=4), clustered)
    with pytest.raises(ValueError, match="select_every must be"):
        cfg(select_every=0)


def test_cli_schedule_past_the_last_round_is_one_line():
    out = subprocess.run([sys.executable, "-m", "fedtrain", "run", "--dataset", "rotated-masked-digits", "--method",
                          "ifca", "--rounds", "4", "--select-frac", "0.5", "--select-every", "4", "--eps", "8"],
                         capture_output=True, text=True)
    lines = out.stderr.strip().splitlines()
    assert out.returncode != 0 and len(lines) == 1 and "select_every=4" in lines[0], out.stderr


def test_spread_selections_run_charge_and_record_recovery(clustered):
    first = run(cfg(), clustered)
    spread = run(cfg(select_every=3), clustered)
    for r, rounds in ((first, (0, 1, 2)), (spread, (0, 3, 6))):
        assert r.extras["selection_rounds"] == list(rounds) and r.extras["selections"] == 3
        assert r.extras["clusters_frozen_round"] in rounds
        assert r.extras["cluster_ari"] == pytest.approx(ari(r.extras["clusters"], clustered.info["cluster_of_silo"]))
        assert 0.0 <= r.extras["cluster_rand"] <= 1.0
    # the same 3 selections at the same ε_sel: the same DP-SGD noise and the same ε
    np.testing.assert_array_equal(first.noise_multipliers, spread.noise_multipliers)
    np.testing.assert_allclose(first.eps_spent, spread.eps_spent)
    assert first.ledger == spread.ledger


def test_ifca_mrmtl_is_ifca_until_the_last_spread_selection(clustered):
    """Same random streams: the same cluster models up to the last selection (round 6), so the same selections."""
    a = run(cfg("ifca", select_every=3), clustered)
    b = run(cfg("ifca-mrmtl", select_every=3), clustered)
    assert a.extras["clusters"] == b.extras["clusters"]
    assert a.extras["clusters_frozen_round"] == b.extras["clusters_frozen_round"]
    np.testing.assert_array_equal(a.noise_multipliers, b.noise_multipliers)
    assert not math.isclose(a.test_metric, b.test_metric)  # after it, MR-MTL toward the cluster models


def test_clusters_recovered_without_privacy_score_ari_one(clustered):
    r = run(cfg(eps=math.inf, rounds=10, select_frac=0.5, lr=0.1, select_every=2), clustered)
    got, truth = np.array(r.extras["clusters"]), np.array(clustered.info["cluster_of_silo"])
    recovered = np.array_equal(got[:, None] == got[None, :], truth[:, None] == truth[None, :])
    assert recovered == (r.extras["cluster_ari"] == pytest.approx(1.0))
    assert recovered


def test_rotated_masked_rows_score_against_the_rotation_groups():
    """On a rotated & masked set the recovery is scored against ``info["rotation_group"]`` (4 groups of silos)."""
    from fedtrain.sweep import load_config_data

    c = RunConfig(dataset="rotated-masked-digits", method="ifca", model="linear", eps=8.0, lr=0.1, rounds=4,
                  batch_size=16, clip=1.0, delta=1e-5, num_clusters=4, select_frac=0.5, select_every=2,
                  dataset_options={"image_size": 8})
    data = load_config_data(c)
    r = run(c, data)
    groups = list(data.info["rotation_group"])
    assert len(set(groups)) == 4 and r.extras["selection_rounds"] == [0, 2]
    assert r.extras["cluster_ari"] == pytest.approx(ari(r.extras["clusters"], groups))


def test_a_clip_only_control_of_ifca_runs_and_selects_like_the_run_without_dp(clustered):
    """At the private run's selection fraction the clip-only control's selections alone would exceed ε = 10⁶ (no
    noise multiplier could meet it); its control selects at ε_sel = CLIP_ONLY_SELECT_EPS, attainably."""
    from fedtrain.ledger import selection_epsilon
    from fedtrain.regime import CLIP_ONLY_EPS, CLIP_ONLY_SELECT_EPS, clip_only_control

    private = cfg(method="ifca-mrmtl")
    assert selection_epsilon(3, private.options.select_eps_frac * CLIP_ONLY_EPS, 1e-5) > CLIP_ONLY_EPS
    control = clip_only_control(private)
    assert control.eps == CLIP_ONLY_EPS and control.clip == private.clip and control.lr == private.lr
    assert control.options.select_eps_frac * CLIP_ONLY_EPS == pytest.approx(CLIP_ONLY_SELECT_EPS)
    got = run(control, clustered)  # attainable: calibrated, run, and its spent ε within the target
    assert max(got.eps_spent) <= CLIP_ONLY_EPS and max(got.noise_multipliers) < 1e-2
    assert got.extras["select_eps"] == pytest.approx([CLIP_ONLY_SELECT_EPS] * len(got.extras["select_eps"]))
    assert clip_only_control(cfg(method="local")).options == cfg(method="local").options  # no selection to scale
    with pytest.raises(ValueError, match="private run"):
        clip_only_control(private.replace(eps=math.inf))
    with pytest.raises(ValueError, match="clip_only_eps"):
        clip_only_control(private, math.inf)
