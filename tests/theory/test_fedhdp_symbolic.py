"""FedHDP theory: every derived-vs-printed comparison (linear regression, A.6, Appendix B)."""
import pytest

from fedtheory import point_estimation as pe
from fedtheory.linear_regression import symbolic as S

# rows that must fail: the paper's typos (and Algorithms 1/3 as printed)
EXPECTED_FAILURES = {
    "λ_1 (49) as printed, group 1", "λ_1 (49) as printed, group 2",
    "λ_3 (51) as printed (= λ_2), any r, group 1", "λ_3 (51) as printed (= λ_2), any r, group 2",
    "fixed point, toward the client's updated copy (Algorithms 1/3 as printed), = eq. 43",
    "one step with η_p = 1/(1+λ), toward the client's updated copy (Algorithms 1/3 as printed), = eq. 43",
    "Table 4, homogeneous data, homogeneous privacy: λ*_p as printed",
}


@pytest.fixture(scope="module")
def all_checks():
    return S.all_checks(multilevel_instances=2) + pe.checks()


def test_every_check_has_the_expected_verdict(all_checks):
    failing = {c.name for c in all_checks if not c}
    assert failing == EXPECTED_FAILURES
    assert len(all_checks) > 60


def test_failing_rows_carry_a_counterexample(all_checks):
    for c in all_checks:
        if c.name in EXPECTED_FAILURES:
            assert c.counterexample, c.name


def test_corrected_forms_pass(all_checks):
    names = {c.name: bool(c) for c in all_checks}
    for g in (1, 2):
        assert names[f"λ_1 (49) corrected, group {g}"]
        assert names[f"λ_3 corrected, any r, group {g}"]
        assert names[f"λ_3 (51) as printed, at r = r*, group {g}"]
    assert names["Table 4, homogeneous data, homogeneous privacy: λ*_p corrected"]


def test_eq49_typo_invisible_in_opt_out_case():
    """With κ_1² = 0 we have σ_p1² = σ_c², so the literal (49) coincides with the corrected one."""
    for g in (1, 2):
        P = S.printed(g)
        lit = P["lambda_1(49) literal"].subs(S.gamma1_2, 0)
        cor = P["lambda_1(49) corrected"].subs(S.gamma1_2, 0)
        assert S.sp.simplify(lit - cor) == 0


def test_tradeoff_gain_positive_and_vanishing():
    t = S.tradeoff()
    g = S.kappa2
    vals = {S.N1: 2, S.N2: 18, S.alpha2: 1, S.tau2: S.sp.Rational(1, 2), g: S.sp.Rational(1, 2)}
    for key in ("gain, r*", "gain, r=1"):
        assert float(t[key].subs(vals)) > 0
    big = {**vals, S.N1: 20, S.N2: 180}
    assert float(t["gain, r*"].subs(big)) < float(t["gain, r*"].subs(vals))


def test_generic_minimiser_of_the_shrinkage_error():
    E, num, lam_star = S.generic_lambda()
    assert S.sp.simplify(lam_star - (S.VA - S.CAB) / (S.VB - S.CAB)) == 0
    # a minimum: the error at λ* is below the error at λ* ± 0.1 for V_B > C_AB
    vals = {S.VA: 2, S.VB: 3, S.CAB: S.sp.Rational(1, 2)}
    at = lambda x: E.subs(vals).subs(S.lam, x)  # noqa: E731
    best = lam_star.subs(vals)
    assert at(best) < at(best + S.sp.Rational(1, 10)) and at(best) < at(best - S.sp.Rational(1, 10))


def test_proof_steps_are_the_derivations_own_intermediate_results():
    sp = S.sp
    srv = S.server(abstract=True)
    phi = sp.Symbol("phi", real=True)
    assert sp.simplify(srv.posterior_mean - sp.solve(sp.diff(srv.neg_log_lik, phi), phi)[0]) == 0
    assert sp.simplify(srv.dV_numerator / (S.N1 + S.N2 * S.r)**3 - sp.diff(srv.V, S.r)) == 0
    assert sp.simplify(srv.r_min - S.s_p1 / S.s_p2) == 0
    for g in (1, 2):
        f = S.fedhdp_local(g, abstract=True)
        wg = (1 if g == 1 else S.r) / (S.N1 + S.N2 * S.r)
        assert f.var_A == S.alpha2 and sp.simplify(f.cov_AB - wg * S.alpha2) == 0
        # the error is (V_A + 2λC_AB + λ²V_B)/(1+λ)² with the model's moments
        E = (f.var_A + 2 * S.lam * f.cov_AB + S.lam**2 * f.var_B) / (1 + S.lam)**2
        assert sp.simplify(sp.together(E - f.error)) == 0
        lam_rstar = f.lambda_opt.subs(S.r, S.s_p1 / S.s_p2)
        assert sp.simplify(lam_rstar - S.printed(g, abstract=True)["lambda compact"]) == 0


def test_point_estimation_derivation_keys_and_values():
    D = pe.derivation()
    rho, k2 = D["symbols"]["rho_np"], D["symbols"]["kappa2"]
    assert S.sp.simplify(D["(81)"] - rho * (1 - rho) * k2) == 0
    assert S.sp.simplify(D["(82)"] - S.alpha2 / S.tau2) == 0
    assert {"r*", "(78)", "hdp", "dp", "(79)", "(80)", "(83)"} <= set(D)
