"""Skellam sensitivities of the scaled-and-rounded query: Δ₁ in the integer domain (brute force), Δ₂ inflated by
conditional randomized rounding (Monte Carlo), and the relative gaps to the Gaussian RDP they imply."""
import itertools
import math

import numpy as np
import pytest

from fedtheory.privacy.skellam import (DEFAULT_BETA, integer_l1_bound, rounded_l2_bound, skellam_rdp,
                                       skellam_rdp_integer)

ORDERS = np.array([2.0, 8.0, 32.0])


@pytest.mark.parametrize("d,r", [(2, 1.5), (3, 3.0), (4, 2.3), (5, 4.0)])
def test_integer_l1_bound_against_enumeration(d, r):
    """Enumerate every integer vector with ‖v‖₂ ≤ r: the bound covers the largest ‖v‖₁, and the paper code's
    ``sC·min(√d, C)`` (here C = 1, s = r) falls below it."""
    m = int(math.floor(r))
    best = max(sum(map(abs, v)) for v in itertools.product(range(-m, m + 1), repeat=d)
               if sum(x * x for x in v) <= r * r + 1e-12)
    assert best <= integer_l1_bound(r, d) + 1e-12
    if r >= 2:
        assert r * min(math.sqrt(d), 1.0) < best   # the code's Δ₁ understates it



def test_rounded_l2_bound_holds_per_attempt_with_probability_beta():
    """Monte Carlo: one randomized rounding of a vector with ‖x‖ = c exceeds c̃ with probability ≤ β
    (tolerance 4 SE); the deterministic (c + √d) bound is never exceeded."""
    rng = np.random.default_rng(1)
    d, c, trials = 400, 15.0, 4000
    ct = rounded_l2_bound(c, d)
    assert c < ct <= c + math.sqrt(d)
    over = 0
    for _ in range(trials):
        x = rng.standard_normal(d)
        x *= c / np.linalg.norm(x)
        lo = np.floor(x)
        v = lo + (rng.random(d) < (x - lo))
        n = np.linalg.norm(v)
        assert n <= c + math.sqrt(d)
        over += n > ct
    p = over / trials
    assert p <= DEFAULT_BETA + 4 * math.sqrt(DEFAULT_BETA * (1 - DEFAULT_BETA) / trials)


def test_relative_gaps_to_the_gaussian():
    """Paper's setting (d = 10250, z = 1.1, C = 1): without rounding the integer-domain Δ₁ gives 1.86 % above the
    Gaussian RDP at s = 10 (the code's Δ₁ 0.82 %); with conditional rounding at s = 10⁷ the gap is 1.0e-7
    (Δ₂² inflation ≈ √(2 ln(1/β))/c = 1/c), against 8.4e-15 without."""
    z, d = 1.1, 10250
    gauss = ORDERS / (2 * z * z)

    def rel(**kw):
        return float(np.max(skellam_rdp(ORDERS, z, 1.0, d, **kw) / gauss - 1))

    assert rel(scale=10.0, rounding="none") == pytest.approx(0.0186, abs=5e-5)
    code = float(np.max(skellam_rdp_integer(ORDERS, (10 * z) ** 2, 10.0, 10.0 * min(math.sqrt(d), 1.0)) / gauss - 1))
    assert code == pytest.approx(0.0082, abs=5e-5)
    r7 = rel(scale=1e7)
    assert r7 == pytest.approx(1.0e-7, rel=0.01)
    assert r7 == pytest.approx((rounded_l2_bound(1e7, d) / 1e7) ** 2 - 1, rel=1e-3)
    assert 0 < rel(scale=1e7, rounding="none") < 1e-13
    with pytest.raises(ValueError, match="rounding"):
        skellam_rdp(ORDERS, z, 1.0, d, 10.0, rounding="nearest")
