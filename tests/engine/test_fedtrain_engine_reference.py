"""Engine vs the Opacus-per-silo reference (fedtrain.reference): same noise multipliers and accounting,
and final metrics equal in distribution over seeds.

Distribution test: for each configuration, SEEDS seeds of each implementation (independent random
streams); the difference of the two sample means must lie within 4 standard errors of that difference,
``|m_E − m_R| ≤ 4·sqrt(s_E²/S + s_R²/S)``.  Measured (this fixture, ε = 1.5): per-seed std of the test
MSE 0.033–0.047 on means 0.69–0.78, so with 48 seeds 4 SE is ≈ 4–6 % of the mean (a bias of that size in
either implementation fails the test; with 8 seeds it would be 10–15 %).  Deterministic parts (aggregation, prox, normalization) are compared exactly on
non-private full-batch runs (q = 1: plain gradient descent in both), to float32 tolerance.
"""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from fedtrain.config import RunConfig
from fedtrain.engine import run
from fedtrain.reference import opacus_noise_multipliers, reference_run
from fedtrain.testing import engine_vs_reference, tiny_federated

SEEDS = 48


@pytest.fixture(scope="module")
def data():
    return tiny_federated("regression", num_silos=4, dim=3, n_range=(30, 70), n_test=(10, 60), seed=5)


@pytest.fixture(autouse=True)
def quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Opacus' secure-RNG and hook warnings
        yield


def cfg(method, **kw):
    base = dict(dataset="tiny", method=method, eps=1.5, delta=1e-4, lam=1.0, lr=0.1, rounds=5, batch_size=16,
                clip=1.0)
    base.update(kw)
    return RunConfig(**base)


@pytest.mark.parametrize("accountant, eps", [("rdp", [0.7, 1.5, 3.0, math.inf]), ("prv", [1.5, math.inf, math.inf, math.inf])])
def test_noise_multipliers_and_accounting_agree(data, accountant, eps):
    """fedtheory's calibration (engine) vs Opacus' get_noise_multiplier (reference): both meet ε, and agree
    to the search tolerances (Opacus: ε within 0.01 below target); the engine's reported ε equals what an
    Opacus accountant certifies for the engine's z and step count."""
    c = cfg("local", eps=eps, accountant=accountant)
    eng = run(c, data)
    ref_z = opacus_noise_multipliers(np.asarray(c.eps), eng.delta, data.train_sizes, c.batch_size, c.rounds,
                                     c.local_epochs, accountant)
    finite = np.isfinite(np.asarray(c.eps))
    np.testing.assert_allclose(eng.noise_multipliers[finite], ref_z[finite], rtol=0.03)
    assert np.all(eng.noise_multipliers[~finite] == 0) and np.all(ref_z[~finite] == 0)
    ref = reference_run(c.replace(rounds=1), data, noise_multipliers=eng.noise_multipliers, accountant_check=False)
    assert ref.steps.tolist() == (eng.steps // c.rounds).tolist()  # same steps per round
    # an Opacus accountant, fed the engine's z and step count, certifies the engine's ε
    from opacus.accountants import create_accountant

    q = np.minimum(1.0, c.batch_size / data.train_sizes)
    for k in np.flatnonzero(finite):
        acc = create_accountant(accountant)
        acc.history = [(float(eng.noise_multipliers[k]), float(q[k]), int(eng.steps[k]))]
        assert acc.get_epsilon(delta=float(eng.delta[k])) == pytest.approx(eng.eps_spent[k], rel=0.02)
        assert eng.eps_spent[k] <= np.asarray(c.eps)[k] * (1 + 1e-9)


@pytest.mark.parametrize("method, prox_mode, eps", [
    ("local", "clip-together", 1.5),
    ("fedavg", "clip-together", 1.5),
    ("mrmtl", "clip-together", 1.5),
    ("mrmtl", "post-noise", 1.5),
    ("mrmtl", "clip-together", math.inf),
])
def test_metrics_equal_in_distribution(data, method, prox_mode, eps):
    e, r, se = engine_vs_reference(data, cfg(method, prox_mode=prox_mode, eps=eps), SEEDS)
    if not math.isfinite(eps):  # non-private: only the sampling is random; still two different streams
        se = max(se, 1e-6)
    assert abs(e.mean() - r.mean()) <= 4 * se, (e.mean(), r.mean(), se)


@pytest.mark.parametrize("method, prox_mode", [("local", "clip-together"), ("fedavg", "clip-together"),
                                               ("mrmtl", "clip-together"), ("mrmtl", "post-noise")])
def test_deterministic_full_batch_runs_agree(data, method, prox_mode):
    """Non-private, batch ≥ n_k (q_k = 1, no sampling, no noise): both are plain gradient descent, so the
    metrics agree to float32 rounding (measured: ≤ 2.5e-7 relative), not just in distribution."""
    c = cfg(method, prox_mode=prox_mode, eps=math.inf, batch_size=1000)
    eng = run(c, data)
    ref = reference_run(c, data, noise_multipliers=eng.noise_multipliers, accountant_check=False)
    np.testing.assert_allclose(eng.silo_metrics, ref.silo_metrics, rtol=1e-4)
    assert eng.test_metric == pytest.approx(ref.test_metric, rel=1e-4)


def test_reference_prox_term_is_not_dropped(data):
    """The reference's Opacus path must apply λ (a parameter-only loss term would be dropped, Opacus GitHub issue #249):
    with a large λ, MR-MTL's personal models are much closer to each other than local training's."""
    c = cfg("mrmtl", lam=0.0, rounds=8, eps=4.0)
    z = run(c, data).noise_multipliers
    a = reference_run(c, data, noise_multipliers=z)
    b = reference_run(c.replace(lam=5.0), data, noise_multipliers=z)
    assert a.test_metric != b.test_metric
    assert b.spread < 0.3 * a.spread


def test_reference_rejects_other_methods(data):
    with pytest.raises(ValueError, match=r"method must be one of \('local', 'fedavg', 'mrmtl'\)"):
        reference_run(cfg("ditto"), data)
