"""Black-box tests that catch realistic engine bugs: each fails on a bug planted by hand.

Each test goes through the public API only (``fedtrain.engine.run`` / ``run_many``, ``RunConfig``,
``FederatedData``, ``keep_models=True``) and compares with an independent numpy computation, on
fixtures with UNEQUAL silo sizes and test counts (with equal ones, ``n_k/Σn`` and ``1/K`` coincide and
so do a weighted and an unweighted mean).  The bug each test was checked against (planted by hand,
test seen failing, plant removed) is named in its docstring with what the test measured under it.

Non-private runs with ``batch_size ≥ n_k`` are deterministic full-batch gradient descent (sampling
rate q_k = 1, one step per epoch, divisor q_k n_k = n_k), so float32 agreement to ~1e-5 is expected.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from fedtrain.config import RunConfig
from fedtrain.data.base import FederatedData
from fedtrain.engine import run, run_many
from fedtrain.testing import tiny_federated

SE = 4.0  # Monte Carlo tolerance in standard errors
FULL_BATCH = 10_000  # ≥ every n_k: q_k = 1, one full-batch step per local epoch


@pytest.fixture(scope="module")
def uneven():
    """Silo sizes from 10 to 90 and test counts from 5 to 60: weights n_k/Σn and 1/K differ by up to ~3×."""
    d = tiny_federated("regression", num_silos=5, dim=3, n_range=(10, 90), n_test=(5, 60), tau=1.0, seed=11)
    assert len(set(d.train_sizes.tolist())) == 5 and len(set(d.test_sizes.tolist())) == 5
    return d


def _design(x: np.ndarray) -> np.ndarray:
    return np.hstack([x, np.ones((x.shape[0], 1))])  # the engine's bias column (last)


def _mean_grad(data: FederatedData, k: int, w: np.ndarray) -> np.ndarray:
    """∇ of the mean of ½(x̃ᵀw − y)² over silo k's training set, in float64."""
    x = _design(data.train_x[k])
    return x.T @ (x @ w - data.train_y[k]) / x.shape[0]


def _cfg(method: str, **kw) -> RunConfig:
    base = dict(dataset="tiny", method=method, eps=math.inf, lr=0.1, rounds=3, batch_size=FULL_BATCH)
    base.update(kw)
    return RunConfig(**base)


# ------------------------------------------------------------------------------------------ FedAvg
def _fedavg_reference(data: FederatedData, lr: float, rounds: int, weights: np.ndarray) -> np.ndarray:
    p = data.dim + 1
    wbar = np.zeros(p)
    for _ in range(rounds):
        new = [wbar - lr * _mean_grad(data, k, wbar) for k in range(data.num_silos)]
        wbar = wbar + sum(a * (w - wbar) for a, w in zip(weights, new))
    return wbar


def test_fedavg_aggregates_with_size_weights(uneven):
    """FedAvg's server model is Σ_k (n_k/Σn) w_k, not (1/K) Σ_k w_k.

    Plant: ``w = np.full(K, 1/K)`` in the Trainer's aggregation weights → this test fails (max error
    0.087 against a tolerance of 1e-4); no test of test_fedtrain_engine/methods.py failed with it."""
    c = _cfg("fedavg")
    r = run(c, uneven, keep_models=True)
    n = uneven.train_sizes
    ref = _fedavg_reference(uneven, c.lr, c.rounds, n / n.sum())
    wrong = _fedavg_reference(uneven, c.lr, c.rounds, np.full(len(n), 1.0 / len(n)))
    assert np.abs(ref - wrong).max() > 100 * 1e-4  # the fixture tells the two weightings apart
    for k in range(uneven.num_silos):  # every silo is evaluated with the server model
        np.testing.assert_allclose(r.models[k, :, 0], ref, rtol=1e-4, atol=1e-5)


# ------------------------------------------------------------------------------------------ metric
@pytest.mark.parametrize("task", ["regression", "binary"])
def test_test_metric_recomputed_from_models(task):
    """``test_metric`` = Σ_k (n_test,k/Σ n_test) · metric_k, each silo's metric on its own test set with its
    own final model (MSE, or accuracy of sign(f) with f = 0 → +1).

    Plant: ``Trainer.weighted`` returning ``silo.mean(-1)`` (unweighted) → both cases fail (tolerance
    1e-5 relative; the fixture's weighted and unweighted means differ by > 2e-4 relative, asserted)."""
    data = tiny_federated(task, num_silos=5, dim=3, n_range=(20, 60), n_test=(5, 80), tau=1.0, seed=12)
    r = run(RunConfig("tiny", "mrmtl", eps=3.0, delta=1e-4, lam=0.3, lr=0.1, rounds=4, batch_size=8), data,
            keep_models=True)
    silo = []
    for k in range(data.num_silos):
        f = _design(data.test_x[k]) @ r.models[k, :, 0]
        y = data.test_y[k]
        silo.append(np.mean((f - y) ** 2) if task == "regression" else np.mean(np.where(f >= 0, 1.0, -1.0) == y))
    silo = np.array(silo)
    nt = data.test_sizes
    weighted = float(silo @ nt) / nt.sum()
    assert abs(weighted - silo.mean()) > 20 * 1e-5 * abs(weighted)  # weighting matters on this fixture
    np.testing.assert_allclose(r.silo_metrics, silo, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(r.test_sizes, nt)
    assert r.test_metric == pytest.approx(weighted, rel=1e-5)


# ------------------------------------------------------------------------------------------ Ditto
def _ditto_reference(data: FederatedData, lr: float, lam: float, rounds: int, *, center: str) -> np.ndarray:
    """Full-batch Ditto (App. D): global FedAvg step from w̄, then a personal step on ℓ_k + (λ/2)‖v − w̄‖²
    with w̄ the round-start model (``center="start"``) or, wrongly, the updated one (``"updated"``)."""
    K, p = data.num_silos, data.dim + 1
    n = data.train_sizes
    a = n / n.sum()
    wbar, v = np.zeros(p), np.zeros((K, p))
    for _ in range(rounds):
        new = np.array([wbar - lr * _mean_grad(data, k, wbar) for k in range(K)])
        updated = wbar + a @ (new - wbar)
        ctr = wbar if center == "start" else updated
        v = np.array([v[k] - lr * (_mean_grad(data, k, v[k]) + lam * (v[k] - ctr)) for k in range(K)])
        wbar = updated
    return v


def test_ditto_pulls_toward_round_start_global_model(uneven):
    """Three Ditto rounds against an independent reference.

    Plant: the personal pass's centre taken after the server update (``self.wbar`` updated before
    ``local_train`` of ``v``) → fails (max error 0.019; tolerance 1e-4)."""
    c = _cfg("ditto", lam=0.5)
    r = run(c, uneven, keep_models=True)
    ref = _ditto_reference(uneven, c.lr, c.lam, c.rounds, center="start")
    wrong = _ditto_reference(uneven, c.lr, c.lam, c.rounds, center="updated")
    assert np.abs(ref - wrong).max() > 100 * 1e-4
    np.testing.assert_allclose(r.models[:, :, 0], ref, rtol=1e-4, atol=1e-5)


# ------------------------------------------------------------------------------------------ noise at q < 1
def test_noise_scale_at_sampling_rate_below_one():
    """One DP-SGD step from w = 0 on records with zero features and zero targets: every per-example
    gradient is exactly 0 (bias gradient f − y = 0 too), so ``w = −η · z c ξ / (q n)``, ξ ~ N(0, I), with
    q n = B the EXPECTED batch size, whatever the sampled batch.

    n = 8, B = 5: q = 5/8 and one step per epoch.  Dividing by the actual batch b ~ Bin(8, 5/8) instead
    inflates the std by sqrt(E[(5/b)²]) ≈ 1.12 (≈ 20 standard errors of this test).
    Plant: divide by the sampled batch size (``valid.sum(-1)``, at least 1) instead of ``denom`` →
    fails: measured std / claimed = 1.180 against a tolerance of 4 SE = 0.023.
    """
    k, n, d, B = 60, 8, 3, 5
    zeros = [np.zeros((n, d)) for _ in range(k)]
    data = FederatedData("zero", "regression", zeros, [np.zeros(n)] * k, [np.zeros((2, d))] * k,
                         [np.zeros(2)] * k, real=False)
    base = RunConfig("zero", "local", eps=1.0, delta=1e-3, lr=1.0, rounds=1, batch_size=B, clip=2.0)
    results = run_many([base.replace(seed=s) for s in range(64)], data, keep_models=True)
    z = results[0].noise_multipliers[0]
    assert z > 0 and all(np.all(r.noise_multipliers == z) for r in results)
    assert all(r.steps.tolist() == [1] * k for r in results)
    w = np.concatenate([r.models.ravel() for r in results])  # 64·60·4 = 15 360 iid N(0, σ²) under the claim
    sigma = base.lr * z * base.clip / (B / n * n)
    se_std = sigma / math.sqrt(2 * w.size)  # standard error of the sample std of N normals
    assert abs(w.std() - sigma) < SE * se_std, (w.std() / sigma, SE * se_std / sigma)
    assert abs(w.mean()) < SE * sigma / math.sqrt(w.size)
