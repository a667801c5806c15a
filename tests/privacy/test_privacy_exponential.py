"""Exponential mechanism: sampling law, sensitivity of the error-rate score (brute force), IFCA budget split."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from fedtheory.privacy import (DEFAULT_ORDERS, epsilon, error_rate_sensitivity, exponential_mechanism_rdp,
                               ifca_budget_split, ifca_selection_rdp, noise_multiplier, private_argmin, rdp_to_epsilon)


def test_report_noisy_min_samples_the_exponential_mechanism():
    scores = np.array([0.30, 0.10, 0.20, 0.25])
    eps, sens = 2.0, 0.05
    draws = private_argmin(np.tile(scores, (200_000, 1)), eps, sens, rng=1)
    p = np.exp(-eps * scores / (2 * sens))
    p /= p.sum()
    freq = np.bincount(draws, minlength=4) / len(draws)
    se = np.sqrt(p * (1 - p) / len(draws))
    assert np.all(np.abs(freq - p) < 4 * se)
    assert private_argmin(scores, np.inf, sens, rng=0) == 1
    assert private_argmin(scores, eps, sens, rng=5) == private_argmin(scores, eps, sens, rng=5)  # seeded


def _worst_error_rate_change(m: int) -> float:
    """Max |err(x) − err(x')| over all neighbours of all size-m datasets (remove one / replace one).

    For a fixed model the error rate depends on a record only through its 0/1 mistake indicator, so
    enumerating every 0/1 vector of length m enumerates every dataset up to what the score sees.
    """
    worst = 0.0
    for bits in itertools.product([0, 1], repeat=m):
        b = np.array(bits)
        err = b.mean()
        for i in range(m):
            rest = np.delete(b, i)
            if m > 1:
                worst = max(worst, abs(err - rest.mean()))           # remove record i (add is the reverse)
            worst = max(worst, abs(err - (rest.sum() + 1 - b[i]) / m))  # replace record i by its opposite
    return worst


@pytest.mark.parametrize("m", [2, 3, 4, 5, 6, 7, 8])
def test_error_rate_sensitivity_by_brute_force(m):
    worst = _worst_error_rate_change(m)
    assert worst == pytest.approx(1 / m)  # exact worst case: 1/m for a larger neighbour of size m
    # the paper's bound 1/(n−1) covers every pair whose larger dataset has m ≥ n−1 records
    for n in (m, m + 1):
        assert worst <= error_rate_sensitivity(n) + 1e-15
    assert worst > error_rate_sensitivity(m + 2)  # and it does not cover a larger set with m < n−1


def test_exponential_mechanism_rdp_is_bounded_range_zcdp():
    assert np.allclose(exponential_mechanism_rdp(DEFAULT_ORDERS, 0.2), DEFAULT_ORDERS * 0.04 / 8)
    assert np.allclose(ifca_selection_rdp(10, 0.1), 10 * exponential_mechanism_rdp(DEFAULT_ORDERS, 0.1))
    # exact Rényi divergences of the output laws on random neighbouring score vectors stay below αε²/8
    rng = np.random.default_rng(3)
    eps, sens = 1.0, 0.1
    orders = np.array([1.5, 2.0, 4.0, 16.0, 64.0])
    worst_ratio = 0.0
    for _ in range(2000):
        k = rng.integers(2, 6)
        s = rng.uniform(0, 1, k)
        s2 = s + rng.choice([-sens, sens], k) * rng.uniform(0, 1, k) ** 0.2  # |s − s'| ≤ Δ per candidate
        p = np.exp(-eps * s / (2 * sens)); p /= p.sum()
        r = np.exp(-eps * s2 / (2 * sens)); r /= r.sum()
        for a in orders:
            d = np.log(np.sum(p ** a * r ** (1 - a))) / (a - 1)
            worst_ratio = max(worst_ratio, d / (a * eps ** 2 / 8))
    assert worst_ratio <= 1 + 1e-9
    assert worst_ratio > 0.3  # the bound is not vacuous on these instances


def test_ifca_budget_split_meets_total():
    eps, delta, q, steps = 1.0, 1e-5, 0.1, 1000
    rounds = 100
    k = int(rounds * 0.1)
    sigma, spent = ifca_budget_split(eps, delta, q, steps, k)
    assert spent <= eps and spent >= 0.99 * eps
    assert sigma > noise_multiplier(eps, delta, q, steps)  # selections cost noise
    assert spent == pytest.approx(epsilon(sigma, delta, q, steps, extra_rdp=ifca_selection_rdp(k, 0.03 * eps)))
    with pytest.raises(ValueError, match="unattainable"):
        ifca_budget_split(eps, delta, q, steps, 1000, selection_eps=0.5)


@pytest.mark.parametrize("call,arg", [
    (lambda: private_argmin([], 1.0, 1.0), "scores"),
    (lambda: private_argmin([1.0, 2.0], 0.0, 1.0), "eps"),
    (lambda: private_argmin([1.0, 2.0], 1.0, -1.0), "sensitivity"),
    (lambda: error_rate_sensitivity(1), "n"),
    (lambda: exponential_mechanism_rdp([2.0], -1.0), "eps"),
    (lambda: ifca_selection_rdp(-1, 0.1), "num_selections"),
    (lambda: ifca_budget_split(1.0, 1e-5, 0.1, 10, 1, accountant="pld"), "accountant"),
])
def test_bad_input_names_argument(call, arg):
    with pytest.raises(ValueError, match=arg):
        call()
