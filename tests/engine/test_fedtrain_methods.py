"""The personalization methods: every method runs at its per-silo budget, overheads are accounted
(Ditto's extra pass, IFCA's selections), IFCA recovers clusters, the private selection samples the
exponential mechanism, Mocha's Σ update, finetuning's switch."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from fedtrain.config import METHODS, RunConfig
from fedtrain.engine import run, run_many
from fedtrain.methods import get_method
from fedtrain.methods.ifca import private_argmin
from fedtrain.methods.mocha import Mocha
from fedtrain.testing import tiny_federated

SE = 4.0


@pytest.fixture(scope="module")
def reg():
    return tiny_federated("regression", num_silos=6, dim=4, n_test=(20, 60), seed=3)


@pytest.fixture(scope="module")
def svm():
    return tiny_federated("binary", num_silos=6, dim=4, n_test=(20, 60), seed=4)


def cfg(method, **kw):
    base = dict(dataset="tiny", method=method, eps=2.0, delta=1e-4, lam=0.3, lr=0.05, rounds=6, batch_size=16,
                num_clusters=2)
    base.update(kw)
    return RunConfig(**base)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("task", ["reg", "svm"])
def test_every_method_meets_its_budget(method, task, reg, svm):
    data = reg if task == "reg" else svm
    r = run(cfg(method), data)
    assert r.metric == ("mse" if task == "reg" else "accuracy")
    assert np.isfinite(r.test_metric) and np.all(np.isfinite(r.silo_metrics))
    if task == "svm":
        assert 0.0 <= r.test_metric <= 1.0
    assert np.all(r.eps_spent <= 2.0 * (1 + 1e-9)) and np.all(r.eps_spent >= 1.9)
    assert np.all(r.noise_multipliers > 0)


def test_ditto_pays_for_its_second_pass(reg):
    """Ditto: 2 epochs per round, so 2× steps and more noise at the same ε (Fig. 4's overhead)."""
    m, d = run(cfg("mrmtl"), reg), run(cfg("ditto"), reg)
    np.testing.assert_array_equal(d.steps, 2 * m.steps)
    assert np.all(d.noise_multipliers > m.noise_multipliers)
    np.testing.assert_allclose(d.eps_spent, m.eps_spent, rtol=0.02)


def test_ifca_selection_budget_is_charged(reg):
    base = run(cfg("fedavg", rounds=20), reg)
    few = run(cfg("ifca", rounds=20, select_frac=0.1), reg)
    every = run(cfg("ifca", rounds=20, select_frac=1.0), reg)
    assert few.extras["selections"] == 2 and every.extras["selections"] == 20
    assert np.allclose(few.extras["select_eps"], 0.03 * 2.0)
    # more selections leave less budget for DP-SGD: more noise
    assert np.all(base.noise_multipliers < few.noise_multipliers)
    assert np.all(few.noise_multipliers < every.noise_multipliers)
    for r in (few, every):
        assert np.all(r.eps_spent <= 2.0 * (1 + 1e-9)) and np.all(r.eps_spent >= 1.95)
    with pytest.raises(ValueError):  # selections alone exceed the budget
        run(cfg("ifca", rounds=200, select_frac=1.0, select_eps_frac=0.5), reg)


def test_ifca_recovers_clusters_without_privacy():
    data = tiny_federated("regression", num_silos=8, dim=5, clusters=2, cluster_scale=3.0, tau=0.1, n_range=(80, 120),
                          seed=7)
    truth = np.array(data.info["cluster_of_silo"])
    hits = 0
    for seed in range(3):
        r = run(cfg("ifca", eps=math.inf, rounds=10, select_frac=0.5, lr=0.1, seed=seed), data)
        got = np.array(r.extras["clusters"])
        same_truth = truth[:, None] == truth[None, :]
        same_got = got[:, None] == got[None, :]
        hits += bool(np.array_equal(same_truth, same_got))
    assert hits == 3


def test_private_argmin_samples_the_exponential_mechanism():
    """Empirical selection frequencies vs P(g) ∝ exp(−ε s_g / (2Δ)), every category within 4 SE."""
    scores = torch.tensor([[[0.10, 0.30, 0.20, 0.60]], [[0.5, 0.5, 0.4, 0.9]]], dtype=torch.float64)  # (S=2,K=1,G=4)
    eps, delta = 2.0, 0.1
    scale = torch.full((2, 1), 2 * delta / eps, dtype=torch.float64)
    gens = [torch.Generator().manual_seed(s) for s in (11, 12)]
    n = 20000
    counts = np.zeros((2, 4))
    for _ in range(n // 500):
        rep = scores.expand(2, 500, 4)
        picks = private_argmin(rep, scale.expand(2, 500), gens)
        for s in range(2):
            counts[s] += np.bincount(picks[s].numpy(), minlength=4)
    for s in range(2):
        logits = -eps * scores[s, 0].numpy() / (2 * delta)
        p = np.exp(logits - logits.max())
        p /= p.sum()
        freq = counts[s] / n
        se = np.sqrt(p * (1 - p) / n)
        assert np.all(np.abs(freq - p) <= SE * se + 1e-12), (freq, p)
    exact = private_argmin(scores, torch.zeros(2, 1, dtype=torch.float64), gens)
    assert exact.tolist() == [[0], [2]]


def test_mocha_sigma_update():
    w = torch.randn(2, 5, 3, 1, generator=torch.Generator().manual_seed(0))
    sig = Mocha.update_sigma(w).double()
    for s in range(2):
        m = sig[s]
        torch.testing.assert_close(m, m.T)
        assert float(torch.trace(m)) == pytest.approx(1.0, abs=1e-6)
        assert float(torch.linalg.eigvalsh(m).min()) > -1e-6
        flat = w[s].reshape(5, -1).double()
        root = m * torch.trace(torch.linalg.matrix_power(m, 1))  # Σ ∝ (W Wᵀ)^{1/2}
        ratio = (root @ root) / (flat @ flat.T)
        np.testing.assert_allclose(ratio.numpy(), ratio[0, 0].item(), rtol=1e-3)


def test_mocha_sigma_of_a_diverged_configuration_is_nan_and_spares_the_others():
    """A configuration whose models overflowed gets Σ = NaN (its run diverges, as any run at too large a rate);
    the configurations trained with it get the same Σ as alone (the Vehicle stand-in's η = 0.3 Mocha runs)."""
    w = torch.randn(3, 4, 6)
    bad = w.clone()
    bad[1, 2, 0] = float("inf")
    sig = Mocha.update_sigma(bad)
    assert torch.isnan(sig[1]).all()
    torch.testing.assert_close(sig[[0, 2]], Mocha.update_sigma(w[[0, 2]]))


def test_mocha_regularizer_acts(reg):
    a = run(cfg("mocha", lam=0.0, eps=math.inf), reg, keep_models=True)
    b = run(cfg("mocha", lam=3.0, eps=math.inf), reg, keep_models=True)
    loc = run(cfg("local", eps=math.inf), reg, keep_models=True)
    np.testing.assert_allclose(a.models, loc.models, rtol=1e-6, atol=1e-7)  # λ = 0 is local training
    assert not np.allclose(b.models, loc.models, atol=1e-3)


def test_finetune_is_fedavg_before_the_switch(reg):
    ft = run(cfg("finetune", rounds=8, eval_every=1, eps=1.0), reg)
    fa = run(cfg("fedavg", rounds=8, eval_every=1, eps=1.0), reg)
    np.testing.assert_allclose(ft.curve[:4], fa.curve[:4], rtol=1e-6)
    assert not np.allclose(ft.curve[4:], fa.curve[4:])
    np.testing.assert_array_equal(ft.noise_multipliers, fa.noise_multipliers)


def test_ifca_mrmtl_is_ifca_during_selection(reg):
    a = run(cfg("ifca", rounds=10, select_frac=0.3, eval_every=1), reg)
    b = run(cfg("ifca-mrmtl", rounds=10, select_frac=0.3, eval_every=1), reg)
    assert a.extras["clusters"] != [] and b.extras["selections"] == 3
    np.testing.assert_array_equal(a.noise_multipliers, b.noise_multipliers)
    # same random streams: identical cluster assignments and the same models up to round 3
    assert a.extras["clusters"] == b.extras["clusters"]


def test_multiclass_runs():
    rng = np.random.default_rng(0)
    xs = [rng.normal(size=(50, 3)) for _ in range(3)]
    ys = [np.argmax(x @ rng.normal(size=(3, 4)), 1).astype(float) for x in xs]
    from fedtrain.data.base import FederatedData

    data = FederatedData("mc", "multiclass", xs, ys, xs, ys, real=False, num_classes=4)
    r = run(RunConfig("mc", "mrmtl", eps=math.inf, lam=0.1, lr=0.5, rounds=10, batch_size=16, delta=1e-3), data)
    assert r.metric == "accuracy" and r.test_metric > 0.5


def test_lambda_sweep_batched(reg):
    cs = [cfg(m, lam=lam, lr=lr) for m in ("mrmtl", "ditto") for lam in (0.01, 1.0) for lr in (0.01, 0.1)]
    rs = run_many(cs, reg)
    assert [r.config for r in rs] == cs
    assert len({r.test_metric for r in rs}) == len(cs)


def test_get_method_rejects_unknown():
    with pytest.raises(ValueError, match="method must be one of"):
        get_method("scaffold")
