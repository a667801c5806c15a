"""Sec. 5 eq. (2): the DP-GD noise random walk, derived (sympy) vs printed, and simulated (4 SE)."""
import numpy as np
import pytest
import sympy as sp

from fedtheory.privacy.random_walk import (averaged_walk_variance, derive, dp_gd_noise_variance,
                                           random_walk_variance, simulate_walk)


def test_sympy_walk_equals_printed_order_and_contracted_closed_form():
    d = derive()
    assert sp.simplify(d["walk"] - d["printed"]) == 0
    c = d["contracted"]
    general = c.args[-1][0] if isinstance(c, sp.Piecewise) else c
    assert sp.simplify(general - d["contracted_closed"]) == 0


def test_uncontracted_walk_simulated_and_averaging_divides_by_K():
    lr, sigma, n, T = 0.1, 3.0, 50, 40
    s2 = (lr * sigma / n) ** 2
    e = simulate_walk(s2, lr, 0.0, T, trials=40_000, seed=1)
    v = random_walk_variance(lr, sigma, n, T)
    se = v * np.sqrt(2 / (e.size - 1))  # SE of a Gaussian sample variance
    assert abs(e.var(ddof=1) - v) <= 4 * se
    K = 8
    walks = np.stack([simulate_walk(s2, lr, 0.0, T, trials=20_000, seed=10 + k) for k in range(K)])
    avg = walks.mean(0)
    va = averaged_walk_variance([v] * K)
    assert va == pytest.approx(v / K)
    assert abs(avg.var(ddof=1) - va) <= 4 * va * np.sqrt(2 / (avg.size - 1))


@pytest.mark.parametrize("h,T", [(0.5, 10), (2.0, 200), (1e-6, 30)])
def test_contracted_walk_simulated(h, T):
    s2, lr = 0.01, 0.3
    v = dp_gd_noise_variance(s2, lr, h, T)
    e = simulate_walk(s2, lr, h, T, trials=40_000, seed=int(h * 100) + T)
    assert abs(e.var(ddof=1) - v) <= 4 * v * np.sqrt(2 / (e.size - 1))


def test_limits_and_bad_input():
    assert dp_gd_noise_variance(1.0, 0.1, 0.0, 25) == pytest.approx(25.0)
    assert dp_gd_noise_variance(1.0, 0.1, 1.0, 10_000) == pytest.approx(1.0 / (0.1 * (2 - 0.1)))
    with pytest.raises(ValueError, match="lr \\* curvature"):
        dp_gd_noise_variance(1.0, 1.0, 2.5, 10)
