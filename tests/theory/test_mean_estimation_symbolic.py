"""Every derived-vs-printed check of Sec. 6 / App. E holds, except the paper's known typos, which fail."""
from __future__ import annotations

import pytest
import sympy as sp

from fedtheory.checks import Check, compare
from fedtheory.mean_estimation import symbolic as S

CHECKS = S.checks()


def test_checks_cover_every_result():
    names = " | ".join(c.name for c in CHECKS)
    for result in ["Eq. (5)", "Lemma 6.1", "joint objective", "Lemma 6.2", "Theorem 6.3 λ* (matching",
                   "Theorem 6.3 λ* (minimizing", "Corollary 6.4", "Proposition 6.5", "Proposition 6.6",
                   "Lemma 6.7", "Theorem 6.8", "eq. (39)", "Lemma E.4", "Theorem E.5", "E_k(λ)"]:
        assert result in names, result
    assert all(isinstance(c, Check) for c in CHECKS)


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.name)
def test_check_outcome(check):
    if check.name in S.EXPECTED_TO_DIFFER:
        assert not check, f"{check.name} was expected to expose the paper's typo"
        assert check.counterexample  # a concrete point where the printed form differs
    else:
        assert check, f"{check.name}: derived {check.derived} != printed {check.printed}"


def test_expected_typos_exist():
    names = {c.name for c in CHECKS}
    assert set(S.EXPECTED_TO_DIFFER) <= names


def test_variance_of_linear_rejects_nonlinear():
    a, b = sp.symbols("a b")
    assert S.variance_of_linear(2 * a - b + 3, {a: 1, b: 4}) == 8
    with pytest.raises(ValueError, match="linear"):
        S.variance_of_linear(a * b, {a: 1, b: 1})


def test_gaussian_posterior_is_inverse_variance_weighting():
    th, x, y, vx, vy = sp.symbols("theta x y v_x v_y", positive=True)
    mean, var = S.gaussian_posterior(th, [(x, vx), (y, vy)])
    assert sp.simplify(var - 1 / (1 / vx + 1 / vy)) == 0
    assert sp.simplify(mean - var * (x / vx + y / vy)) == 0


def test_a_wrong_printed_form_would_fail():
    """The comparison is not vacuous: perturbing a printed form makes it fail."""
    lam_star = S.theorem_6_3()["by_minimizing"]
    assert not compare("perturbed", lam_star, S.s / (2 * S.tau2))
    E = S.error_curve()["E"]
    assert not compare("perturbed L6.7", E, S.printed()["L6.7_E"] + S.s / S.K**2, domain={S.K: (2, 50)})


def test_lambda_star_is_unique_minimum():
    dE = S.error_curve()["dE_dlambda"]
    lam_star = S.theorem_6_3()["by_minimizing"]
    below = dE.subs(S.lam, lam_star / 2)
    above = dE.subs(S.lam, 2 * lam_star)
    vals = {S.s: sp.Rational(1, 100), S.tau2: sp.Rational(1, 150), S.K: 20}
    assert below.subs(vals) < 0 < above.subs(vals)
