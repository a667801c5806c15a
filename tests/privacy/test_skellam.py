"""Skellam noise: the Agarwal–Kairouz–Liu bound holds against the exact pmf divergence; it tends to the
Gaussian RDP as the scale grows (computed, not assumed)."""
import numpy as np
import pytest

from fedtheory.privacy.skellam import skellam_exact_rdp, skellam_rdp, skellam_rdp_integer

ORDERS = np.array([1.5, 2.0, 8.0, 32.0, 128.0])


@pytest.mark.parametrize("mu,shift", [(4.0, 1), (25.0, 1), (25.0, 3), (400.0, 2)])
def test_bound_dominates_exact_divergence(mu, shift):
    exact = skellam_exact_rdp(ORDERS, mu, shift)
    bound = skellam_rdp_integer(ORDERS, mu, shift, shift)
    assert (exact <= bound * (1 + 1e-9)).all()


def test_exact_skellam_tends_to_gaussian_and_bound_gap_vanishes_with_scale():
    g = ORDERS[:3] / (2 * 400.0)
    assert np.allclose(skellam_exact_rdp(ORDERS[:3], 400.0, 1), g, rtol=2e-3)
    z = 1.1
    gauss = ORDERS / (2 * z * z)
    rel = [np.max(skellam_rdp(ORDERS, z, 1.0, 10250, s, rounding="none") / gauss - 1) for s in (10.0, 1e3, 1e7)]
    assert rel[0] > 1e-3 and rel[1] < 1e-5 and 0 < rel[2] < 1e-13


def test_sum_of_skellam_shares_is_skellam():
    """Closed under sums (what secure aggregation needs): 4 shares Sk(μ/4) convolve to Sk(μ)."""
    from scipy import stats

    k = np.arange(-120, 121)
    one = stats.skellam(0.5, 0.5).pmf(np.arange(-30, 31))
    conv = one
    for _ in range(3):
        conv = np.convolve(conv, one)
    assert np.allclose(conv, stats.skellam(2.0, 2.0).pmf(k), atol=1e-15)
