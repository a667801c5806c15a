"""Rényi differential privacy (RDP): the Poisson-subsampled Gaussian, conversions to (ε, δ)-DP and zCDP.

Definitions (MR-MTL paper, Appendix A; Mironov 2017):

* A mechanism ``M`` is (α, ε(α))-RDP if ``D_α(M(x) ‖ M(x')) ≤ ε(α)`` for all *adjacent* ``x, x'``.
  RDP composes additively: running mechanisms with curves ``ε₁(α)`` and ``ε₂(α)`` is
  ``(α, ε₁(α) + ε₂(α))``-RDP, so a whole training run is accounted by summing curves over a fixed grid
  of orders (:data:`DEFAULT_ORDERS`) and converting once at the end (:func:`rdp_to_epsilon`).
* ρ-zCDP (Bun & Steinke 2016) is (α, ρα)-RDP for every α > 1.

**Adjacency.**  The subsampled-Gaussian curve below is for **add/remove-one** adjacency with **Poisson
subsampling** (each record is in a batch independently with probability ``q``): it is
``D_α(μ ‖ μ₀)`` with ``μ₀ = N(0, σ²)`` and ``μ = (1 − q) N(0, σ²) + q N(1, σ²)`` (Mironov, Talwar &
Zhang 2019, Sec. 3.3), which is the worst case of both directions (Zhu & Wang 2019).  Under
**replace-one** adjacency the clipped-sum sensitivity doubles (``2c`` instead of ``c``); account for
it by passing ``noise_multiplier / 2``.  Fixed-size shuffled batches are *not* covered by this curve.

**Implementation.**  :func:`subsampled_gaussian_rdp` evaluates Opacus 1.6's formula
(``opacus.accountants.analysis.rdp.compute_rdp``) by default.  Because Opacus loops in pure Python
(slow per curve: ``benchmarks/README.md``), calibrations that evaluate thousands of curves (139 School
silos, sweeps) use ``backend="numpy"``: the same series (integer orders: the exact binomial expansion;
fractional orders: the two-sided erfc series of Mironov et al. 2019, Sec. 3.3), vectorised over orders
and terms with signed log-sum-exp.  ``tests/privacy/test_privacy_accounting.py`` checks the two backends agree
to 1e-9 relative, that both agree with Google's ``dp_accounting`` at integer orders, and with direct
numerical integration of the Rényi divergence at fractional orders (where ``dp_accounting`` 0.6 sums
absolute values of the series and returns a looser bound, or ``inf``).
:func:`rdp_many` evaluates the same series for many ``(q, σ)`` pairs at once, bit for bit :func:`_rdp_numpy`'s numbers
(the binomial coefficients, which depend on the order only, computed once; ``tests/privacy/test_calibration_cache.py``).
"""
from __future__ import annotations

import logging
import warnings
from typing import Literal

import numpy as np

from fedtheory.validation import (as_float_array, check_choice, check_integer_at_least,
                                   check_nonnegative, check_open_interval, check_positive)

__all__ = [
    "DEFAULT_ORDERS",
    "subsampled_gaussian_rdp",
    "rdp_to_epsilon",
    "zcdp_to_rdp",
    "rdp_to_zcdp",
    "zcdp_epsilon",
    "zcdp_rho",
]

#: RDP orders used everywhere: Opacus 1.6's ``RDPAccountant.DEFAULT_ALPHAS`` (1.1, 1.2, …, 10.9, 12, …, 63)
#: extended with the large orders of the MR-MTL code (128, 256, 512) and 1024, which small budgets need
#: (the optimal order grows like ``sqrt(log(1/δ)/ρ)``).
DEFAULT_ORDERS: np.ndarray = np.array(
    [1 + x / 10.0 for x in range(1, 100)] + list(range(12, 64)) + [64, 80, 96, 128, 192, 256, 384, 512, 1024],
    dtype=float)
DEFAULT_ORDERS.setflags(write=False)


def _check_orders(orders) -> np.ndarray:
    orders = np.atleast_1d(as_float_array("orders", orders))
    if orders.ndim != 1:
        raise ValueError(f"orders must be a 1-d array of RDP orders (got shape {orders.shape})")
    if (orders <= 1).any() or not np.isfinite(orders).all():
        raise ValueError(f"orders must be finite and > 1 (got {orders[(orders <= 1) | ~np.isfinite(orders)][0]!r})")
    return orders


# ----------------------------------------------------------------------------------------------------
# Poisson-subsampled Gaussian: vectorised numpy evaluation of log A_α (Mironov, Talwar & Zhang 2019)
# ----------------------------------------------------------------------------------------------------
def _log_a_int(q: float, sigma: float, alphas: np.ndarray) -> np.ndarray:
    """log A_α = log Σ_{i=0}^{α} C(α,i) (1−q)^{α−i} q^i exp((i²−i)/(2σ²)) for integer orders."""
    from scipy import special  # here, not at import (scipy.special is a slow import)

    amax = int(alphas.max())
    i = np.arange(amax + 1, dtype=float)[None, :]
    a = alphas[:, None]
    valid = i <= a
    with np.errstate(invalid="ignore", divide="ignore"):
        log_coef = special.gammaln(a + 1) - special.gammaln(i + 1) - special.gammaln(np.where(valid, a - i, 0) + 1)
        terms = log_coef + i * np.log(q) + (a - i) * np.log1p(-q) + (i * i - i) / (2 * sigma ** 2)
    terms = np.where(valid, terms, -np.inf)
    return _signed_logsumexp(terms, 1.0, axis=1)[0]


def _signed_logsumexp(log_terms: np.ndarray, signs, axis: int = -1) -> tuple[np.ndarray, np.ndarray]:
    """(log|Σ sᵢ e^{xᵢ}|, sign of the sum) along ``axis``; a fast numpy version of scipy's logsumexp."""
    m = np.max(log_terms, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore"):
        total = np.sum(signs * np.exp(log_terms - m), axis=axis)
        out = np.log(np.abs(total)) + np.squeeze(m, axis=axis)
    return out, np.sign(total)


def _signed_add(la, sa, lb, sb):
    """(log|x|, sign x) of x = sa·e^la + sb·e^lb, elementwise."""
    return _signed_logsumexp(np.stack([la, lb]), np.stack([sa, sb]), axis=0)


def _log_a_frac(q: float, sigma: float, alphas: np.ndarray) -> np.ndarray:
    """log A_α for fractional orders: the two erfc-weighted binomial series, signed.

    Terms are summed up to and including the first index where both series' terms are below e^-30
    (Opacus' stopping rule).  The series decay only polynomially for α near 1 (thousands of terms),
    so terms are computed in growing chunks for the orders that have not stopped yet.
    """
    from scipy import special  # here, not at import (scipy.special is a slow import)

    z0 = sigma ** 2 * np.log(1 / q - 1) + 0.5
    n = len(alphas)
    acc = [np.full(n, -np.inf), np.ones(n), np.full(n, -np.inf), np.ones(n)]  # log|A0|, sign, log|A1|, sign
    active = np.arange(n)
    start, chunk = 0, 32
    while active.size and start < 1 << 17:
        a = alphas[active][:, None]
        i = np.arange(start, start + chunk, dtype=float)[None, :]
        j = a - i
        log_coef = special.gammaln(a + 1) - special.gammaln(i + 1) - special.gammaln(j + 1)
        sign = special.gammasgn(j + 1)
        log_s0 = (log_coef + i * np.log(q) + j * np.log1p(-q) + (i * i - i) / (2 * sigma ** 2)
                  + special.log_ndtr((z0 - i) / sigma))
        log_s1 = (log_coef + j * np.log(q) + i * np.log1p(-q) + (j * j - j) / (2 * sigma ** 2)
                  + special.log_ndtr((j - z0) / sigma))
        active = _add_chunk(acc, active, log_s0, log_s1, sign, chunk)
        start += chunk
        chunk *= 2
    return _series_sum(acc, active, n)


def _add_chunk(acc: list, active: np.ndarray, log_s0: np.ndarray, log_s1: np.ndarray, sign: np.ndarray,
               chunk: int) -> np.ndarray:
    """Add one chunk of the two fractional-order series to ``acc`` (log|A0|, sign, log|A1|, sign of the ``active``
    rows), each row's terms up to and including the first index where both are below e^-30 (Opacus' stopping
    rule); return the rows still active.  ``log_s0`` and ``log_s1`` are overwritten."""
    small = np.maximum(log_s0, log_s1) < -30
    done = small.any(axis=1)
    stop = np.where(done, np.argmax(small, axis=1), chunk - 1)
    drop = np.arange(chunk)[None, :] > stop[:, None]
    for k, terms in ((0, log_s0), (2, log_s1)):
        terms[drop] = -np.inf
        part, psign = _signed_logsumexp(terms, sign, axis=1)
        acc[k][active], acc[k + 1][active] = _signed_add(acc[k][active], acc[k + 1][active], part, psign)
    return active[~done]


def _series_sum(acc: list, active: np.ndarray, rows: int) -> np.ndarray:
    """log A_α = log(A0 + A1) of every row; ``inf`` for a row whose series never met the stopping rule (excluded:
    conservative, the minimum over orders then runs over fewer orders)."""
    out = np.logaddexp(np.where(acc[1] > 0, acc[0], -np.inf), np.where(acc[3] > 0, acc[2], -np.inf))
    converged = np.ones(rows, dtype=bool)
    converged[active] = False
    return np.where(converged, out, np.inf)


def _rdp_numpy(q: float, sigma: float, orders: np.ndarray) -> np.ndarray:
    """Per-step RDP of the Poisson-subsampled Gaussian at ``orders`` (vectorised)."""
    if q == 0:
        return np.zeros_like(orders)
    if sigma == 0:
        return np.full_like(orders, np.inf)
    if np.isinf(sigma):
        return np.zeros_like(orders)
    if q == 1:
        return orders / (2 * sigma ** 2)
    out = np.empty_like(orders)
    is_int = orders == np.round(orders)
    if is_int.any():
        out[is_int] = _log_a_int(q, sigma, orders[is_int])
    if (~is_int).any():
        out[~is_int] = _log_a_frac(q, sigma, orders[~is_int])
    return out / (orders - 1)


# ----------------------------------------------------------------------------------------------------
# many (q, σ) pairs in one evaluation (the calibration cache verifies every cached z of a run at once)
# ----------------------------------------------------------------------------------------------------
_TABLES: dict = {}  # log binomial coefficients per grid of orders (they do not depend on q or σ)


def _int_table(alphas: np.ndarray):
    """``(i, valid, log C(α, i))`` for integer orders ``alphas``, as :func:`_log_a_int` computes them (cached)."""
    key = ("int", alphas.tobytes())
    if key not in _TABLES:
        from scipy import special

        amax = int(alphas.max())
        i = np.arange(amax + 1, dtype=float)[None, :]
        a = alphas[:, None]
        valid = i <= a
        with np.errstate(invalid="ignore", divide="ignore"):
            log_coef = special.gammaln(a + 1) - special.gammaln(i + 1) - special.gammaln(np.where(valid, a - i, 0) + 1)
        _TABLES[key] = (i, valid, log_coef)
    return _TABLES[key]


def _frac_table(alphas: np.ndarray, start: int, chunk: int, rows: np.ndarray):
    """``(log|C(α, i)|, sign)`` for the fractional orders ``alphas[rows]`` and ``i`` in ``[start, start + chunk)``, as
    :func:`_log_a_frac` computes them; cached per order (a chunk far down the series is needed by few orders)."""
    key = ("frac", alphas.tobytes(), start, chunk)
    if key not in _TABLES:
        if len(_TABLES) > 256:
            _TABLES.clear()
        _TABLES[key] = (np.zeros((len(alphas), chunk)), np.zeros((len(alphas), chunk)), np.zeros(len(alphas), bool))
    coef, sign, have = _TABLES[key]
    missing = np.unique(rows[~have[rows]])
    if missing.size:
        from scipy import special

        a = alphas[missing][:, None]
        i = np.arange(start, start + chunk, dtype=float)[None, :]
        j = a - i
        coef[missing] = special.gammaln(a + 1) - special.gammaln(i + 1) - special.gammaln(j + 1)
        sign[missing] = special.gammasgn(j + 1)
        have[missing] = True
    return coef[rows], sign[rows]


def _log_a_int_many(qs, sigmas, alphas: np.ndarray, block: int = 64) -> np.ndarray:
    """:func:`_log_a_int` for every pair ``(qs[p], sigmas[p])``, → ``(P, len(alphas))``, bit for bit the same numbers.

    The binomial coefficients are shared (:func:`_int_table`); the terms are computed for ``i ≤ α`` only, ``block``
    pairs at a time.  :func:`_log_a_int` sums each order's row padded to ``width = max α + 1`` with exact zeros past
    ``i = α``; numpy sums a row pairwise, splitting ``n`` at ``n/2`` rounded down to a multiple of 8, so for
    ``width = 1025`` the first 128, 256 and 512 entries are nodes of that tree: a row whose terms fit in the first
    ``w`` of those is summed over ``w`` entries here (the zeros after them add exactly nothing), the others over the
    full width — the same sums, rounded alike."""
    i, valid, log_coef = _int_table(alphas)
    n, width = log_coef.shape
    counts = valid.sum(axis=1)
    pad = np.array([next((w for w in (128, 256, 512) if c <= w and w < width and _node(width, w)), width)
                    for c in counts])
    P = len(qs)
    lq = np.array([np.log(v) for v in qs])[:, None]
    l1q = np.array([np.log1p(-v) for v in qs])[:, None]
    den = np.array([2 * v ** 2 for v in sigmas])[:, None]
    out = np.empty((P, n))
    for b0 in range(0, P, block):
        sl = slice(b0, min(b0 + block, P))
        parts, m = [], np.empty((sl.stop - sl.start, n))
        for r in range(n):
            c = int(counts[r])
            ir, a = i[:, :c], alphas[r]
            t = log_coef[r, :c] + ir * lq[sl] + (a - ir) * l1q[sl] + (ir * ir - ir) / den[sl]
            m[:, r] = t.max(axis=1)
            parts.append(t)
        m = np.where(np.isfinite(m), m, 0.0)
        total = np.empty((sl.stop - sl.start, n))
        for w in np.unique(pad):
            rows = np.flatnonzero(pad == w)
            buf = np.zeros((sl.stop - sl.start, rows.size, int(w)))
            for j, r in enumerate(rows):
                buf[:, j, :parts[r].shape[1]] = np.exp(parts[r] - m[:, r:r + 1])
            total[:, rows] = np.sum(1.0 * buf, axis=2)
        with np.errstate(divide="ignore"):
            out[sl] = np.log(np.abs(total)) + m
    return out


def _node(n: int, w: int) -> bool:
    """Whether numpy's pairwise sum of ``n`` entries sums the first ``w`` of them as one node of its tree (it splits
    ``n > 128`` at ``n/2`` rounded down to a multiple of 8, and sums ``n ≤ 128`` in one block)."""
    while n > w:
        if n <= 128:
            return False
        n2 = n // 2
        n = n2 - n2 % 8
    return n == w


def _log_a_frac_many(qs, sigmas, alphas: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
    """:func:`_log_a_frac` for every pair ``(qs[p], sigmas[p])``, → ``(P, len(alphas))``, bit for bit the same numbers:
    the rows (pair, order) run the same chunks with the same stopping rule; the coefficients are shared
    (:func:`_frac_table`).  ``mask`` ``(P, len(alphas))``: compute only those entries (the others are ``nan``)."""
    from scipy import special

    P, n = len(qs), len(alphas)
    q = np.repeat(np.asarray(qs, dtype=float), n)
    sigma = np.repeat(np.asarray(sigmas, dtype=float), n)
    order = np.tile(np.arange(n), P)
    lq = np.repeat([np.log(v) for v in qs], n)
    l1q = np.repeat([np.log1p(-v) for v in qs], n)
    den = np.repeat([2 * v ** 2 for v in sigmas], n)
    z0 = np.repeat([v ** 2 * np.log(1 / u - 1) + 0.5 for u, v in zip(qs, sigmas)], n)
    rows = P * n
    acc = [np.full(rows, -np.inf), np.ones(rows), np.full(rows, -np.inf), np.ones(rows)]
    active = np.arange(rows) if mask is None else np.flatnonzero(np.asarray(mask, dtype=bool).reshape(rows))
    wanted = active.copy()
    start, chunk = 0, 32
    while active.size and start < 1 << 17:
        o = order[active]
        log_coef, sign = _frac_table(alphas, start, chunk, o)
        a = alphas[o][:, None]
        i = np.arange(start, start + chunk, dtype=float)[None, :]
        j = a - i
        s, d, z = sigma[active][:, None], den[active][:, None], z0[active][:, None]
        lqa, l1qa = lq[active][:, None], l1q[active][:, None]
        # _log_a_frac's sums, term by term in its order, in place (x + y and y + x round alike):
        # log_s0 = log_coef + i·log q + j·log(1−q) + (i² − i)/(2σ²) + log Φ((z0 − i)/σ)
        # log_s1 = log_coef + j·log q + i·log(1−q) + (j² − j)/(2σ²) + log Φ((j − z0)/σ)
        log_s0 = i * lqa
        log_s0 += log_coef
        tmp = j * l1qa
        log_s0 += tmp
        np.divide(i * i - i, d, out=tmp)
        log_s0 += tmp
        np.subtract(z, i, out=tmp)
        tmp /= s
        special.log_ndtr(tmp, out=tmp)
        log_s0 += tmp
        log_s1 = j * lqa
        log_s1 += log_coef
        np.multiply(i, l1qa, out=tmp)
        log_s1 += tmp
        np.multiply(j, j, out=tmp)
        tmp -= j
        tmp /= d
        log_s1 += tmp
        np.subtract(j, z, out=tmp)
        tmp /= s
        special.log_ndtr(tmp, out=tmp)
        log_s1 += tmp
        active = _add_chunk(acc, active, log_s0, log_s1, sign, chunk)
        start += chunk
        chunk *= 2
    out = _series_sum(acc, active, rows)
    if mask is not None:
        skipped = np.ones(rows, dtype=bool)
        skipped[wanted] = False
        out[skipped] = np.nan
    return out.reshape(P, n)


def rdp_many(qs, sigmas, orders: np.ndarray, frac_mask: np.ndarray | None = None) -> np.ndarray:
    """Per-step RDP of the Poisson-subsampled Gaussian for many pairs ``(qs[p], sigmas[p])`` at ``orders``:
    ``(P, len(orders))``, row p bit for bit :func:`_rdp_numpy` ``(qs[p], sigmas[p], orders)`` (the same series,
    their coefficients computed once for all pairs; a value at one order does not depend on the other orders asked
    for, except that the integer orders share one padded row of width ``max + 1``: ask for all of them together).
    ``frac_mask`` ``(P, len(orders))``: compute the fractional orders only where true (``nan`` elsewhere)."""
    qs = [float(v) for v in qs]
    sigmas = [float(v) for v in sigmas]
    if len(qs) != len(sigmas):
        raise ValueError(f"qs and sigmas must have one value per pair (got {len(qs)} and {len(sigmas)})")
    out = np.empty((len(qs), len(orders)))
    general = [p for p, (q, s) in enumerate(zip(qs, sigmas)) if not (q == 0 or s == 0 or np.isinf(s) or q == 1)]
    for p in sorted(set(range(len(qs))) - set(general)):
        out[p] = _rdp_numpy(qs[p], sigmas[p], orders)
    if general:
        gq, gs = [qs[p] for p in general], [sigmas[p] for p in general]
        part = np.empty((len(general), len(orders)))
        is_int = orders == np.round(orders)
        if is_int.any():
            part[:, is_int] = _log_a_int_many(gq, gs, orders[is_int])
        if (~is_int).any():
            mask = None if frac_mask is None else np.asarray(frac_mask, dtype=bool)[general][:, ~is_int]
            part[:, ~is_int] = _log_a_frac_many(gq, gs, orders[~is_int], mask)
        out[general] = part / (orders - 1)
    return out


def _rdp_opacus(q: float, sigma: float, orders: np.ndarray) -> np.ndarray:
    from opacus.accountants.analysis.rdp import compute_rdp

    if np.isinf(sigma):
        return np.zeros_like(orders)
    return np.asarray(compute_rdp(q=q, noise_multiplier=sigma, steps=1, orders=orders), dtype=float)


def _rdp_dp_accounting(q: float, sigma: float, orders: np.ndarray) -> np.ndarray:
    from dp_accounting.rdp import rdp_privacy_accountant as ra

    if np.isinf(sigma):
        return np.zeros_like(orders)
    level = logging.getLogger().level
    logging.getLogger().setLevel(logging.ERROR)  # it logs a warning for every series it gives up on
    try:
        return np.asarray(ra._compute_rdp_poisson_subsampled_gaussian(q, sigma, orders), dtype=float)
    finally:
        logging.getLogger().setLevel(level)


_BACKENDS = {"opacus": _rdp_opacus, "numpy": _rdp_numpy, "dp_accounting": _rdp_dp_accounting}


def subsampled_gaussian_rdp(orders, noise_multiplier: float, sample_rate: float, steps: int = 1, *,
                            backend: Literal["opacus", "numpy", "dp_accounting"] = "opacus") -> np.ndarray:
    """RDP curve ε(α) of ``steps`` compositions of the Poisson-subsampled Gaussian mechanism.

    One DP-SGD step adds ``N(0, (noise_multiplier·c)²)`` to the sum of per-example gradients clipped to
    norm ``c`` over a Poisson sample with rate ``sample_rate``.  Adjacency: **add/remove one record**
    (see the module docstring).  Composition over steps is linear (MR-MTL Appendix A).

    ``noise_multiplier`` may be 0 (→ ∞ for ``steps ≥ 1``) or ``np.inf`` (→ 0); ``steps=0`` gives 0.
    ``backend`` picks the implementation: ``"opacus"`` (default; Opacus 1.6 ``compute_rdp``),
    ``"numpy"`` (this module's vectorised version, far faster, cross-checked against Opacus), or
    ``"dp_accounting"`` (Google's, an upper bound that is looser at small fractional orders).
    """
    orders = _check_orders(orders)
    sigma = float(check_nonnegative("noise_multiplier", noise_multiplier))
    q = float(as_float_array("sample_rate", sample_rate))
    if not 0 <= q <= 1:
        raise ValueError(f"sample_rate must lie in [0, 1] (got {q!r})")
    steps = int(check_integer_at_least("steps", steps, 0))
    check_choice("backend", backend, tuple(_BACKENDS))
    if steps == 0:
        return np.zeros_like(orders)
    return steps * _BACKENDS[backend](q, sigma, orders)


# ----------------------------------------------------------------------------------------------------
# Conversions
# ----------------------------------------------------------------------------------------------------
def rdp_to_epsilon(orders, rdp, delta: float,
                   conversion: Literal["improved", "classic"] = "improved") -> tuple[float, float]:
    """Smallest ε over ``orders`` such that the RDP curve implies (ε, δ)-DP; returns ``(eps, best_order)``.

    * ``"improved"`` — Lemma A.2 of the MR-MTL paper (Balle et al. 2020, Thm 21; Canonne, Kamath &
      Steinke 2020), the conversion used by Opacus, TF-Privacy and ``dp_accounting``:
      ``ε = min_α ε(α) + log(1/(αδ))/(α−1) + log(1 − 1/α)``.
    * ``"classic"`` — Mironov 2017, Prop. 3: ``ε = min_α ε(α) + log(1/δ)/(α−1)``.

    The improved bound is never larger than the classic one (``log(1−1/α) − log(α)/(α−1) < 0``).
    ε is clipped below at 0 ((ε,δ)-DP with ε < 0 is implied by ε = 0).  Infinite RDP gives ``(inf, nan)``.
    Adjacency is whatever adjacency the RDP curve was computed for.
    """
    orders = _check_orders(orders)
    rdp = np.broadcast_to(as_float_array("rdp", rdp), orders.shape)
    if (rdp < 0).any():
        raise ValueError(f"rdp must be >= 0 (got {rdp[rdp < 0][0]!r})")
    delta = float(check_open_interval("delta", delta, 0.0, 1.0))
    check_choice("conversion", conversion, ("improved", "classic"))
    if conversion == "improved":
        eps = rdp + (np.log(1 / delta) - np.log(orders)) / (orders - 1) + np.log1p(-1 / orders)
    else:
        eps = rdp + np.log(1 / delta) / (orders - 1)
    if not np.isfinite(eps).any():
        return float("inf"), float("nan")
    idx = int(np.nanargmin(np.where(np.isfinite(eps), eps, np.inf)))
    return max(float(eps[idx]), 0.0), float(orders[idx])


def zcdp_to_rdp(rho, orders=DEFAULT_ORDERS) -> np.ndarray:
    """RDP curve of ρ-zCDP: ε(α) = ρα (Bun & Steinke 2016, Def. 1.1).  ``rho`` scalar ≥ 0."""
    orders = _check_orders(orders)
    rho = float(check_nonnegative("rho", rho))
    return rho * orders


def rdp_to_zcdp(orders, rdp) -> float:
    """Smallest ρ with ρα ≥ ε(α) at every listed order, i.e. ``max_α ε(α)/α``.

    This is a ρ-zCDP guarantee only if the curve is bounded by ρα at *all* α > 1, which holds when the
    curve is exactly linear in α (Gaussian mechanism, exponential mechanism, their compositions); for a
    subsampled Gaussian it is only a statement about the listed orders.
    """
    orders = _check_orders(orders)
    rdp = np.broadcast_to(check_nonnegative("rdp", rdp), orders.shape)
    return float(np.max(rdp / orders))


def zcdp_epsilon(rho, delta):
    """(ε, δ)-DP implied by ρ-zCDP: ε = ρ + 2·sqrt(ρ·log(1/δ)) (Bun & Steinke 2016, Prop. 1.3).  Vectorised.

    Examples
    --------
    >>> round(zcdp_epsilon(0.5, 1e-5), 4)
    5.2985
    """
    rho = check_nonnegative("rho", rho)
    delta = check_open_interval("delta", delta, 0.0, 1.0)
    out = rho + 2 * np.sqrt(rho * np.log(1 / delta))
    return out.item() if np.ndim(out) == 0 else out


def zcdp_rho(eps, delta):
    """Largest ρ whose :func:`zcdp_epsilon` is ≤ ``eps``: ρ = (sqrt(log(1/δ) + ε) − sqrt(log(1/δ)))².  Vectorised."""
    eps = check_positive("eps", eps)
    delta = check_open_interval("delta", delta, 0.0, 1.0)
    L = np.log(1 / delta)
    out = (np.sqrt(L + eps) - np.sqrt(L)) ** 2
    return out.item() if np.ndim(out) == 0 else out
