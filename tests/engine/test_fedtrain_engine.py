"""The vectorized DP-SGD engine: clipping, noise scale, Poisson sampling, accounting, reproducibility,
the MR-MTL proximal term, the λ limits, and run-level validation."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch.func import grad, vmap

from fedtrain.config import RunConfig
from fedtrain.data.base import FederatedData
from fedtrain.dpsgd_step import PoissonBatcher, dp_direction
from fedtrain.engine import RunResult, run, run_many
from fedtrain.models import HingeLoss, LinearModel, SquaredLoss
from fedtrain.testing import tiny_federated

SE = 4.0  # Monte Carlo tolerance in standard errors


@pytest.fixture(scope="module")
def reg():
    # unequal training sizes (40..80) and test counts (20..60): weightings by n_k or n_test,k matter
    return tiny_federated("regression", num_silos=5, dim=4, n_test=(20, 60), seed=1)


def cfg(method="mrmtl", **kw):
    base = dict(dataset="tiny", method=method, eps=2.0, delta=1e-4, lam=0.3, lr=0.05, rounds=6, batch_size=16)
    base.update(kw)
    return RunConfig(**base)


# ------------------------------------------------------------------------------------------ clipping
@pytest.mark.parametrize("loss", [SquaredLoss(), HingeLoss()])
@pytest.mark.parametrize("with_prox", [False, True])
def test_per_example_clipping_against_torch_func(loss, with_prox):
    """Each example's clipped gradient (closed form) vs torch.func per-example gradients of ℓ_i [+ λ/2‖w−w̄‖²]."""
    g = torch.Generator().manual_seed(0)
    b, p = 12, 5
    model = LinearModel(p - 1, 1)
    x = torch.randn(b, p, generator=g) * torch.linspace(0.1, 3, b)[:, None]
    x[:, -1] = 1.0
    y = torch.randn(b, generator=g).sign() if isinstance(loss, HingeLoss) else torch.randn(b, generator=g) * 3
    w = torch.randn(p, generator=g) * 0.5  # flat parameters (D = p·o = p)
    center = torch.randn(p, generator=g) * 0.5
    lam = 0.7 if with_prox else 0.0

    def per_loss(wv, xi, yi):
        return loss.value(model.forward(wv, xi[None]), yi[None])[0] + 0.5 * lam * ((wv - center) ** 2).sum()

    raw = vmap(grad(per_loss), in_dims=(None, 0, 0))(w, x, y)  # (b, p), independent of the closed form
    raw_norm = raw.flatten(1).norm(dim=1)
    c = float(raw_norm.median())  # half the examples are clipped
    assert (raw_norm > c).any() and (raw_norm < c).any()  # both regimes are exercised
    prox = lam * (w - center) if with_prox else None
    for i in range(b):
        valid = torch.zeros(1, 1, b, dtype=torch.bool)
        valid[0, 0, i] = True
        clipped, norms = model.clipped_grad_sum(w[None, None], x[None, None], y[None, None], valid, loss,
                                                torch.tensor([[c]]), None if prox is None else prox[None, None])
        clipped = clipped[0, 0]
        assert norms[0, 0, i] == pytest.approx(float(raw_norm[i]), rel=1e-5)
        assert float(clipped.norm()) <= c + 1e-5  # every clipped per-example gradient has norm ≤ c
        if raw_norm[i] <= c:  # unclipped ones unchanged (up to Opacus' 1e-6 in the factor)
            torch.testing.assert_close(clipped, raw[i], rtol=1e-5, atol=1e-5)
        else:  # clipped ones are rescaled, not rotated
            torch.testing.assert_close(clipped, raw[i] * c / raw_norm[i], rtol=1e-4, atol=1e-6)


def test_no_clipping_when_clip_is_infinite():
    model, loss = LinearModel(3, 1), SquaredLoss()
    x = torch.randn(1, 1, 6, 4) * 10
    y = torch.randn(1, 1, 6) * 10
    w = torch.zeros(1, 1, 4)
    valid = torch.ones(1, 1, 6, dtype=torch.bool)
    total, _ = model.clipped_grad_sum(w, x, y, valid, loss, torch.tensor([[math.inf]]))
    torch.testing.assert_close(total[0, 0], x[0, 0].T @ (-y[0, 0]))


# ------------------------------------------------------------------------------------------ noise
def test_noise_scale_on_zero_gradient():
    """Local DP-SGD on data whose gradient is exactly zero: after one step w = −η z c / B · N(0, I).

    Normalization: the noisy sum is divided by the expected batch size q_k n_k = B (Opacus' convention).
    """
    k, d, n = 40, 24, 64
    zeros = [np.zeros((n, d)) for _ in range(k)]
    data = FederatedData("zero", "regression", zeros, [np.zeros(n)] * k, [np.zeros((2, d))] * k,
                         [np.zeros(2)] * k, real=False)
    c = RunConfig("zero", "local", eps=1.0, delta=1e-3, lr=1.0, rounds=1, batch_size=n, clip=2.0)
    r = run(c, data, keep_models=True)
    z = r.noise_multipliers
    assert np.all(z == z[0]) and z[0] > 0
    assert r.steps.tolist() == [1] * k  # q = 1: one step per epoch
    w = r.models.ravel()
    expected_std = z[0] * c.clip / n
    se = expected_std / math.sqrt(2 * w.size)
    assert abs(w.std() - expected_std) < SE * se, (w.std(), expected_std)
    assert abs(w.mean()) < SE * expected_std / math.sqrt(w.size)


def test_eps_inf_gives_zero_noise_and_no_clipping(reg):
    r1 = run(cfg("local", eps=math.inf, clip=0.01), reg, keep_models=True)
    r2 = run(cfg("local", eps=math.inf, clip=5.0), reg, keep_models=True)
    assert np.all(r1.noise_multipliers == 0) and np.all(np.isinf(r1.eps_spent))
    np.testing.assert_array_equal(r1.models, r2.models)  # the clip norm is not used without privacy
    p1 = run(cfg("local", eps=1e3, clip=0.01), reg, keep_models=True)
    assert not np.allclose(p1.models, r1.models)


def test_dp_direction_post_noise_adds_prox_exactly():
    model, loss = LinearModel(3, 1), SquaredLoss()
    x = torch.randn(1, 2, 5, 4)
    y = torch.randn(1, 2, 5)
    valid = torch.zeros(1, 2, 5, dtype=torch.bool)  # empty batches: only noise and prox remain
    prox = torch.randn(1, 2, 4)
    noise = torch.randn(1, 2, 4)
    args = dict(clip=torch.ones(1, 2), noise=noise, noise_std=torch.full((1, 2), 3.0), denom=torch.tensor([8.0, 4.0]))
    post, _ = dp_direction(model, loss, torch.zeros(1, 2, 4), (x, y, valid), prox=prox, prox_mode="post-noise", **args)
    torch.testing.assert_close(post, noise * 3.0 / torch.tensor([8.0, 4.0])[None, :, None] + prox)
    together, _ = dp_direction(model, loss, torch.zeros(1, 2, 4), (x, y, valid), prox=prox,
                               prox_mode="clip-together", **args)
    torch.testing.assert_close(together, noise * 3.0 / torch.tensor([8.0, 4.0])[None, :, None])


# ------------------------------------------------------------------------------------------ sampling
def test_poisson_sampling_rate_per_silo():
    n = torch.tensor([10, 37, 80])
    q = torch.tensor([1.0, 0.4, 0.1])
    x = torch.arange(80.0)[None, :, None].expand(3, 80, 2).clone()
    batcher = PoissonBatcher(x, torch.zeros(3, 80), n, q)
    gens = [torch.Generator().manual_seed(s) for s in range(4)]
    draws = 600
    counts = torch.zeros(3, 80)
    sizes = []
    for _ in range(draws):
        xb, _, valid = batcher.sample(gens)
        assert xb.shape[:3] == valid.shape
        for s in range(4):
            for k in range(3):
                rows = xb[s, k, valid[s, k], 0].long()
                assert rows.unique().numel() == rows.numel()  # no duplicates
                assert (rows < n[k]).all()  # never a padding row
                counts[k, rows] += 1
                sizes.append((k, rows.numel()))
    total = draws * 4
    for k in range(3):
        freq = counts[k, : n[k]] / total
        se = math.sqrt(q[k] * (1 - q[k]) / total) if q[k] < 1 else 0.0
        assert (freq - q[k]).abs().max() <= SE * se + 1e-12
        assert counts[k, n[k]:].sum() == 0
        sz = np.array([s for kk, s in sizes if kk == k], dtype=float)
        mean_se = math.sqrt(n[k] * q[k] * (1 - q[k]) / sz.size)
        assert abs(sz.mean() - float(n[k] * q[k])) <= SE * mean_se + 1e-12


# ------------------------------------------------------------------------------------------ accounting
@pytest.mark.parametrize("method, factor", [("local", 1), ("fedavg", 1), ("mrmtl", 1), ("ditto", 2)])
def test_accounting_per_silo(reg, method, factor):
    from fedtheory.privacy.silos import silo_epsilons

    c = cfg(method, eps=[0.5, 1.0, 2.0, 4.0, math.inf])
    r = run(c, reg)
    n = reg.train_sizes
    assert r.accountant == "rdp"
    assert r.steps.tolist() == (np.maximum(1, n // 16) * c.rounds * factor).tolist()
    finite = np.isfinite(np.asarray(c.eps))
    assert np.all(r.noise_multipliers[~finite] == 0) and np.all(r.noise_multipliers[finite] > 0)
    target = np.asarray(c.eps)[finite]
    assert np.all(r.eps_spent[finite] <= target * (1 + 1e-9))
    assert np.all(r.eps_spent[finite] >= 0.98 * target)  # calibration is tight
    # independent recomputation of the spent ε from the reported z and steps
    again = silo_epsilons(r.noise_multipliers[finite], r.delta[finite], n[finite], 16, c.rounds * factor, 1)
    np.testing.assert_allclose(r.eps_spent[finite], again, rtol=1e-9)
    # smaller ε → more noise, silo by silo (the silos differ in n_k, so z is compared within a silo)
    doubled = run(c.replace(eps=[2 * e for e in c.eps]), reg)
    assert np.all(doubled.noise_multipliers[finite] < r.noise_multipliers[finite])
    assert np.all(doubled.noise_multipliers[~finite] == 0)


def test_default_delta_and_paper_rule(reg):
    r = run(cfg("local", delta=None), reg)
    n = reg.train_sizes
    assert np.all(r.delta < n ** -1.1)
    with pytest.raises(ValueError, match=r"delta must be < n_k\^-1.1"):
        run(cfg("local", delta=0.05), reg)


# ------------------------------------------------------------------------------------------ reproducibility
def test_seeds_reproduce_exactly_and_differ(reg):
    a = run(cfg(seed=3), reg, keep_models=True)
    b = run(cfg(seed=3), reg, keep_models=True)
    c = run(cfg(seed=4), reg, keep_models=True)
    np.testing.assert_array_equal(a.models, b.models)
    assert a.test_metric == b.test_metric
    assert not np.allclose(a.models, c.models)


def test_run_many_equals_run(reg):
    cs = [cfg(lam=lam, lr=lr, seed=s, eps=e) for lam in (0.0, 1.0) for lr in (0.02, 0.05)
          for s, e in ((0, 1.0), (1, math.inf))]
    cs.append(cfg("fedavg"))  # a different method: its own group
    cs += [cfg("local", seed=0), cfg("local", seed=0, lr=0.1), cfg("local", seed=5)]  # unequal seed blocks
    many = run_many(cs, reg, keep_models=True)
    for c, r in zip(cs, many):
        single = run(c, reg, keep_models=True)
        assert r.config == c
        np.testing.assert_allclose(r.models, single.models, rtol=1e-4, atol=1e-5)
        np.testing.assert_array_equal(r.noise_multipliers, single.noise_multipliers)


def test_curve_and_serialization(reg):
    import json

    r = run(cfg(eval_every=2, rounds=6), reg)
    assert r.curve_rounds.tolist() == [2, 4, 6]
    assert r.curve[-1] == pytest.approx(r.test_metric, rel=1e-6)
    back = RunResult.from_dict(json.loads(json.dumps(r.to_dict(), allow_nan=False)))
    assert back.config == r.config and back.test_metric == r.test_metric
    np.testing.assert_array_equal(back.eps_spent, r.eps_spent)
    np.testing.assert_array_equal(back.curve, r.curve)


def test_weighted_metric_is_test_count_weighted(reg):
    r = run(cfg(), reg)
    assert r.metric == "mse"
    assert r.test_metric == pytest.approx(float(r.silo_metrics @ (r.test_sizes / r.test_sizes.sum())), rel=1e-6)


# ------------------------------------------------------------------------------------------ proximal term
@pytest.mark.parametrize("prox_mode", ["clip-together", "post-noise"])
def test_prox_term_has_an_effect(reg, prox_mode):
    """Fails if the proximal term is dropped (the Opacus pitfall, Opacus GitHub issue #249): a large λ pulls the silos'
    models together, λ = 0 does not."""
    def spread(r):
        w = r.models.reshape(r.models.shape[0], -1)
        return float(((w - w.mean(0)) ** 2).sum())

    base = dict(eps=4.0, lr=0.05, rounds=10, prox_mode=prox_mode)
    free = run(cfg(lam=0.0, **base), reg, keep_models=True)
    tied = run(cfg(lam=5.0, **base), reg, keep_models=True)
    assert spread(tied) < 0.3 * spread(free)


def test_prox_modes_differ_only_when_clipping_binds(reg):
    # Full batches (B > n_k, q_k = 1) and no clipping: Σ_i (g_i + P) / n = ḡ + P, the same update.
    # (With Poisson batches clip-together weighs P by b/E[b], which has mean 1.)
    kw = dict(lam=1.0, eps=math.inf, rounds=4, batch_size=100)
    a = run(cfg(prox_mode="clip-together", **kw), reg, keep_models=True)
    b = run(cfg(prox_mode="post-noise", **kw), reg, keep_models=True)
    np.testing.assert_allclose(a.models, b.models, rtol=1e-4, atol=1e-5)  # no clipping: same update
    kw = dict(lam=1.0, eps=2.0, rounds=4, clip=0.2)
    a = run(cfg(prox_mode="clip-together", **kw), reg, keep_models=True)
    b = run(cfg(prox_mode="post-noise", **kw), reg, keep_models=True)
    assert not np.allclose(a.models, b.models, atol=1e-3)


# ------------------------------------------------------------------------------------------ λ limits
def test_lambda_zero_is_local(reg):
    m = run(cfg("mrmtl", lam=0.0), reg, keep_models=True)
    loc = run(cfg("local"), reg, keep_models=True)
    np.testing.assert_allclose(m.models, loc.models, rtol=1e-6, atol=1e-7)
    assert m.test_metric == pytest.approx(loc.test_metric, rel=1e-6)


def test_large_lambda_approaches_fedavg():
    """Non-private, small η: as λ grows the personal models collapse onto w̄ and MR-MTL's metric
    approaches FedAvg's (under DP-SGD λ → ∞ does not reach FedAvg exactly: the prox gradient
    dominates each step; with η λ ≤ 1 the iteration stays stable)."""
    data = tiny_federated("regression", num_silos=6, dim=4, tau=1.0, seed=2)
    kw = dict(eps=math.inf, lr=0.02, rounds=100)
    fed = run(cfg("fedavg", **kw), data).test_metric
    gaps, spreads = [], []
    for lam in (0.0, 1.0, 10.0, 45.0):
        r = run(cfg("mrmtl", lam=lam, **kw), data, keep_models=True)
        w = r.models.reshape(6, -1)
        gaps.append(abs(r.test_metric - fed))
        spreads.append(float(((w - w.mean(0)) ** 2).sum()))
    assert all(np.diff(spreads) < 0) and spreads[-1] < 0.01 * spreads[0]
    assert all(np.diff(gaps) < 0) and gaps[-1] < 0.05 * gaps[0]


# ------------------------------------------------------------------------------------------ validation
def test_run_level_validation(reg):
    with pytest.raises(ValueError, match=r"eps must be one number or one per silo: the data have 5 silos, got 3"):
        run(cfg(eps=[1.0, 2.0, 3.0]), reg)
    with pytest.raises(ValueError, match=r"num_clusters must be <= the number of silos 5"):
        run(cfg("ifca", num_clusters=6), reg)
    with pytest.raises(ValueError, match=r"accountant must be 'rdp' for private IFCA"):
        run(cfg("ifca", accountant="pld"), reg)
    with pytest.raises(ValueError, match=r"run_many needs configs of one dataset"):
        run_many([cfg(), cfg().replace(dataset="other")], reg)


@pytest.mark.skipif(torch.cuda.is_available(), reason="tests the error raised when CUDA is absent")
def test_cuda_without_cuda_raises(reg):
    with pytest.raises(ValueError, match=r"device='cuda' was requested but torch.cuda.is_available\(\) is False"):
        run(cfg(device="cuda"), reg)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_matches_cpu_in_accounting(reg):  # pragma: no cover - runs on GPU machines only
    a, b = run(cfg(device="cuda"), reg), run(cfg(), reg)
    np.testing.assert_array_equal(a.noise_multipliers, b.noise_multipliers)
    assert np.isfinite(a.test_metric)


def test_other_accountants(reg):
    rdp = run(cfg("local", eps=1.0), reg)
    prv = run(cfg("local", eps=1.0, accountant="prv"), reg)
    assert prv.accountant == "prv" and np.all(prv.eps_spent <= 1.0 + 1e-9)
    assert np.all(prv.noise_multipliers < rdp.noise_multipliers)  # PRV is tighter than RDP
