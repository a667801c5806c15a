"""Fusing local steps (Heikkilä 2025, App. A.3, eqs. 20-21): fedtheory.privacy.step_fusion."""
import math

import numpy as np
import pytest
import sympy as sp
from scipy import integrate, stats

from fedtheory.privacy import secagg
from fedtheory.privacy import step_fusion as F
from fedtheory.privacy.gaussian import gaussian_epsilon


def test_eq20_21_paper_example_two_clients():
    """Client 1: S steps, clip C, noise std σC.  Client 2: 2S steps, clip C/2, noise σC on every other step only.
    Fused, client 2's block has sensitivity C and multiplier σ, so both clients look like S steps of (C, σ)."""
    C, sigma = 1.7, 0.8
    assert F.fused_sensitivity([C / 2, C / 2]) == pytest.approx(C)
    assert F.fused_noise_multiplier([C / 2, C / 2], [0.0, sigma * C]) == pytest.approx(sigma)
    # sum-dominating step over the two clients: sqrt(2) sigma, as for two equal clients
    z = secagg.heterogeneous_effective_multiplier([1, 1], [C, F.fused_sensitivity([C / 2, C / 2])],
                                                  [sigma * C, sigma * C])
    assert z == pytest.approx(math.sqrt(2) * sigma)
    # without fusing, the noiseless odd steps make per-step accounting infinite
    assert F.gdp_mu_per_step([C / 2, C / 2], [0.0, sigma * C]) == math.inf
    assert F.gdp_mu_fused([C / 2, C / 2], [0.0, sigma * C]) == pytest.approx(1 / sigma)


@pytest.mark.parametrize("m", [2, 3])
def test_sympy_lagrange_identity_fusing_never_worse_without_subsampling(m):
    diff, lagrange, rest = F.fusion_identity(m)
    assert rest == 0
    # a negative control: dropping one Lagrange term breaks the identity
    C = sp.symbols(f"C1:{m + 1}", positive=True)
    s = sp.symbols(f"s1:{m + 1}", positive=True)
    V = sum(x**2 for x in s)
    wrong = lagrange - (C[0] * s[1]**2 - C[1] * s[0]**2) ** 2 / (s[0]**2 * s[1]**2 * V)
    assert sp.simplify(sp.together(diff - wrong)) != 0
    # numerically, equality iff s^2 proportional to C
    rng = np.random.default_rng(m)
    Cs = rng.uniform(0.5, 2, m)
    assert F.gdp_mu_per_step(Cs, np.sqrt(0.3 * Cs)) == pytest.approx(F.gdp_mu_fused(Cs, np.sqrt(0.3 * Cs)))
    s_other = rng.uniform(0.5, 2, m)
    assert F.gdp_mu_per_step(Cs, s_other) > F.gdp_mu_fused(Cs, s_other)


def test_no_subsampling_fused_equals_gaussian_and_per_step():
    """q = 1, clip C/m, noise σ²/m per step: fused = per-step = the Gaussian with multiplier σ (exact)."""
    chk = F.fusion_check(1.2, 1.0, 2, 1, 1e-5)
    ref = gaussian_epsilon(1.2, 1e-5)
    assert chk.fused == pytest.approx(ref, abs=0.01) and chk.per_step == pytest.approx(ref, abs=0.01)


def _block_delta(eps, z, q, m):
    """Hockey-stick δ(ε) of one exact block by quadrature, max of both directions (independent of dp_accounting)."""
    k = np.arange(m + 1)
    w = stats.binom.pmf(k, m, q)
    p = lambda t: float(np.sum(w * stats.norm.pdf(t, k / m, z)))  # noqa: E731
    qd = lambda t: float(stats.norm.pdf(t, 0.0, z))  # noqa: E731
    a = math.exp(eps)
    lim = 12 * z + 2
    d1 = integrate.quad(lambda t: max(p(t) - a * qd(t), 0.0), -lim, lim, limit=400, points=[0.0, 0.5, 1.0])[0]
    d2 = integrate.quad(lambda t: max(qd(t) - a * p(t), 0.0), -lim, lim, limit=400, points=[0.0, 0.5, 1.0])[0]
    return max(d1, d2)


def test_exact_block_pld_matches_quadrature():
    z, q, m = 0.8, 0.1, 2
    pld = F.exact_block_pld(z, q, m, 1)
    for eps in (0.2, 0.5, 1.0):
        assert pld.get_delta_for_epsilon(eps) == pytest.approx(_block_delta(eps, z, q, m), rel=0.02, abs=1e-6)


@pytest.mark.parametrize("z,q,m,blocks", [(1.0, 0.05, 2, 10), (1.5, 0.05, 2, 100), (1.0, 0.02, 4, 50)])
def test_fused_argument_is_a_valid_but_loose_bound_under_subsampling(z, q, m, blocks):
    chk = F.fusion_check(z, q, m, blocks, 1e-5)
    assert chk.exact_block <= chk.fused + 1e-9        # the argument is an upper bound
    assert chk.exact_block <= chk.per_step + 1e-9     # the block sum is post-processing of the per-step vector
    assert chk.fused > 2 * chk.per_step               # ... but fusing pays sensitivity C at rate ~ m q


@pytest.mark.parametrize("m", [2, 3, 8])
def test_client_with_m_times_the_steps_at_rate_q_over_m_is_no_worse(m):
    q = 0.05
    assert F.fused_sample_rate(q / m, m) <= q
    from fedtheory.privacy.accountants import get_accountant
    from fedtheory.privacy.events import dpsgd_event
    acc = get_accountant("rdp")
    assert acc.epsilon(F.fused_event(1.0, q / m, m, 100), 1e-5) <= acc.epsilon(dpsgd_event(1.0, q, 100), 1e-5)


def test_bad_input():
    with pytest.raises(ValueError, match="noise_stds"):
        F.fused_noise_multiplier([1.0, 1.0], [1.0])
    with pytest.raises(ValueError, match="sample_rate"):
        F.fused_sample_rate(0.0, 2)
    with pytest.raises(ValueError, match="m"):
        F.fused_event(1.0, 0.1, 0, 1)
