"""Silo-specific sample-level DP: step counts, sample rates, per-silo calibration."""
from __future__ import annotations


import numpy as np
import pytest

from fedtheory.privacy import epsilon, noise_multiplier, silo_epsilons, silo_noise_multipliers, silo_sample_rates, silo_steps


def test_steps_follow_released_code():
    # max(1, floor(n/B)) steps per local epoch, times local_epochs and rounds
    assert list(silo_steps([10, 32, 33, 100, 640], 32, rounds=5, local_epochs=2)) == [10, 10, 10, 30, 200]
    assert list(silo_steps(64, 32, rounds=0)) == [0]
    assert list(silo_sample_rates([10, 32, 64], 32)) == [1.0, 1.0, 0.5]


def test_per_silo_calibration_properties():
    n = np.array([40, 80, 80, 160, 320])
    sig = silo_noise_multipliers(2.0, 1e-5, n, 16, rounds=30, local_epochs=1)
    assert sig.shape == n.shape
    assert sig[1] == sig[2]  # identical silos share one value
    # smaller n_k ⇒ larger q_k: more noise per step is needed (fewer steps do not compensate here)
    assert np.all(np.diff(sig[[0, 1, 3, 4]]) < 0)
    eps = silo_epsilons(sig, 1e-5, n, 16, rounds=30, local_epochs=1)
    assert np.all(eps <= 2.0) and np.all(eps >= 0.99 * 2.0)
    # each silo equals a direct scalar calibration with its own q_k and steps
    for k in range(len(n)):
        q, t = min(1.0, 16 / n[k]), max(1, n[k] // 16) * 30
        assert sig[k] == pytest.approx(noise_multiplier(2.0, 1e-5, q, t), rel=2e-3)
        assert epsilon(sig[k], 1e-5, q, t) <= 2.0


def test_vector_budgets_and_extra_steps():
    n = np.array([100, 100, 100])
    sig = silo_noise_multipliers([1.0, 4.0, 1.0], 1e-5, n, 20, rounds=10, extra_steps=[0, 0, 50])
    assert sig[1] < sig[0] < sig[2]  # looser budget ⇒ less noise; extra (Ditto) steps ⇒ more noise
    eps = silo_epsilons(sig, 1e-5, n, 20, rounds=10, extra_steps=[0, 0, 50])
    assert np.all(eps <= [1.0, 4.0, 1.0])
    # spending: the same σ without the extra steps costs less
    assert silo_epsilons(sig[2], 1e-5, 100, 20, 10)[0] < eps[2]


def test_pld_per_silo_is_tighter():
    sig_rdp = silo_noise_multipliers(1.0, 1e-5, [200], 20, rounds=20)
    sig_pld = silo_noise_multipliers(1.0, 1e-5, [200], 20, rounds=20, accountant="pld")
    assert sig_pld[0] < sig_rdp[0]
    assert silo_epsilons(sig_pld, 1e-5, [200], 20, 20, accountant="pld")[0] <= 1.0


def test_school_sized_calibration_shares_searches_and_hits_the_cache(school_path, monkeypatch):
    """One search per distinct (n_k, ε, δ, steps) and none on a repeat with the on-disk cache (sweeps).

    Speed itself is measured in benchmarks/bench_calibration_cache.py, not here."""
    import scipy.io

    from fedtheory.privacy import calibration

    m = scipy.io.loadmat(school_path)
    n = (np.array([x.shape[0] for x in m["X"].ravel()]) * 0.8).astype(int)
    searches = []
    solve = calibration._solve
    monkeypatch.setattr(calibration, "_solve", lambda *a, **k: searches.append(1) or solve(*a, **k))
    sig = silo_noise_multipliers(1.0, 1e-4, n, 32, rounds=100, local_epochs=1, cache=True)
    assert len(sig) == 139
    assert np.all(silo_epsilons(sig, 1e-4, n, 32, 100, 1) <= 1.0)
    distinct = len(np.unique(np.minimum(1.0, 32 / n)))
    assert len(searches) == distinct < len(n)
    again = silo_noise_multipliers(1.0, 1e-4, n, 32, rounds=100, local_epochs=1, cache=True)
    assert len(searches) == distinct  # every σ_k came from the cache
    np.testing.assert_array_equal(again, sig)


@pytest.mark.parametrize("call,arg", [
    (lambda: silo_steps([0, 5], 2, 1), "n"),
    (lambda: silo_steps([5], 0, 1), "batch_size"),
    (lambda: silo_steps([5], 2, -1), "rounds"),
    (lambda: silo_steps([5], 2, 1, 0), "local_epochs"),
    (lambda: silo_noise_multipliers(-1.0, 1e-5, [10], 2, 1), "eps"),
    (lambda: silo_noise_multipliers(1.0, 0.0, [10], 2, 1), "delta"),
    (lambda: silo_noise_multipliers(1.0, 1e-5, [10, 20], 2, 1, extra_steps=[1, 2, 3]), "extra_steps"),
    (lambda: silo_noise_multipliers(1.0, 1e-5, [10], 2, 1, accountant="gdp"), "accountant"),
    (lambda: silo_epsilons([-1.0], 1e-5, [10], 2, 1), "noise_multipliers"),
])
def test_bad_input_names_argument(call, arg):
    with pytest.raises(ValueError, match=arg):
        call()
