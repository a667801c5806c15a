"""Sympy derivations behind the secure-aggregation chapter (Heikkilä 2025, Thms 4.6-4.7 and App. A.3).

Each function returns its intermediate expressions, so that the book can show the steps:

* :func:`noise_shares`: the summed noise of M clients, each adding ``N(0, z_j² C²)``, has variance
  ``Σ_j z_j² C²``; equal shares that reach ``z_total`` are ``z_total/√M`` (``z_total/√(M-1)`` when a curious
  client can subtract its own share; :data:`fedtheory.privacy.secagg.CALIBRATIONS`);
* :func:`round_sum_gdp`: without subsampling and with aligned gradients, the round's summed update separates
  neighbours by ``S C`` with noise std ``√S z_total C``: Gaussian-DP parameter ``√S/z_total``, the same as the
  ``S``-fold composition of the per-step sums (post-processing loses nothing there);
* :func:`heterogeneous_share`: with client-specific learning-rate factors ``c_j``, clips ``C_j`` and noise
  ``s_j = z C_j``, the common multiplier ``z`` that gives the aggregate the multiplier ``z_total`` (App. A.3).

Adjacency: add/remove one sample of the union dataset (a sample lives in one client).
"""
from __future__ import annotations

from functools import lru_cache

import sympy as sp

__all__ = ["M", "S", "C", "z_total", "z_j", "noise_shares", "round_sum_gdp", "heterogeneous_share"]

M = sp.Symbol("M", integer=True, positive=True)
S = sp.Symbol("S", integer=True, positive=True)
C = sp.Symbol("C", positive=True)
z_total = sp.Symbol(r"z_{total}", positive=True)
z_j = sp.Symbol("z_j", positive=True)
_j = sp.Symbol("j", integer=True, positive=True)
_s = sp.Symbol("s", integer=True, positive=True)


@lru_cache(maxsize=None)
def noise_shares() -> dict[str, sp.Expr]:
    """Variance of the sum of M equal client noises, and the share that makes it ``(z_total C)²``."""
    var_sum = sp.summation(z_j**2 * C**2, (_j, 1, M))
    (ddp,) = [r for r in sp.solve(sp.Eq(var_sum, (z_total * C) ** 2), z_j) if r.is_positive is not False]
    var_others = sp.summation(z_j**2 * C**2, (_j, 1, M - 1))
    # M >= 2 here (one other client at least): keep the root that is positive at M = 2
    (hbc,) = [r for r in sp.solve(sp.Eq(var_others, (z_total * C) ** 2), z_j) if r.subs(M, 2).is_positive]
    return {"variance_of_sum": var_sum, "share_ddp": ddp, "variance_without_one": sp.factor(var_others),
            "share_ddp_hbc": hbc}


@lru_cache(maxsize=None)
def round_sum_gdp() -> dict[str, sp.Expr]:
    """GDP parameter of the summed round update (shift over noise std) and of the S-fold composition."""
    shift = sp.summation(C, (_s, 1, S))                      # aligned clipped gradients of one sample
    var = sp.summation((z_total * C) ** 2, (_s, 1, S))        # independent per-step aggregate noises
    mu_round = sp.simplify(shift / sp.sqrt(var))
    mu_steps = sp.simplify(sp.sqrt(sp.summation((C / (z_total * C)) ** 2, (_s, 1, S))))  # μ's compose in squares
    return {"shift": shift, "variance": var, "mu_round": mu_round, "mu_composition": mu_steps,
            "difference": sp.simplify(mu_round - mu_steps)}


@lru_cache(maxsize=None)
def heterogeneous_share() -> dict[str, sp.Expr]:
    """App. A.3: aggregate multiplier ``sqrt(Σ_j c_j² s_j²)/max_j c_j C_j`` with ``s_j = z C_j``, solved for z."""
    z = sp.Symbol("z", positive=True)
    sum_sq = sp.Symbol(r"{\textstyle\sum_j} c_j^2 C_j^2", positive=True)
    max_ = sp.Symbol(r"{\max_j c_j C_j}", positive=True)
    effective = sp.sqrt(z**2 * sum_sq) / max_               # Σ_j c_j² (z C_j)² = z² Σ_j c_j² C_j²
    (sol,) = sp.solve(sp.Eq(effective, z_total), z)
    return {"effective_multiplier": sp.simplify(effective), "z": sol,
            "equal_clients": sp.simplify(sol.subs({sum_sq: M * C**2, max_: C}))}
