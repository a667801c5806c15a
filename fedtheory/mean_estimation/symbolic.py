"""Sympy derivations of the MR-MTL mean-estimation results (MR-MTL paper, Sec. 6 and App. E).

Every result is *derived* from the generative model and then compared with the expression printed in
the paper by :func:`fedtheory.checks.compare` (a check that can fail):

* the estimators are minimizers: sympy solves the stationarity condition of the MR-MTL objective
  (Lemma 6.1), and of the joint objective (18) for concrete K;
* distributions are derived by variance algebra on independent zero-mean Gaussians
  (:func:`variance_of_linear`: ``Var(Σ c_i Z_i) = Σ c_i² Var(Z_i)``, which sympy applies after
  checking that the expression is linear in the noise variables);
* posteriors are derived with a flat prior by completing the square (:func:`gaussian_posterior`,
  Lemma E.3): the posterior mean is the root of the log-likelihood's derivative and the variance is
  minus the inverse of its second derivative;
* the optimal λ is obtained twice: by matching MR-MTL's weight with the posterior mean's
  (Theorem 6.3's proof) and by minimizing the error E(λ).

Symbols are module constants (positive reals, so simplification may use positivity) with LaTeX names,
so the book shows them as the paper writes them.  :func:`checks` returns every derived-vs-printed
comparison; the names in :data:`EXPECTED_TO_DIFFER` are the paper's typos (the check is *meant* to
fail there and the corrected form is used instead).
"""
from __future__ import annotations

from functools import lru_cache
from typing import Iterable, Mapping

import sympy as sp

from fedtheory.checks import Check, compare

__all__ = [
    "K", "n", "lam", "s", "tau2", "sigma2", "sdp2", "eps", "delta", "c",
    "s_k", "sum_others", "n_k", "sigma2_k", "sdp2_k", "V",
    "variance_of_linear", "gaussian_posterior",
    "local_variance", "lemma_6_1", "lemma_6_1_joint", "lemma_6_2", "theorem_6_3", "error_curve",
    "corollary_6_4", "proposition_6_5", "proposition_6_6", "theorem_6_8", "crossover",
    "heterogeneous", "printed", "checks", "EXPECTED_TO_DIFFER",
]

# --- symbols ---------------------------------------------------------------------------------------
K = sp.Symbol("K", positive=True)
n = sp.Symbol("n", positive=True)
lam = sp.Symbol(r"\lambda", positive=True)
s = sp.Symbol(r"\sigma_{loc}^{2}", positive=True)  # σ_loc²
tau2 = sp.Symbol(r"\tau^{2}", positive=True)
sigma2 = sp.Symbol(r"\sigma^{2}", positive=True)
sdp2 = sp.Symbol(r"\sigma_{DP}^{2}", positive=True)
eps = sp.Symbol(r"\varepsilon", positive=True)
delta = sp.Symbol(r"\delta", positive=True)
c = sp.Symbol("C", positive=True)  # clip norm
# heterogeneous silos (App. E.5)
s_k = sp.Symbol(r"\tilde\sigma_{k}^{2}", positive=True)
# Σ_{j≠k} σ̃_j², the other silos' local variances: one symbol, typeset as the sum it stands for
sum_others = sp.Symbol(r"{\textstyle\sum_{j\ne k}}\tilde\sigma_{j}^{2}", positive=True)
n_k = sp.Symbol("n_k", positive=True)
sigma2_k = sp.Symbol(r"\sigma_{k}^{2}", positive=True)
sdp2_k = sp.Symbol(r"\sigma_{k,DP}^{2}", positive=True)
# observations
w = sp.Symbol("w")
w_hat_k = sp.Symbol(r"\hat w_k")
w_hat_ext = sp.Symbol(r"\hat w_{\setminus k}")
w_bar = sp.Symbol(r"\bar w")
# variance of the other silos' average around w_k, kept as one symbol until the last step of a proof
V = sp.Symbol("V", positive=True)

# Integer-valued symbols get integer test points in compare(); K >= 2.
_DOMAIN = {K: (2, 60), n: (1, 500), n_k: (1, 500)}

# The paper's typos: checks with these names are expected to fail (the chapter shows them failing).
EXPECTED_TO_DIFFER = ("App. E.5 eq. (39) as printed (n for n_k)",)


# --- generic tools ---------------------------------------------------------------------------------
def variance_of_linear(expr: sp.Expr, variances: Mapping[sp.Symbol, sp.Expr]) -> sp.Expr:
    """Variance of ``expr``, a linear form in independent zero-mean Gaussians (the keys of ``variances``).

    ``Var(a + Σ_i c_i Z_i) = Σ_i c_i² Var(Z_i)`` for independent ``Z_i``.  Raises ``ValueError`` if
    ``expr`` is not linear in the noise variables (then the rule does not apply).
    """
    expr = sp.expand(expr)
    zs = list(variances)
    poly = sp.Poly(expr, *zs)
    if poly.total_degree() > 1:
        raise ValueError(f"expr must be linear in {zs} (got degree {poly.total_degree()})")
    return sp.simplify(sum(expr.coeff(z) ** 2 * v for z, v in variances.items()))


def gaussian_posterior(param: sp.Symbol, observations: Iterable[tuple[sp.Expr, sp.Expr]]):
    """Posterior (mean, variance) of ``param`` under a flat prior from independent Gaussian observations.

    ``observations`` are pairs ``(value, variance)`` meaning ``value = param + N(0, variance)``.  The
    log-posterior is ``-Σ (value - param)²/(2 variance)`` (up to a constant); its root gives the mean and
    ``-1/(second derivative)`` the variance.  This is Lemma E.3 (inverse-variance weighting).
    """
    logp = -sum((v - param) ** 2 / (2 * var) for v, var in observations)
    (mean,) = sp.solve(sp.diff(logp, param), param)
    var = sp.simplify(-1 / sp.diff(logp, param, 2))
    return sp.simplify(mean), var


def _coeff(expr: sp.Expr, sym: sp.Symbol) -> sp.Expr:
    return sp.simplify(sp.expand(expr).coeff(sym))


# --- printed forms (typed from the paper; these are what the derivations are compared with) -------
def printed() -> dict[str, sp.Expr]:
    """The expressions as printed in the paper (Sec. 6 and App. E), keyed by result."""
    V_paper = (K * tau2 + s) / (K - 1)
    sw2 = 1 / (1 / s + (K - 1) / (K * tau2 + s))
    Sh = (K - 1) * K * tau2 + sum_others
    sbar2 = 1 / (1 / s_k + (K - 1) ** 2 / Sh)
    return {
        "eq5_local_variance": sigma2 / n + sdp2 / n**2,
        "L6.1_alpha": (K + lam) / ((1 + lam) * K),
        "L6.1_minimizer": 1 / (1 + lam) * w_hat_k + lam / (1 + lam) * w_bar,
        "L6.2_V": V_paper,
        "L6.2_sigma_w2": sw2,
        "L6.2_mu": sw2 * (w_hat_k / s + (K - 1) / (K * tau2 + s) * w_hat_ext),
        "T6.3_lambda_star": s / tau2,
        "T6.3_lambda_star_expanded": (sigma2 + sdp2 / n) / (n * tau2),
        "C6.4_E_star": s * (s + K * tau2) / (K * (s + tau2)),
        "P6.5_gap_local": (1 - 1 / K) * s**2 / (s + tau2),
        "P6.6_E_fed": (s + (K - 1) * tau2) / K,
        "P6.6_gap_fed": (1 - 1 / K) * tau2**2 / (s + tau2),
        "L6.7_E": (1 - 1 / K) * (s + lam**2 * tau2) / (lam + 1) ** 2 + s / K,
        "T6.8_dp_cost": (1 - 1 / K) / (lam + 1) ** 2 * sdp2 / n**2 + sdp2 / (K * n**2),
        "E_loc_minus_E_fed": (1 - 1 / K) * (s - tau2),  # not printed: stated in the text around Prop. 6.6
        "crossover_epsilon": c * sp.sqrt(2 * sp.log(sp.Rational(5, 4) / delta)) / (n * sp.sqrt(tau2 - sigma2 / n)),
        "E5_eq39_local_variance": sigma2_k / n + sdp2_k / n**2,  # as printed (typo: n for n_k)
        "E5_eq39_corrected": sigma2_k / n_k + sdp2_k / n_k**2,
        "E5_V_k": K * tau2 / (K - 1) + sum_others / (K - 1) ** 2,
        "E4_sigma_bar2": sbar2,
        "E4_mu_bar": sbar2 / s_k * w_hat_k + (K - 1) ** 2 * sbar2 / Sh * w_hat_ext,
        "E5_lambda_star": s_k / (tau2 + (sum_others / (K - 1) - s_k) / K),
        "E5_lambda_star_expanded": K * (K - 1) * s_k / (K * (K - 1) * tau2 + sum_others - (K - 1) * s_k),
    }


# --- derivations -----------------------------------------------------------------------------------
@lru_cache(maxsize=None)
def local_variance() -> dict[str, sp.Expr]:
    """Eq. (5): ``Var(ŵ_k - w_k)`` for ``ŵ_k = (ζ_k + Σ_i x_{k,i})/n``; also the E.5 version with n_k.

    ``Σ_i (x_{k,i} - w_k)`` is a sum of n independent ``N(0, σ²)`` (variance ``Σ_{i=1}^n σ²``, summed by
    sympy) and ``ζ_k ~ N(0, σ_DP²)`` is independent of it.
    """
    i = sp.Symbol("i", integer=True, positive=True)
    Z, Xi = sp.symbols("Z_sum Xi")
    out = {}
    for key, nn, v, vdp in (("homogeneous", n, sigma2, sdp2), ("heterogeneous", n_k, sigma2_k, sdp2_k)):
        var_sum = sp.summation(v, (i, 1, nn))
        out[key] = variance_of_linear((Z + Xi) / nn, {Z: var_sum, Xi: vdp})
        out[f"{key}_data_sum_variance"] = var_sum  # Var Σ_i (x_{k,i} - w_k), summed by sympy
    return out


@lru_cache(maxsize=None)
def lemma_6_1() -> dict[str, sp.Expr]:
    """Lemma 6.1: minimizer of ``h_k(w) = ½(w - ŵ_k)² + λ/2 (w - w̄)²`` and the weight a.

    sympy solves ``h_k'(w) = 0``; substituting ``w̄ = (ŵ_k + (K-1) ŵ_{\\k})/K`` and collecting the
    coefficient of ``ŵ_k`` gives a (the coefficient of ``ŵ_{\\k}`` is checked to be ``1 - a``).
    """
    h = sp.Rational(1, 2) * (w - w_hat_k) ** 2 + lam / 2 * (w - w_bar) ** 2
    (w_star,) = sp.solve(sp.diff(h, w), w)
    second = sp.diff(h, w, 2)
    in_split = sp.expand(w_star.subs(w_bar, (w_hat_k + (K - 1) * w_hat_ext) / K))
    a = _coeff(in_split, w_hat_k)
    return {"objective": h, "stationarity": sp.expand(sp.diff(h, w)), "minimizer": sp.simplify(w_star),
            "second_derivative": second,
            "alpha": sp.factor(a), "one_minus_alpha": _coeff(in_split, w_hat_ext),
            "minimizer_split": in_split,
            "minimizer_collected": sp.collect(in_split, [w_hat_k, w_hat_ext], sp.factor)}


@lru_cache(maxsize=None)
def lemma_6_1_joint(K_value: int = 4) -> dict[str, sp.Expr]:
    """Lemma 6.1 from the joint objective (18) for a concrete ``K_value``.

    Minimizes ``(1/K) Σ_k [½(w_k - ŵ_k)² + λ/2 (w_k - w̄)²]`` with ``w̄ = mean(w)`` over all ``w_k`` at
    once (sympy solves the linear gradient system) and returns silo 1's minimizer and the printed
    ``a ŵ_1 + (1 - a) ŵ_{\\1}`` at that K.
    """
    ws = sp.symbols(f"w_1:{K_value + 1}")
    wh = sp.symbols(rf"\hat{{w}}_1:{K_value + 1}")
    wb = sum(ws) / K_value
    obj = sum(sp.Rational(1, 2) * (ws[k] - wh[k]) ** 2 + lam / 2 * (ws[k] - wb) ** 2
              for k in range(K_value)) / K_value
    sol = sp.solve([sp.diff(obj, v) for v in ws], ws, dict=True)[0]
    a = printed()["L6.1_alpha"].subs(K, K_value)
    ext = sum(wh[1:]) / (K_value - 1)
    return {"derived": sp.simplify(sol[ws[0]]), "printed": a * wh[0] + (1 - a) * ext}


@lru_cache(maxsize=None)
def lemma_6_2() -> dict[str, sp.Expr]:
    """Lemma 6.2: posterior of ``w_k`` given ``ŵ_k`` and ``ŵ_{\\k}`` (flat prior, Lemma E.3).

    Observation models derived by variance algebra: ``ŵ_k - w_k = ẑ_k`` with ``Var = σ_loc²``; with
    ``w_j = θ + u_j`` (``u_j ~ N(0, τ²)``), ``ŵ_{\\k} - w_k = (Σ_{j≠k} u_j + Σ_{j≠k} ẑ_j)/(K-1) - u_k``,
    where ``Σ_{j≠k} u_j ~ N(0, (K-1)τ²)`` and ``Σ_{j≠k} ẑ_j ~ N(0, (K-1)σ_loc²)``.
    """
    U, A, B = sp.symbols("u_k A B")
    Vd = variance_of_linear((A + B) / (K - 1) - U, {U: tau2, A: (K - 1) * tau2, B: (K - 1) * s})
    post = _posterior_in_V(s)
    mu = sp.simplify(post["mu_in_V"].subs(V, Vd))
    var = sp.factor(post["var_in_V"].subs(V, Vd))
    return {"V": sp.factor(Vd), "sigma_w2": var, "mu": mu,
            "mu_weight_local": _coeff(mu, w_hat_k), "mu_weight_ext": _coeff(mu, w_hat_ext),
            "log_posterior": post["log_posterior"], "mu_in_V": post["mu_in_V"], "sigma_w2_in_V": post["var_in_V"],
            "weight_local_in_V": post["weight_local_in_V"]}


def _posterior_in_V(own_variance: sp.Expr) -> dict[str, sp.Expr]:
    """Lemma E.3 for ``ŵ_k = w_k + N(0, own_variance)`` and ``ŵ_{\\k} = w_k + N(0, V)`` with ``V`` a symbol."""
    wk = sp.Symbol("w_k")
    obs = [(w_hat_k, own_variance), (w_hat_ext, V)]
    mu, var = gaussian_posterior(wk, obs)
    return {"log_posterior": -sum((v - wk) ** 2 / (2 * vv) for v, vv in obs), "mu_in_V": sp.factor(mu),
            "var_in_V": sp.factor(var), "weight_local_in_V": sp.factor(_coeff(mu, w_hat_k))}


@lru_cache(maxsize=None)
def lambda_star_in_V() -> dict[str, sp.Expr]:
    """λ* in terms of the external variance ``V``: solve ``a(λ) = V/(σ_loc² + V)`` (the posterior weight on ``ŵ_k``).

    Both Theorem 6.3 (``V`` of Lemma 6.2) and Theorem E.5 (``V_k``, with ``σ̃_k²`` for ``σ_loc²``) substitute
    into this one root.
    """
    a = lemma_6_1()["alpha"]
    w_post = _posterior_in_V(s)["weight_local_in_V"]
    (root,) = sp.solve(sp.Eq(a, w_post), lam)
    return {"equation": sp.Eq(a, w_post), "lambda_star": sp.factor(root)}


@lru_cache(maxsize=None)
def error_curve() -> dict[str, sp.Expr]:
    """Lemma 6.7: ``E(λ) = E[(w_k - ŵ_k(λ))²]`` with ``ŵ_k(λ) = a ŵ_k + (1-a) ŵ_{\\k}``.

    ``w_k - ŵ_k(λ) = -a e_1 - (1-a) e_2`` with independent ``e_1 ~ N(0, σ_loc²)`` (the silo's own noise)
    and ``e_2 ~ N(0, V)`` (centres and noise of the other silos): averaged over the model.
    """
    a = lemma_6_1()["alpha"]
    Vd = lemma_6_2()["V"]
    e1, e2, A = sp.symbols("e_1 e_2 a")
    in_a = variance_of_linear(-A * e1 - (1 - A) * e2, {e1: s, e2: V})  # a² σ_loc² + (1 - a)² V
    E = in_a.subs({A: a, V: Vd})
    dE = sp.factor(sp.diff(E, lam))
    return {"E_in_a": in_a, "E": sp.factor(E), "dE_dlambda": dE, "E_local": sp.simplify(E.subs(lam, 0)),
            "E_fedavg": sp.factor(sp.limit(E, lam, sp.oo))}


@lru_cache(maxsize=None)
def theorem_6_3() -> dict[str, sp.Expr]:
    """Theorem 6.3: λ* twice, by matching the weight a(λ) (the paper's α) with the posterior weight and by minimizing E(λ)."""
    a = lemma_6_1()["alpha"]
    post = lemma_6_2()
    match = sp.solve(sp.Eq(a, post["mu_weight_local"]), lam)
    crit = sp.solve(sp.numer(sp.together(error_curve()["dE_dlambda"])), lam)
    crit = [r for r in crit if r.is_positive is not False]
    if len(match) != 1 or len(crit) != 1:
        raise ArithmeticError(f"expected one λ*, got {match} (matching) and {crit} (stationary points)")
    lam_star = match[0]
    via_V = sp.simplify(lambda_star_in_V()["lambda_star"].subs(V, post["V"]))
    # the ŵ_{\k} weight then matches too, so ŵ_k(λ*) is the posterior mean μ_k
    ext_residual = sp.simplify((1 - a).subs(lam, lam_star) - post["mu_weight_ext"])
    return {"by_matching": sp.simplify(lam_star), "by_minimizing": sp.simplify(crit[0]), "via_V": via_V,
            "ext_weight_residual": ext_residual,
            "expanded": sp.simplify(lam_star.subs(s, local_variance()["homogeneous"]))}


@lru_cache(maxsize=None)
def corollary_6_4() -> dict[str, sp.Expr]:
    """Corollary 6.4: ``E* = E(λ*)``, which equals the posterior variance σ_w²."""
    E_star = sp.factor(error_curve()["E"].subs(lam, theorem_6_3()["by_matching"]))
    return {"E_star": E_star, "sigma_w2": lemma_6_2()["sigma_w2"]}


@lru_cache(maxsize=None)
def proposition_6_5() -> dict[str, sp.Expr]:
    """Proposition 6.5: ``Δ_loc = E(0) - E*``."""
    return {"gap_local": sp.factor(error_curve()["E_local"] - corollary_6_4()["E_star"])}


@lru_cache(maxsize=None)
def proposition_6_6() -> dict[str, sp.Expr]:
    """Proposition 6.6: ``Δ_fed = E(∞) - E*``; also ``E_loc - E_fed`` (not printed in the paper)."""
    ec = error_curve()
    return {"E_fed": ec["E_fedavg"], "gap_fed": sp.factor(ec["E_fedavg"] - corollary_6_4()["E_star"]),
            "local_minus_fed": sp.factor(ec["E_local"] - ec["E_fedavg"])}


@lru_cache(maxsize=None)
def theorem_6_8() -> dict[str, sp.Expr]:
    """Theorem 6.8: ``Δ_DP(λ) = E(λ)|_{σ_loc²=σ²/n+σ_DP²/n²} - E(λ)|_{σ_loc²=σ²/n}`` and its range."""
    E = error_curve()["E"]
    private = local_variance()["homogeneous"]
    gap = sp.factor(E.subs(s, private) - E.subs(s, private.subs(sdp2, 0)))
    at0 = sp.simplify(gap.subs(lam, 0))
    at_inf = sp.simplify(sp.limit(gap, lam, sp.oo))
    return {"dp_cost": gap, "at_local": at0, "at_fedavg": at_inf, "ratio": sp.simplify(at0 / at_inf)}


@lru_cache(maxsize=None)
def crossover() -> dict[str, sp.Expr]:
    """Local training and FedAvg tie where ``σ_loc²(ε) = τ²`` (classic Gaussian calibration); solved for ε."""
    sdp2_eps = (c * sp.sqrt(2 * sp.log(sp.Rational(5, 4) / delta)) / eps) ** 2
    s_eps = local_variance()["homogeneous"].subs(sdp2, sdp2_eps)
    roots = [r for r in sp.solve(sp.Eq(s_eps, tau2), eps) if r.could_extract_minus_sign() is False]
    return {"sigma_loc2_of_eps": s_eps, "epsilon_cross": sp.simplify(roots[0]) if roots else None,
            "roots": roots}


@lru_cache(maxsize=None)
def heterogeneous() -> dict[str, sp.Expr]:
    """App. E.5: silo k with local variance σ̃_k², the others' sum sum_others = Σ_{j≠k} σ̃_j².

    ``ŵ_{\\k} - w_k = (Σ_{j≠k} u_j + Σ_{j≠k} ẑ_j)/(K-1) - u_k`` with ``Var(Σ_{j≠k} ẑ_j) = sum_others``; the
    posterior (Lemma E.4), λ*_k by matching (Theorem E.5), the per-silo error curve E_k(λ) (not printed
    in the paper) and its stationary point.
    """
    U, A, B = sp.symbols("u_k A B")
    Vk = variance_of_linear((A + B) / (K - 1) - U, {U: tau2, A: (K - 1) * tau2, B: sum_others})
    post = _posterior_in_V(s_k)
    mu, var = sp.simplify(post["mu_in_V"].subs(V, Vk)), post["var_in_V"].subs(V, Vk)
    a = lemma_6_1()["alpha"]
    (lam_star,) = sp.solve(sp.Eq(a, _coeff(mu, w_hat_k)), lam)
    in_V = lambda_star_in_V()["lambda_star"].subs(s, s_k)
    e1, e2 = sp.symbols("e_1 e_2")
    E = variance_of_linear(-a * e1 - (1 - a) * e2, {e1: s_k, e2: Vk})
    crit = sp.solve(sp.numer(sp.together(sp.diff(E, lam))), lam)
    return {"V_k": sp.factor(Vk), "sigma_bar2": sp.factor(var), "mu_bar": mu,
            "sigma_bar2_in_V": post["var_in_V"], "mu_bar_in_V": post["mu_in_V"], "lambda_star_in_V": in_V,
            "lambda_star_via_V": sp.factor(in_V.subs(V, Vk)), "fedavg_condition": sp.factor((K - 1) * Vk - s_k),
            "lambda_star": sp.factor(lam_star), "E_k": sp.factor(E),
            "E_k_stationary": [sp.factor(r) for r in crit],
            "E_k_at_lambda_star": sp.factor(E.subs(lam, lam_star)),
            "homogeneous_limit": sp.simplify(lam_star.subs(sum_others, (K - 1) * s_k).subs(s_k, s))}


# --- the checks ------------------------------------------------------------------------------------
def checks() -> list[Check]:
    """Every derived-vs-printed comparison of Sec. 6 and App. E (in the paper's order).

    All hold except the names in :data:`EXPECTED_TO_DIFFER` (the paper's typos).
    """
    p = printed()
    l61, l62, ec = lemma_6_1(), lemma_6_2(), error_curve()
    t63, c64, t68, het = theorem_6_3(), corollary_6_4(), theorem_6_8(), heterogeneous()
    joint = {kv: lemma_6_1_joint(kv) for kv in (3, 4)}
    lv = local_variance()
    kw = {"domain": _DOMAIN}
    out = [
        compare("Eq. (5) σ_loc²", lv["homogeneous"], p["eq5_local_variance"], **kw),
        compare("Lemma 6.1 minimizer", l61["minimizer"], p["L6.1_minimizer"], **kw),
        compare("Lemma 6.1 weight a", l61["alpha"], p["L6.1_alpha"], **kw),
        compare("Lemma 6.1 weight on ŵ₋ₖ is 1 − a", l61["one_minus_alpha"], 1 - p["L6.1_alpha"], **kw),
        compare("Lemma 6.1 via joint objective (18), K = 3", joint[3]["derived"], joint[3]["printed"]),
        compare("Lemma 6.1 via joint objective (18), K = 4", joint[4]["derived"], joint[4]["printed"]),
        compare("Lemma 6.2 Var(ŵ₋ₖ − w_k) (eqs. 29-30)", l62["V"], p["L6.2_V"], **kw),
        compare("Lemma 6.2 σ_w²", l62["sigma_w2"], p["L6.2_sigma_w2"], **kw),
        compare("Lemma 6.2 μ_k", l62["mu"], p["L6.2_mu"], **kw),
        compare("Theorem 6.3 λ* (matching a with the posterior)", t63["by_matching"], p["T6.3_lambda_star"], **kw),
        compare("Theorem 6.3 λ* (minimizing E(λ))", t63["by_minimizing"], p["T6.3_lambda_star"], **kw),
        compare("Theorem 6.3 λ* via λ*(V) with V of Lemma 6.2", t63["via_V"], p["T6.3_lambda_star"], **kw),
        compare("Theorem 6.3 λ* = (σ² + σ_DP²/n)/(nτ²)", t63["expanded"], p["T6.3_lambda_star_expanded"], **kw),
        compare("Corollary 6.4 E* = E(λ*)", c64["E_star"], p["C6.4_E_star"], **kw),
        compare("Corollary 6.4 E* = σ_w²", c64["sigma_w2"], p["C6.4_E_star"], **kw),
        compare("Proposition 6.5 Δ_loc", proposition_6_5()["gap_local"], p["P6.5_gap_local"], **kw),
        compare("Proposition 6.6 E_fed = E(∞)", ec["E_fedavg"], p["P6.6_E_fed"], **kw),
        compare("Proposition 6.6 Δ_fed", proposition_6_6()["gap_fed"], p["P6.6_gap_fed"], **kw),
        compare("Lemma 6.7 E(λ)", ec["E"], p["L6.7_E"], **kw),
        compare("Theorem 6.8 Δ_DP(λ)", t68["dp_cost"], p["T6.8_dp_cost"], **kw),
        compare("Theorem 6.8 Δ_DP(0)/Δ_DP(∞) = K", t68["ratio"], K, **kw),
        compare("E_loc − E_fed = (1 − 1/K)(σ_loc² − τ²) (not printed)", proposition_6_6()["local_minus_fed"],
                p["E_loc_minus_E_fed"], **kw),
        compare("crossover ε× where E_loc = E_fed (not printed)", crossover()["epsilon_cross"],
                p["crossover_epsilon"], domain={**_DOMAIN, sigma2: (1, 3), tau2: (4, 9), delta: (1, 1)},
                note="checked with τ² > σ²/n, the case where a crossover exists"),
        compare("App. E.5 eq. (39) as printed (n for n_k)", lv["heterogeneous"], p["E5_eq39_local_variance"],
                note="typo: the silo-specific n_k is meant", **kw),
        compare("App. E.5 eq. (39) corrected (n_k)", lv["heterogeneous"], p["E5_eq39_corrected"], **kw),
        compare("App. E.5 Var(ŵ₋ₖ − w_k) (eqs. 40-43)", het["V_k"], p["E5_V_k"], **kw),
        compare("Lemma E.4 σ̄_k²", het["sigma_bar2"], p["E4_sigma_bar2"], **kw),
        compare("Lemma E.4 μ̄_k", het["mu_bar"], p["E4_mu_bar"], **kw),
        compare("Theorem E.5 λ*_k (eq. 47, first form)", het["lambda_star"], p["E5_lambda_star"], **kw),
        compare("Theorem E.5 λ*_k via λ*(V) with V_k", het["lambda_star_via_V"], p["E5_lambda_star"], **kw),
        compare("Theorem E.5 λ*_k (eq. 47, second form)", het["lambda_star"], p["E5_lambda_star_expanded"], **kw),
        compare("Theorem E.5 reduces to Theorem 6.3 (all σ̃_j² equal)", het["homogeneous_limit"],
                p["T6.3_lambda_star"], **kw),
        compare("E_k(λ) is minimal at λ*_k (not printed)", het["E_k_stationary"][0] if len(het["E_k_stationary"]) == 1
                else sp.nan, p["E5_lambda_star_expanded"], **kw),
        compare("E_k(λ*_k) = σ̄_k² (not printed)", het["E_k_at_lambda_star"], p["E4_sigma_bar2"], **kw),
    ]
    return out
