"""The sympy derivations behind the tuning and secure-aggregation chapters agree with the numeric libraries."""
from __future__ import annotations

import math

import numpy as np
import sympy as sp

from fedtheory.privacy import secagg as SA
from fedtheory.privacy import secagg_symbolic as SY
from fedtheory.privacy import tuning as T
from fedtheory.privacy import tuning_symbolic as TS


def test_fixed_runs_bound_is_the_printed_one_and_below_the_exact_divergence():
    fr = TS.fixed_runs_lower_bound()
    assert fr["residual"] == 0 and sp.simplify(fr["log_ratio"] - TS.h * TS.eps) == 0
    f = sp.lambdify((TS.eps, TS.h, TS.alpha), fr["bound"], "numpy")
    orders = np.array([2.0, 10.0, 100.0])
    for e, h in ((0.5, 3), (1.0, 10)):
        np.testing.assert_allclose(f(e, h, orders), T.fixed_h_lower_bound(e, orders, h), rtol=1e-12)
        assert np.all(T.finite_rdp(*T.fixed_h_example(e, h), orders) >= f(e, h, orders) - 1e-12)


def test_tnb_ratio_matches_the_library_pmf():
    ratio = sp.lambdify((TS.h, TS.nu, TS.gamma), TS.tnb_ratio()["ratio"], "numpy")
    for nu in (-0.5, 0.5, 2.0):
        vals = T.tnb_formula_values(np.arange(1, 7), nu, 0.1)
        np.testing.assert_allclose(vals[1:] / vals[:-1], ratio(np.arange(1, 6), nu, 0.1), rtol=1e-12)
    assert sp.simplify(TS.tnb_ratio()["f2_over_f1"] - (1 - TS.gamma) * (1 + TS.nu) / 2) == 0


def test_gaussian_extra_order_matches_the_library():
    star = sp.lambdify((TS.z, TS.gamma), TS.gaussian_extra_order()["alpha_hat_star"], "math")
    for z, nu in ((30.0, 0.0), (5.0, 1.0)):
        g = T.tnb_gamma(10.0, nu)
        assert math.isclose(star(z, g), T.gaussian_alpha_hat(z, nu, 10.0), rel_tol=1e-12)


def test_secagg_shares_match_the_calibrations():
    ns = SY.noise_shares()
    for M in (2, 5, 100):
        assert math.isclose(float(ns["share_ddp"].subs({SY.M: M, SY.z_total: 1})), SA.noise_share(M, 11, "ddp"))
        assert math.isclose(float(ns["share_ddp_hbc"].subs({SY.M: M, SY.z_total: 1})), SA.noise_share(M, 11, "ddp_hbc"))
    assert SY.round_sum_gdp()["difference"] == 0


def test_heterogeneous_share_matches_the_library():
    c, C = np.array([1.0, 1.0, 2.0]), np.array([1.0, 2.0, 1.0])
    hs = SY.heterogeneous_share()
    sym = {s.name: s for s in hs["z"].free_symbols}
    z = float(hs["z"].subs({sym[r"z_{total}"]: 3.0, sym[r"{\max_j c_j C_j}"]: float(np.max(c * C)),
                             sym[r"{\textstyle\sum_j} c_j^2 C_j^2"]: float(np.sum(c**2 * C**2))}))
    np.testing.assert_allclose(z * C, SA.heterogeneous_client_noise(c, C, 3.0), rtol=1e-12)
