"""Exact RDP of best-of-h for a base mechanism with finitely many outputs (an independent check of Thm F.2 and
P&S Thm 6), and Prop. F.1 (P&S Prop. 17): with ``h`` fixed, best-of-h can cost h-fold composition.
"""
from __future__ import annotations

import math
from typing import Optional

import numpy as np
from scipy import special

from fedtheory.validation import as_float_array, check_choice, check_integer_at_least, check_positive
from fedtheory.privacy.tuning.runs import _check_eta, _pgf

__all__ = ["exact_tuned_rdp", "finite_rdp", "fixed_h_lower_bound", "fixed_h_example"]


def exact_tuned_rdp(p, q, orders, distribution: str, mean_runs: float, eta: Optional[float] = None) -> np.ndarray:
    """Exact Rényi divergences (max of both directions) between the outputs of best-of-h on two inputs.

    The base mechanism has finitely many outputs, listed from worst to best quality, with
    probabilities ``p`` (input D) and ``q`` (input D').  Best-of-h outputs the maximum of h i.i.d.
    draws, so ``P(out ≤ y) = E[F(y)^h]``, the pgf of h at the CDF F; under Poisson, ``h = 0`` yields an
    extra output ⊥ with probability ``e^{-μ}`` on both inputs.  Comparing this exact value with
    :func:`.tuned_rdp` applied to the base pair's exact divergences tests Thm F.2 / Thm 6
    independently of their proofs.
    """
    check_choice("distribution", distribution, ("tnb", "poisson"))
    p = as_float_array("p", p).ravel()
    q = as_float_array("q", q).ravel()
    if p.shape != q.shape or (p <= 0).any() or (q <= 0).any():
        raise ValueError("p and q must be positive probability vectors of the same length")
    p, q = p / p.sum(), q / q.sum()
    eta = None if distribution == "poisson" else _check_eta(eta)

    def out_dist(r):
        cdf = np.concatenate([[0.0], np.cumsum(r)])
        cdf[-1] = 1.0
        g = _pgf(cdf, distribution, float(mean_runs), eta)
        probs = np.diff(g)
        if distribution == "poisson":
            probs = np.concatenate([[g[0]], probs])  # g[0] = P(h = 0) = e^{-μ}: the output ⊥
        return probs

    return finite_rdp(out_dist(p), out_dist(q), orders)


def finite_rdp(p, q, orders) -> np.ndarray:
    """max(D_α(p‖q), D_α(q‖p)) for finite distributions (D_1 = KL), vectorised over orders."""
    orders = as_float_array("orders", orders).ravel()

    def d(a, b):
        out = np.empty(orders.shape)
        for i, al in enumerate(orders):
            if al == 1.0:
                out[i] = float(np.sum(a * (np.log(a) - np.log(b))))
            else:
                out[i] = special.logsumexp(al * np.log(a) + (1 - al) * np.log(b)) / (al - 1)
        return out

    return np.maximum(d(p, q), d(q, p))


# ----------------------------------------------------------------------------------------------------
# Prop. F.1 (P&S Prop. 17): with h fixed, best-of-h can cost h-fold composition
# ----------------------------------------------------------------------------------------------------

def fixed_h_lower_bound(eps, order, h):
    """Printed Prop. F.1 lower bound ``ε̂(α) = hε − h log(1 + e^{−ε})/(α − 1)`` on the RDP of best-of-h (fixed h)."""
    eps = check_positive("eps", eps)
    order = as_float_array("order", order)
    if (order <= 1).any():
        raise ValueError(f"order must be > 1 (got {order.min()!r})")
    h = check_integer_at_least("h", h, 1)
    out = h * eps - h * np.log1p(np.exp(-eps)) / (order - 1.0)
    return out.item() if np.ndim(out) == 0 else out


def fixed_h_example(eps: float, h: int) -> tuple[np.ndarray, np.ndarray]:
    """The (ε, 0)-DP base mechanism behind Prop. F.1, and its best-of-h output laws (worst output first).

    Base M: two outputs, "bad" (0) and "good" (1), with ``P_D(0) = 1/(1+e^{−ε})``, ``P_D'(0) = e^{−ε}/(1+e^{−ε})``
    (likelihood ratios e^{±ε}: exactly ε-DP).  Best-of-h outputs 0 only if all h runs do, so
    ``P(0) = P_M(0)^h`` on each input: the ratio is e^{hε}, i.e. no better than hε-DP, and the Rényi divergence
    at order α is at least the contribution of that output, which is exactly :func:`fixed_h_lower_bound`.
    Returns ``(p, q)``: best-of-h output laws on D and D' (outputs 0, 1).
    """
    eps = float(check_positive("eps", eps))
    h = int(check_integer_at_least("h", h, 1))
    p0 = 1.0 / (1.0 + math.exp(-eps))
    q0 = math.exp(-eps) / (1.0 + math.exp(-eps))
    return np.array([p0**h, 1.0 - p0**h]), np.array([q0**h, 1.0 - q0**h])
