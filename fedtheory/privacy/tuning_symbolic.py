"""Sympy derivations behind the tuning chapter (Papernot & Steinke 2022; MR-MTL paper Sec. 7, App. F).

The three elementary results of the chapter are derived here, step by step, so that the book can show the
steps (each function returns its intermediate expressions):

* :func:`fixed_runs_lower_bound`: Prop. F.1 (P&S Prop. 17): best-of-``h`` of an exactly ε-DP two-output
  mechanism has likelihood ratio ``e^{hε}`` on one output, and Rényi divergence at least
  ``hε - h log(1 + e^{-ε})/(α - 1)`` at order α;
* :func:`tnb_ratio`: the truncated negative binomial's consecutive-probability ratio, from the printed product
  ``f(h) ∝ (1-γ)^h ∏_{ℓ<h} (ℓ+ν)/(ℓ+1)``, which is why TNB(ν, γ) is a distribution exactly for ν > -1;
* :func:`gaussian_extra_order`: the extra order α̂ of Theorem F.2 that minimises its α̂-terms for a Gaussian base
  mechanism (RDP ``α/(2z²)``): ``α̂* = z sqrt(2 log(1/γ))`` (:func:`fedtheory.privacy.tuning.gaussian_alpha_hat`
  evaluates it).

Symbols: α the Rényi order, ε the base mechanism's pure-DP parameter, ``h`` the number of runs, ν and γ the
TNB shape and rate, ``z`` the noise multiplier.
"""
from __future__ import annotations

from functools import lru_cache

import sympy as sp

__all__ = ["alpha", "eps", "h", "nu", "gamma", "z", "alpha_hat",
           "fixed_runs_lower_bound", "tnb_ratio", "gaussian_extra_order"]

alpha = sp.Symbol(r"\alpha", positive=True)
eps = sp.Symbol(r"\varepsilon", positive=True)
h = sp.Symbol("h", integer=True, positive=True)
nu = sp.Symbol(r"\nu", real=True)
gamma = sp.Symbol(r"\gamma", positive=True)
z = sp.Symbol("z", positive=True)
alpha_hat = sp.Symbol(r"\hat\alpha", positive=True)


@lru_cache(maxsize=None)
def fixed_runs_lower_bound() -> dict[str, sp.Expr]:
    """Prop. F.1: the two-output base mechanism, its best-of-``h``, and the Rényi lower bound from one output.

    ``P_D(bad) = 1/(1+e^{-ε})``, ``P_{D'}(bad) = e^{-ε}/(1+e^{-ε})`` (likelihood ratio ``e^ε``: exactly ε-DP).
    Best-of-``h`` outputs "bad" only if every run does: ``P(bad)^h``.  The Rényi divergence of order α is a
    sum of non-negative terms ``p^α q^{1-α}`` inside the log; keeping the "bad" term alone gives a lower bound.
    """
    p = 1 / (1 + sp.exp(-eps))
    q = sp.exp(-eps) / (1 + sp.exp(-eps))
    ph, qh = p**h, q**h
    ratio = sp.simplify(sp.log(ph / qh))
    term = ph**alpha * qh ** (1 - alpha)
    bound = sp.expand(sp.expand_log(sp.log(term), force=True) / (alpha - 1))
    bound = sp.simplify(sp.expand(bound.rewrite(sp.log)))
    printed = h * eps - h * sp.log(1 + sp.exp(-eps)) / (alpha - 1)
    return {"p_bad": p, "q_bad": q, "log_ratio": ratio, "renyi_term": term, "bound": bound, "printed": printed,
            "residual": sp.simplify(sp.expand_log(bound - printed, force=True))}


@lru_cache(maxsize=None)
def tnb_ratio() -> dict[str, sp.Expr]:
    """``f(h+1)/f(h)`` of the printed TNB product and its value at ``h = 1``: ``(1-γ)(1+ν)/2``.

    For ν < -1 it is negative (the "probabilities" alternate in sign), at ν = -1 it is zero (all mass on
    ``h = 1``), and for ν > -1 every ratio is positive.
    """
    ell = sp.Symbol(r"\ell", integer=True, nonnegative=True)

    def f(hh):  # the printed product, up to the common normalization 1/(γ^{-ν} - 1)
        return (1 - gamma) ** hh * sp.Product((ell + nu) / (ell + 1), (ell, 0, hh - 1))

    ratio = sp.simplify(sp.combsimp((f(h + 1) / f(h)).doit()))
    first = sp.factor(sp.simplify((f(2) / f(1)).doit()))
    return {"ratio": sp.factor(ratio), "f2_over_f1": first}


@lru_cache(maxsize=None)
def gaussian_extra_order() -> dict[str, sp.Expr]:
    """The α̂-terms of Theorem F.2 for RDP ``ε(α̂) = α̂/(2z²)``, their stationary point and its curvature."""
    terms = (1 + nu) * ((1 - 1 / alpha_hat) * alpha_hat / (2 * z**2) + sp.log(1 / gamma) / alpha_hat)
    d1 = sp.simplify(sp.diff(terms, alpha_hat))
    roots = [r for r in sp.solve(sp.Eq(d1, 0), alpha_hat) if r.is_positive is not False]
    if len(roots) != 1:
        raise ArithmeticError(f"expected one positive stationary point, got {roots}")
    d2 = sp.simplify(sp.diff(terms, alpha_hat, 2))
    return {"terms": sp.expand(terms), "derivative": sp.factor(d1), "alpha_hat_star": sp.simplify(roots[0]),
            "second_derivative": d2,
            "minimum": sp.simplify(terms.subs(alpha_hat, roots[0]))}
