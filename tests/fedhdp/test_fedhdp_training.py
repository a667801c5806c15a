"""FedHDP training (fedtrain.fedhdp): clipping, per-group noise, ledger, the null test, bad input, determinism."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from fedtrain.data.registry import load_dataset
from fedtrain.clientdp.config import FedHDPConfig
from fedtrain.clientdp.trainer import train
from fedtrain.clientdp import trainer as T
from fedtrain.models.client import client_loss, pad_clients
from fedtrain.clientdp.accounting import (PAPER_PRIVACY, effective_noise_multiplier, group_epsilon,
                                          update_noise_multiplier)

SMALL = dict(num_clients=40, samples_per_client=6, test_per_client=4, nonprivate_fraction=0.1)


@pytest.fixture(scope="module")
def small():
    return load_dataset("noniid-digits", **SMALL)


def cfg(**kw):
    base = dict(dataset="noniid-digits", dataset_options=SMALL, rounds=4, sample_rate=0.5, local_epochs=1,
                batch_size=3, hidden=8, count_noise_per_client=0.2)
    base.update(kw)
    return FedHDPConfig(**base)


# ------------------------------------------------------------------------------------------ clipping
def test_clip_updates_bound_and_bits():
    g = torch.Generator().manual_seed(0)
    delta = torch.randn(200, 50, generator=g) * torch.rand(200, 1, generator=g) * 3
    S = 2.0
    clipped, bits = T.clip_updates(delta, S)
    norms = torch.linalg.vector_norm(delta, dim=1)
    cn = torch.linalg.vector_norm(clipped, dim=1)
    assert float(cn.max()) <= S * (1 + 1e-6)
    small = norms <= S
    assert torch.equal(bits.bool(), small)
    assert torch.allclose(clipped[small], delta[small])  # below the bound: untouched
    assert torch.allclose(cn[~small], torch.full_like(cn[~small], S), rtol=1e-5)  # above: scaled onto the sphere
    # direction kept
    cos = (clipped * delta).sum(1) / (cn * norms)
    assert torch.allclose(cos, torch.ones_like(cos), atol=1e-5)


def test_trained_updates_are_clipped(small, monkeypatch):
    seen = []
    orig = T.clip_updates

    def spy(delta, clip):
        out = orig(delta, clip)
        seen.append((float(torch.linalg.vector_norm(out[0], dim=1).max()) if len(delta) else 0.0, clip,
                     float(torch.linalg.vector_norm(delta, dim=1).max()) if len(delta) else 0.0))
        return out

    monkeypatch.setattr(T, "clip_updates", spy)
    train(cfg(method="fedhdp", ratio=0.5, clip=0.05, clip_lr=0.0, lr=0.5), small)
    assert seen and all(c <= s * (1 + 1e-6) for c, s, _ in seen)
    assert any(raw > s for _, s, raw in seen)  # the bound was active


# ------------------------------------------------------------------------------------------ noise per group
def test_server_noise_std_per_group():
    """Noise on the private group's average has std z S / N_g (measured over 40,000 coordinates); none on the other."""
    D, z, S = 40_000, 1.5, 0.7
    member = torch.zeros(2, 30, dtype=torch.bool)
    member[0, :4] = True
    member[1, 4:] = True
    clipped = torch.zeros(30, D)
    gen = torch.Generator().manual_seed(1)
    _, det = T.server_aggregate(clipped, member, [1.0, 0.3], [0.0, z * S], None, gen)
    avg = det["averages"]
    assert float(avg[0].abs().max()) == 0.0  # the non-private group: no noise at all
    sd = float(avg[1].std())
    target = z * S / 26
    se = target / math.sqrt(2 * D)
    assert abs(sd - target) < 4 * se, (sd, target, se)
    w = det["weights"]
    assert torch.allclose(w, torch.tensor([4.0, 0.3 * 26]) / (4 + 0.3 * 26))


@pytest.mark.parametrize("method,ratio", [("dp-fedavg", 1.0), ("fedhdp", 0.25), ("nonprivate", 1.0)])
def test_end_to_end_noise_scale(small, monkeypatch, method, ratio):
    """With zero local updates, θ_T − θ_0 is the sum of T noise draws: std √T·w_p·z S/(q N_p) (expected counts)."""
    def zero_update(model, loss, theta, personal, *a, **k):
        return torch.zeros(personal.shape[0], theta.numel()), personal
    monkeypatch.setattr(T, "local_update", zero_update)
    c = cfg(method=method, ratio=ratio, rounds=9, clip_lr=0.0, clip=0.8, noise_multiplier=2.0,
            denominator="expected", hidden=200)
    t0 = T.FCNet(small.dim, 200, 10).init(torch.Generator().manual_seed(c.seed))
    res = train(c, small, keep_models=True)
    step = res.global_model - t0.numpy()
    q, S, z = c.sample_rate, c.clip, c.noise_multiplier
    n_np = len(small.info["nonprivate_clients"])
    n_p = small.num_silos - n_np
    if method == "nonprivate":
        assert np.abs(step).max() == 0.0
        return
    if method == "dp-fedavg":
        target = math.sqrt(c.rounds) * z * S / (q * small.num_silos)
    else:
        w_p = ratio * q * n_p / (q * n_np + ratio * q * n_p)
        target = math.sqrt(c.rounds) * w_p * z * S / (q * n_p)
    sd = float(step.std())
    se = target / math.sqrt(2 * step.size)
    assert abs(sd - target) < 4 * se, (sd, target)


# ------------------------------------------------------------------------------------------ ledger
def test_nonprivate_group_spends_nothing(small):
    res = train(cfg(method="fedhdp", ratio=0.3), small)
    g = res.privacy["groups"]
    assert g["nonprivate"]["rounds_released"] == 0 and g["nonprivate"]["epsilon"] == math.inf
    assert g["private"]["rounds_released"] == 4
    want = group_epsilon(res.privacy["effective_noise_multiplier"], 0.5, 4, 1e-4)
    assert g["private"]["epsilon"] == pytest.approx(want, rel=1e-12)
    assert "client-level" in res.privacy["adjacency"]
    # r = 0: the private group is never contacted, so it releases (and spends) nothing
    r0 = train(cfg(method="fedhdp", ratio=0.0), small)
    assert r0.privacy["groups"]["private"]["rounds_released"] == 0 and r0.privacy["groups"]["private"]["epsilon"] == 0
    assert r0.metrics["acc_l_p"] == r0.metrics["acc_g_p"]  # private clients never train


def test_count_noise_is_accounted(small):
    res = train(cfg(method="dp-fedavg", noise_multiplier=1.2), small)
    p = res.privacy
    assert p["count_noise"] > 0 and p["update_noise_multiplier"] > p["effective_noise_multiplier"]
    assert p["check_effective"] == pytest.approx(1.2, rel=1e-12)
    assert update_noise_multiplier(1.5, 4.75) == pytest.approx((1.5 ** -2 - 9.5 ** -2) ** -0.5)
    assert effective_noise_multiplier(update_noise_multiplier(1.5, 4.75), 4.75) == pytest.approx(1.5)
    with pytest.raises(ValueError, match="count noise"):
        update_noise_multiplier(1.5, 0.5)
    fixed = train(cfg(method="dp-fedavg", noise_multiplier=1.2, clip_lr=0.0), small)
    assert fixed.privacy["count_noise"] is None and fixed.privacy["update_noise_multiplier"] == 1.2
    assert np.all(fixed.clip_history == 0.5)


def test_adaptive_clipping_moves_toward_quantile(small):
    """Without noise (non-private) every update below a huge S: S shrinks by exp(−η_b(1 − κ)) per round."""
    res = train(cfg(method="nonprivate", clip=1e6, clip_lr=0.2, clip_quantile=0.5, rounds=3), small)
    assert res.clip_history == pytest.approx(1e6 * np.exp(-0.1 * np.arange(1, 4)), rel=1e-9)


@pytest.mark.parametrize("name", list(PAPER_PRIVACY))
def test_paper_epsilon_from_ledger_of_a_run(name):
    """Claim 6: a 500-round run at the paper's q and z, δ = 1e-4, charges the ε the paper prints (RDP)."""
    q, z, rounds, delta, printed = PAPER_PRIVACY[name]
    data = load_dataset("noniid-digits", num_clients=20, samples_per_client=2, test_per_client=1,
                        nonprivate_fraction=0.1)
    c = FedHDPConfig(dataset="noniid-digits", method="fedhdp", ratio=0.5, rounds=rounds, sample_rate=q,
                     noise_multiplier=z, delta=delta, hidden=2, batch_size=2, clip_lr=0.0)
    res = train(c, data)
    eps = res.privacy["groups"]["private"]["epsilon"]
    assert res.privacy["groups"]["private"]["rounds_released"] == 500
    assert round(eps, 1) == printed, (name, eps)


# ------------------------------------------------------------------------------------------ claim 5
def test_dp_fedavg_equals_hdp_fedavg_at_r1_one_round():
    g1, g2 = torch.Generator().manual_seed(3), torch.Generator().manual_seed(3)
    clipped = torch.randn(12, 500, generator=torch.Generator().manual_seed(4))
    two = torch.zeros(2, 12, dtype=torch.bool)
    two[0, :3] = True
    two[1, 3:] = True
    a, _ = T.server_aggregate(clipped, two, [1.0, 1.0], [0.0, 0.9], None, g1)
    b, _ = T.server_aggregate(clipped, torch.ones(1, 12, dtype=torch.bool), [1.0], [0.9], None, g2)
    assert torch.allclose(a, b, atol=1e-6)


def test_dp_fedavg_and_hdp_fedavg_same_distribution(small):
    """Claim 5 (null test): at r = 1 the two baselines release the same aggregate; over seeds the accuracies agree."""
    a = [train(cfg(method="dp-fedavg", seed=s, rounds=6), small).metrics["acc_g"] for s in range(4)]
    b = [train(cfg(method="hdp-fedavg", seed=s, rounds=6), small).metrics["acc_g"] for s in range(4)]
    diff = np.array(a) - np.array(b)
    assert np.abs(diff).max() < 2.0  # same seeds: the same trajectory up to float rounding
    se = math.sqrt(np.var(a, ddof=1) / 4 + np.var(b, ddof=1) / 4) + 1e-9
    assert abs(np.mean(a) - np.mean(b)) < 4 * se + 0.5


# ------------------------------------------------------------------------------------------ bad input
@pytest.mark.parametrize("kw,name", [(dict(ratio=1.5), "ratio"), (dict(ratio=-0.1), "ratio"),
                                     (dict(sample_rate=0.0), "sample_rate"), (dict(sample_rate=1.2), "sample_rate"),
                                     (dict(method="fedprox"), "method"), (dict(rounds=0), "rounds")])
def test_bad_config(kw, name):
    with pytest.raises(ValueError, match=name):
        cfg(**kw)


@pytest.mark.parametrize("frac", [0.0, 1.0, -0.2, 1.5])
def test_bad_opt_out_fraction(frac):
    with pytest.raises(ValueError, match="nonprivate_fraction"):
        load_dataset("noniid-digits", num_clients=20, nonprivate_fraction=frac)
    with pytest.raises(ValueError, match="nonprivate_fraction"):
        load_dataset("femnist-standin", num_clients=20, nonprivate_fraction=frac)


def test_empty_privacy_group(small, monkeypatch):
    import copy

    d = copy.copy(small)
    d.info = dict(small.info, nonprivate_clients=np.arange(small.num_silos))
    called = []
    monkeypatch.setattr(T, "local_update", lambda *a, **k: called.append(1))
    with pytest.raises(ValueError, match="privacy group 'private' has no clients"):
        train(cfg(method="fedhdp"), d)
    d.info = dict(small.info, nonprivate_clients=np.array([], dtype=int))
    with pytest.raises(ValueError, match="privacy group 'nonprivate' has no clients"):
        train(cfg(method="hdp-fedavg"), d)
    assert not called  # nothing trained


# ------------------------------------------------------------------------------------------ determinism
def test_seeded_runs_repeat(small):
    a = train(cfg(method="fedhdp", ratio=0.2, seed=5), small)
    b = train(cfg(method="fedhdp", ratio=0.2, seed=5), small)
    c = train(cfg(method="fedhdp", ratio=0.2, seed=6), small)
    assert a.metrics == b.metrics and np.array_equal(a.clip_history, b.clip_history)
    assert a.metrics != c.metrics


def test_vectorized_local_update_matches_per_client_loop(small):
    """vmap over clients gives each client's own local training (checked against a loop of single clients)."""
    model = T.FCNet(small.dim, 8, 10)
    loss = client_loss(model, "multiclass")
    x, y, m = pad_clients(small.train_x[:5], small.train_y[:5])
    theta = model.init(torch.Generator().manual_seed(0))
    lam = torch.full((5,), 0.1)
    lrp = torch.full((5,), 0.3)
    pers = theta.expand(5, -1).clone()
    full, vfull = T.local_update(model, loss, theta, pers, x, y, m, lam, 0.5, lrp, 2, 100, torch.Generator())
    for k in range(5):
        dk, vk = T.local_update(model, loss, theta, pers[k:k + 1], x[k:k + 1], y[k:k + 1], m[k:k + 1], lam[k:k + 1],
                                0.5, lrp[k:k + 1], 2, 100, torch.Generator())
        assert torch.allclose(full[k], dk[0], atol=1e-6) and torch.allclose(vfull[k], vk[0], atol=1e-6)


# ------------------------------------------------------------------------------------------ CLI
def test_cli_run_fedhdp_json(capsys):
    import json

    from fedtrain.cli import main

    argv = ["run", "--dataset", "noniid-digits", "--method", "fedhdp", "--ratio", "0.2", "--lam-private", "0.01",
            "--lam-nonprivate", "0.1", "--rounds", "2", "--sample-rate", "0.5", "--hidden", "4",
            "--count-noise-per-client", "0.2", "-D", "num_clients=40", "-D", "samples_per_client=4",
            "-D", "nonprivate_fraction=0.1", "--seeds", "0,1", "--json"]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["method"] == "fedhdp" and out["ratio"] == 0.2 and out["seeds"] == [0, 1]
    assert out["metrics"]["acc_g"]["n"] == 2 and len(out["metrics"]["acc_g"]["values"]) == 2
    g = out["privacy"]["groups"]
    assert g["private"]["lambda"] == 0.01 and g["nonprivate"]["lambda"] == 0.1
    assert g["nonprivate"]["epsilon"] == "inf" and g["nonprivate"]["rounds_released"] == 0
    assert "client-level" in out["privacy"]["adjacency"]
    # a baseline through the same flags, less the non-private group's λ: dp-fedavg has no such group
    baseline = argv[:4] + ["dp-fedavg"] + argv[7:]
    i = baseline.index("--lam-nonprivate")
    assert main(baseline[:i] + baseline[i + 2:]) == 0
    assert json.loads(capsys.readouterr().out)["ratio"] == 1.0
    with pytest.raises(SystemExit):
        main(baseline)
    assert "--lam-nonprivate applies to the methods with a non-private group" in capsys.readouterr().err


@pytest.mark.parametrize("flag,value,name", [("--ratio", "1.5", "ratio"), ("--sample-rate", "0", "sample_rate")])
def test_cli_bad_values(capsys, flag, value, name):
    from fedtrain.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["run", "--dataset", "noniid-digits", "--method", "fedhdp", flag, value])
    assert exc.value.code == 2 and name in capsys.readouterr().err


# ------------------------------------------------------------------------------------------ stored claims
def test_stored_claims_results_match_the_declared_experiment():
    """The committed digit runs (read by the chapter from the committed store) are exactly the 'claims' scale's."""
    import json

    from fedtrain.book_results import committed_store
    from fedtrain.presets import fedhdp_scale_configs

    stored = committed_store().client_rows("fedhdp-claims-digits")
    assert committed_store().client_header("fedhdp-claims-digits")["scale"] == "claims"
    want = fedhdp_scale_configs("claims", "noniid-digits") + fedhdp_scale_configs("claims", "noniid-digits-skewed")
    key = lambda d: json.dumps(d, sort_keys=True)  # noqa: E731
    assert sorted(key(r["config"]) for r in stored) == sorted(key(c.to_dict()) for c in want)
    for r in stored:
        assert "client-level" in r["privacy"]["adjacency"]


def test_r0_collapses_on_skewed_opt_outs():
    """Claim 4 in seconds: with r = 0 the skewed data's global model knows only the opted-out clients' class."""
    from fedtrain.fedhdp.experiments import run_experiment
    from fedtrain.presets import fedhdp_scale_configs

    rows = run_experiment(fedhdp_scale_configs("chapter", "noniid-digits-skewed", seeds=(0,), ratios=(0.0,),
                                               methods=("fedhdp",)))
    m = rows[0]["metrics"]
    assert m["acc_g"] < 15 and m["acc_g_np"] == 100.0 and m["acc_l_p"] == m["acc_g_p"]
