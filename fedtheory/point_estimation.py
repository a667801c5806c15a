"""FedHDP for federated point estimation (Appendix B): the opt-out special case in one dimension.

Setting: ``F_j = [1, …, 1]ᵀ`` (so ``d = 1``), ``N`` clients of which ``N_np = ρ_np N`` opt out of
privacy (κ_1² = 0) and ``N_p = (1 − ρ_np)N`` are private, each adding ``N(0, N_pκ²)`` to its
update.  ``σ_c² = ξ² + τ²``, ``Υ² = τ²/ξ²``, ``Γ² = N_pκ²/ξ²``.  ``ρ_np N`` need not be an integer
in these formulas (they are rational functions of the counts).

Numeric functions (vectorized, validated):

* :func:`optimal_ratio` — r* (Lemma 6); :func:`server_error` — σ_s²(r);
  :func:`optimal_server_error` — eq. 78;
* :func:`hdp_fedavg_server_error`, :func:`dp_fedavg_server_error` — the two baselines of Lemma 7,
  whose variances the paper leaves implicit (derived here: HDP-FedAvg is the uniform average with
  noise only on private clients; DP-FedAvg makes *all* N clients add ``N(0, N_pκ²)``);
* :func:`server_gaps` — Lemma 7's three gaps (eqs. 79-81);
* :func:`optimal_lambda_nonprivate` (eq. 82) and :func:`optimal_lambda_private` (eq. 83).

:func:`checks` derives Lemma 6, Lemma 7, Theorem 8 and Table 4 from the linear-regression
derivation (:mod:`fedtheory.linear_regression.symbolic`) and compares them with the printed forms.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from fedtheory.validation import (as_float_array, check_integer_at_least, check_nonnegative,
                                   check_positive)

__all__ = [
    "optimal_ratio", "server_error", "optimal_server_error", "hdp_fedavg_server_error",
    "dp_fedavg_server_error", "ServerGaps", "server_gaps", "optimal_lambda_nonprivate",
    "optimal_lambda_private", "derivation", "checks",
]


def _out(x):
    x = np.asarray(x, dtype=float)
    return x.item() if x.ndim == 0 else x


def _params(N, rho_np, alpha2, tau2, gamma2):
    N = check_integer_at_least("N", N, 1).astype(float)
    rho = as_float_array("rho_np", rho_np)
    if np.any((rho < 0) | (rho > 1)):
        raise ValueError(f"rho_np must lie in [0, 1] (got {rho_np!r})")
    alpha2 = check_positive("alpha2", alpha2)
    tau2 = check_nonnegative("tau2", tau2)
    gamma2 = check_nonnegative("gamma2", gamma2)
    return N, rho, alpha2, tau2, gamma2, alpha2 + tau2, rho * N, (1 - rho) * N


def optimal_ratio(N, rho_np, alpha2, tau2, gamma2):
    """Lemma 6: ``r* = σ_c²/(σ_c² + N_pκ²)`` (≤ 1: private updates count less)."""
    *_, sc, Nnp, Np = _params(N, rho_np, alpha2, tau2, gamma2)
    return _out(sc / (sc + Np * np.asarray(gamma2, float)))


def server_error(r, N, rho_np, alpha2, tau2, gamma2):
    """σ_s²(r) = (N_np σ_c² + N_p r²(σ_c² + N_pκ²))/(N_np + N_p r)² (Fig. 3's curves)."""
    r = check_nonnegative("r", r)
    N, rho, a2, t2, g2, sc, Nnp, Np = _params(N, rho_np, alpha2, tau2, gamma2)
    W = Nnp + Np * r
    if np.any(W == 0):
        raise ValueError("r must be > 0 when rho_np = 0")
    return _out((Nnp * sc + Np * r**2 * (sc + Np * g2)) / W**2)


def optimal_server_error(N, rho_np, alpha2, tau2, gamma2):
    """Eq. 78: ``σ²_s,opt = σ_c²(σ_c² + N_pκ²)/(N(σ_c² + ρ_np N_pκ²))``."""
    N, rho, a2, t2, g2, sc, Nnp, Np = _params(N, rho_np, alpha2, tau2, gamma2)
    return _out(sc * (sc + Np * g2) / (N * (sc + rho * Np * g2)))


def hdp_fedavg_server_error(N, rho_np, alpha2, tau2, gamma2):
    """HDP-FedAvg (r = 1): ``σ_c²/N + (1-ρ_np)²κ²`` (derived; implicit in Lemma 7)."""
    N, rho, a2, t2, g2, sc, Nnp, Np = _params(N, rho_np, alpha2, tau2, gamma2)
    return _out(sc / N + (1 - rho)**2 * g2)


def dp_fedavg_server_error(N, rho_np, alpha2, tau2, gamma2):
    """DP-FedAvg, every client private with noise ``N(0, N_pκ²)``: ``σ_c²/N + (1-ρ_np)κ²`` (derived;
    implicit in Lemma 7).  Under Algorithm 2's calibration (noise std zS/N_g on each group average)
    this baseline would coincide with HDP-FedAvg instead; Lemma 7 uses the per-client convention."""
    N, rho, a2, t2, g2, sc, Nnp, Np = _params(N, rho_np, alpha2, tau2, gamma2)
    return _out(sc / N + (1 - rho) * g2)


class ServerGaps(NamedTuple):
    """Lemma 7 (eqs. 79-81): gaps between the baselines' server errors and FedHDP's."""

    hdp_minus_opt: float | np.ndarray
    dp_minus_opt: float | np.ndarray
    dp_minus_hdp: float | np.ndarray

    def _repr_markdown_(self) -> str:
        """A small table for notebooks (instead of the raw ``ServerGaps(...)`` dump)."""
        rows = [("HDP-FedAvg − FedHDP", "(79)", self.hdp_minus_opt),
                ("DP-FedAvg − FedHDP", "(80)", self.dp_minus_opt),
                ("DP-FedAvg − HDP-FedAvg", "(81)", self.dp_minus_hdp)]
        lines = ["| server-error gap (Lemma 7) | eq. | value |", "|---|---|---|"]
        for name, eq, value in rows:
            text = f"{float(value):.4g}" if np.ndim(value) == 0 else np.array2string(np.asarray(value), precision=4)
            lines.append(f"| {name} | {eq} | {text} |")
        return "\n".join(lines)


def server_gaps(N, rho_np, alpha2, tau2, gamma2) -> ServerGaps:
    """Lemma 7's gaps between the baselines' server errors and FedHDP's (all ≥ 0)."""
    opt = optimal_server_error(N, rho_np, alpha2, tau2, gamma2)
    hdp = hdp_fedavg_server_error(N, rho_np, alpha2, tau2, gamma2)
    dp = dp_fedavg_server_error(N, rho_np, alpha2, tau2, gamma2)
    return ServerGaps(_out(np.subtract(hdp, opt)), _out(np.subtract(dp, opt)), _out(np.subtract(dp, hdp)))


def optimal_lambda_nonprivate(alpha2, tau2):
    """Eq. 82: ``λ*_np = 1/Υ² = ξ²/τ²`` (``np.inf`` at τ² = 0: use the global model, FedAvg)."""
    a2 = check_positive("alpha2", alpha2)
    t2 = check_nonnegative("tau2", tau2)
    with np.errstate(divide="ignore"):
        return _out(np.where(t2 > 0, a2 / np.where(t2 > 0, t2, 1.0), np.inf))


def optimal_lambda_private(N, rho_np, alpha2, tau2, gamma2):
    """Eq. 83: ``λ*_p = (N + NΥ² + (N-N_p)Γ²)/(NΥ²(Υ²+1) + (N-N_p+1)Υ²Γ² + Γ²)``; Table 4's
    homogeneous-data, homogeneous-privacy cell is ``ξ²/κ²`` (printed as ``1/γ²``, the book's ``1/κ²``)."""
    N, rho, a2, t2, g2, sc, Nnp, Np = _params(N, rho_np, alpha2, tau2, gamma2)
    if np.any(Np <= 0):
        raise ValueError("rho_np must be < 1 for a private client to exist")
    U, G = t2 / a2, Np * g2 / a2
    num = N + N * U + (N - Np) * G
    den = N * U * (U + 1) + (N - Np + 1) * U * G + G
    with np.errstate(divide="ignore", invalid="ignore"):
        return _out(np.where(den > 0, num / np.where(den > 0, den, 1.0), np.inf))


# ---------------------------------------------------------------------------------------------
def derivation() -> dict:
    """Appendix B derived from the linear-regression derivation (:mod:`fedtheory.linear_regression.symbolic`).

    The opt-out setting (``κ_1² = 0``, ``κ_2² = κ²``) with ``N_1 = ρ_np N`` and ``N_2 = (1-ρ_np)N``, substituted
    into Lemma 2's and Lemma 3's derived forms.  Keys: ``"r*"`` and ``"(78)"`` (Lemma 6), ``"hdp"`` and ``"dp"``
    (the two baselines' server errors, derived from the model: HDP-FedAvg is the ``r = 1`` average; in DP-FedAvg
    all ``N`` clients add ``N(0, N_pκ²)``), ``"(79)"``, ``"(80)"``, ``"(81)"`` (their differences, Lemma 7),
    ``"(82)"`` and ``"(83)"`` (λ* of each group, Theorem 8), and ``"symbols"`` (``N``, ``ρ_np``, ``κ²``).
    """
    import sympy as sp

    from fedtheory.linear_regression import symbolic as S
    from fedtheory.linear_regression._gaussian import source, var

    Nn, rho = sp.symbols("N rho_np", positive=True)
    g = S.kappa2
    sc = S.alpha2 + S.tau2
    Np = (1 - rho) * Nn
    opt_out = {S.gamma1_2: 0, S.gamma2_2: g}
    split = {S.N1: rho * Nn, S.N2: Np}
    spec = lambda e: sp.factor(e.subs(opt_out).subs(split, simultaneous=True))  # noqa: E731
    srv = S.server()
    hdp = spec(srv.V.subs(S.r, 1))
    dp = sp.factor(var(source("G") / Nn, {"G": Nn * (sc + Np * g)}))
    s_opt = spec(srv.V_at_rmin)
    return {
        "r*": spec(srv.r_min), "(78)": s_opt, "hdp": hdp, "dp": dp,
        "(79)": sp.factor(hdp - s_opt), "(80)": sp.factor(dp - s_opt), "(81)": sp.factor(dp - hdp),
        "(82)": spec(S.optimal_lambda_symbolic(1)), "(83)": spec(S.optimal_lambda_symbolic(2)),
        "symbols": {"N": Nn, "rho_np": rho, "kappa2": g},
    }


def checks():
    """Appendix B derived (:func:`derivation`), compared with the printed forms.

    Returns a list of :class:`fedtheory.checks.Check`; the Table 4 row printed ``1/γ²`` (the book's ``1/κ²``)
    fails (the correct value is ``ξ²/κ²``).
    """
    import sympy as sp

    from fedtheory.checks import compare
    from fedtheory.linear_regression import symbolic as S

    D = derivation()
    Nn, rho, g = D["symbols"]["N"], D["symbols"]["rho_np"], D["symbols"]["kappa2"]
    a2, t2 = S.alpha2, S.tau2
    sc = a2 + t2
    Np = (1 - rho) * Nn
    r_star, s_opt, hdp, dp = D["r*"], D["(78)"], D["hdp"], D["dp"]
    U, G = t2 / a2, Np * g / a2
    den7 = sc + rho * (1 - rho) * g * Nn
    printed = {
        "r*": sc / (sc + Np * g),
        "(78)": (sc * (sc + Np * g) / (sc + rho * Np * g)) / Nn,
        "(79)": rho * (1 - rho)**3 * g**2 * Nn / den7,
        "(80)": (rho * (1 - rho) * sc * g + rho * (1 - rho)**2 * g**2 * Nn) / den7,
        "(81)": (rho * (1 - rho) * sc * g + rho**2 * (1 - rho)**2 * g**2 * Nn) / den7,
        "(82)": 1 / U,
        "(83)": (Nn + Nn * U + (Nn - Np) * G) / (Nn * U * (U + 1) + (Nn - Np + 1) * U * G + G),
    }
    lam_np, lam_p = D["(82)"], D["(83)"]
    out = [
        compare("Lemma 6: r*", r_star, printed["r*"]),
        compare("Lemma 6: σ²_s,opt (78)", s_opt, printed["(78)"]),
        compare("HDP-FedAvg server error (implicit) = σ_c²/N + (1-ρ)²κ²", hdp, sc / Nn + (1 - rho)**2 * g),
        compare("DP-FedAvg server error (implicit) = σ_c²/N + (1-ρ)κ²", dp, sc / Nn + (1 - rho) * g),
        compare("Lemma 7 (79): HDP-FedAvg − FedHDP", hdp - s_opt, printed["(79)"]),
        compare("Lemma 7 (80): DP-FedAvg − FedHDP", dp - s_opt, printed["(80)"]),
        compare("Lemma 7 (81): DP-FedAvg − HDP-FedAvg", dp - hdp, printed["(81)"]),
        compare("Lemma 7 (81) simplifies to ρ(1-ρ)κ²", printed["(81)"], rho * (1 - rho) * g),
        compare("Theorem 8 (82): λ*_np", lam_np, printed["(82)"]),
        compare("Theorem 8 (83): λ*_p", lam_p, printed["(83)"]),
    ]
    # Table 4 (point estimation): special cases of (82)/(83)
    lam_p_homog_priv = sp.factor(lam_p.subs(rho, 0))
    out += [
        compare("Table 4, homogeneous data, no privacy: 1/λ*_np → 0 (FedAvg, λ* = ∞)",
                sp.limit(1 / lam_np, t2, 0), 0),
        compare("Table 4, heterogeneous data, no privacy: λ*_np (FedAvg+Ditto)", lam_np, a2 / t2),
        compare("Table 4, heterogeneous data, homogeneous privacy: λ*_p (DP-FedAvg+Ditto)",
                lam_p_homog_priv, Nn * a2 / (Nn * t2 + Nn * g)),
        compare("Table 4, homogeneous data, homogeneous privacy: λ*_p as printed",
                lam_p_homog_priv.subs(t2, 0), 1 / g, note="typo: should be ξ²/κ²"),
        compare("Table 4, homogeneous data, homogeneous privacy: λ*_p corrected",
                lam_p_homog_priv.subs(t2, 0), a2 / g),
    ]
    return out
