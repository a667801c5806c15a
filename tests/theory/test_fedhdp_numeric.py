"""Numeric FedHDP API against the sympy derivation, special cases, validation."""
import numpy as np
import pytest
import sympy as sp

from fedtheory import linear_regression as lr
from fedtheory import point_estimation as pe
from fedtheory.linear_regression import symbolic as S

POINTS = [dict(N1=3, N2=7, alpha2=0.5, tau2=0.3, gamma1_2=0.0, gamma2_2=0.2),
          dict(N1=5, N2=4, alpha2=2.0, tau2=0.1, gamma1_2=0.05, gamma2_2=0.7),
          dict(N1=1, N2=12, alpha2=1.3, tau2=2.0, gamma1_2=0.3, gamma2_2=0.3)]


def _subs(p, **extra):
    s = {S.N1: p["N1"], S.N2: p["N2"], S.alpha2: p["alpha2"], S.tau2: p["tau2"],
         S.gamma1_2: p["gamma1_2"], S.gamma2_2: p["gamma2_2"]}
    s.update({getattr(S, k): v for k, v in extra.items()})
    return s


@pytest.mark.parametrize("p", POINTS)
def test_server_functions_match_sympy(p):
    srv = S.server()
    assert lr.optimal_ratio(**p) == pytest.approx(float(srv.r_min.subs(_subs(p))), rel=1e-12)
    assert lr.optimal_server_error(**p) == pytest.approx(float(srv.posterior_var.subs(_subs(p))), rel=1e-12)
    for r in (0.1, 0.7, 1.0, 2.5):
        assert lr.server_error(r, **p) == pytest.approx(float(srv.V.subs(_subs(p, r=r))), rel=1e-12)


@pytest.mark.parametrize("p", POINTS)
@pytest.mark.parametrize("group", [1, 2])
def test_local_functions_match_sympy(p, group):
    f, b = S.fedhdp_local(group), S.local_bayes(group)
    for r in (0.2, 1.0):
        for lam in (0.05, 1.0, 7.0):
            s = _subs(p, r=r, lam=lam)
            assert lr.local_error(lam, r, group, **p) == pytest.approx(float(f.error.subs(s)), rel=1e-12)
            assert lr.local_error(lam, r, group, **p, own_noise_removed=False) == pytest.approx(
                float(f.error_raw.subs(s)), rel=1e-12)
        s = _subs(p, r=r)
        assert lr.optimal_lambda_for_ratio(r, group, **p) == pytest.approx(float(f.lambda_opt.subs(s)), rel=1e-10)
        assert lr.optimal_lambda_for_ratio(r, group, **p, own_noise_removed=False) == pytest.approx(
            float(f.lambda_opt_raw.subs(s)), rel=1e-10)
    s = _subs(p)
    assert lr.optimal_lambda(group, **p) == pytest.approx(float(S.printed(group)["lambda*(47)"].subs(s)), rel=1e-12)
    assert lr.bayes_local_error(group, **p) == pytest.approx(float(b.posterior_var.subs(s)), rel=1e-12)
    for got, want in zip(lr.bayes_local_coefficients(group, **p), (b.coef_own, b.coef_C1, b.coef_C2)):
        assert got == pytest.approx(float(want.subs(s)), rel=1e-12)


@pytest.mark.parametrize("p", POINTS)
@pytest.mark.parametrize("group", [1, 2])
def test_optimality_by_grid(p, group):
    rs = lr.optimal_ratio(**p)
    r = np.linspace(0.01, 3, 3000)
    assert lr.server_error(rs, **p) <= lr.server_error(r, **p).min() + 1e-15
    lam = np.logspace(-3, 3, 4000)
    ls = lr.optimal_lambda(group, **p)
    best = lr.local_error(ls, rs, group, **p)
    assert best <= lr.local_error(lam, rs, group, **p).min() + 1e-15
    assert best == pytest.approx(lr.bayes_local_error(group, **p), rel=1e-12)
    assert lr.optimal_lambda_for_ratio(rs, group, **p) == pytest.approx(ls, rel=1e-12)


def test_special_cases():
    # non-private client: λ* = α²/τ² whatever the others do
    assert lr.optimal_lambda(1, 4, 9, 0.6, 0.2, 0.0, [0.0, 0.3, 5.0]) == pytest.approx(3.0)
    # no privacy anywhere, homogeneous data: λ* = ∞ (FedAvg), and the error at ∞ is the global model's
    assert lr.optimal_lambda(1, 4, 9, 0.6, 0.0, 0.0, 0.0) == np.inf
    assert lr.local_error(np.inf, 1.0, 1, 4, 9, 0.6, 0.0, 0.0, 0.0) == pytest.approx(
        lr.local_error(1e12, 1.0, 1, 4, 9, 0.6, 0.0, 0.0, 0.0), rel=1e-9)
    # r* ≤ 1 exactly when the second group is noisier
    assert lr.optimal_ratio(3, 7, 1, 1, 0.0, 0.1) < 1 < lr.optimal_ratio(3, 7, 1, 1, 0.5, 0.1)
    # multi-level reduces to two levels
    p = POINTS[1]
    w = lr.optimal_weights([p["N1"], p["N2"]], p["alpha2"], p["tau2"], [p["gamma1_2"], p["gamma2_2"]])
    assert w[1] == pytest.approx(lr.optimal_ratio(**p))
    lams = lr.optimal_lambdas([p["N1"], p["N2"]], p["alpha2"], p["tau2"], [p["gamma1_2"], p["gamma2_2"]])
    assert lams == pytest.approx([lr.optimal_lambda(1, **p), lr.optimal_lambda(2, **p)])
    wn = lr.optimal_weights([3, 4, 5], 1.0, 0.5, [0, 0.1, 0.3], normalize=True)
    assert np.dot([3, 4, 5], wn) == pytest.approx(1.0)


def test_multilevel_vectorized_and_optimal():
    N = np.array([[3, 4, 5], [2, 2, 9]])
    g = np.array([[0.0, 0.1, 0.3], [0.05, 0.2, 0.2]])
    w = lr.optimal_weights(N, 1.0, 0.5, g, normalize=True)
    assert w.shape == (2, 3)
    rng = np.random.default_rng(0)
    sp2 = 1.5 + N * g
    opt = (N * w**2 * sp2).sum(-1)
    for _ in range(200):  # any other normalized weighting is worse
        v = w * np.exp(0.3 * rng.standard_normal(w.shape))
        v /= (N * v).sum(-1, keepdims=True)
        assert np.all((N * v**2 * sp2).sum(-1) >= opt - 1e-15)
    assert lr.optimal_lambdas(N, 1.0, 0.5, g).shape == (2, 3)


def test_vectorized_broadcasting():
    out = lr.local_error(np.array([0.1, 1.0, 10.0])[:, None], np.array([0.2, 1.0]), 2, 3, 7, 0.5, 0.3, 0.0, 0.2)
    assert out.shape == (3, 2)
    assert lr.optimal_ratio([3, 5], [7, 5], 0.5, [0.3, 0.4], 0.0, 0.2).shape == (2,)


def test_opt_out_effect_matches_notes_table():
    # numbers from the paper inventory (own noise kept in the global model, κ = 1)
    o = lr.opt_out_effect(5, 95, 1.0, 0.1, 0.1, own_noise_removed=False)
    assert (o.private, o.opted_out) == pytest.approx((0.14895, 0.14827), abs=5e-6)
    o = lr.opt_out_effect(2, 18, 1.0, 0.5, 0.5, r=1.0, own_noise_removed=False)
    assert (o.private, o.opted_out) == pytest.approx((0.50683, 0.49475), abs=5e-6)
    assert o.gain > 0
    o = lr.opt_out_effect(2, 18, 1.0, 0.5, 0.5)   # κ = 0, r*: equals eq. 41 in both populations
    assert o.private == pytest.approx(lr.bayes_local_error(2, 2, 18, 1.0, 0.5, 0.0, 0.5))
    assert o.opted_out == pytest.approx(lr.bayes_local_error(1, 3, 17, 1.0, 0.5, 0.0, 0.5))


def test_tradeoff_symbolic_matches_numeric():
    t = S.tradeoff()
    g = S.kappa2
    vals = {S.N1: 2, S.N2: 18, S.alpha2: 1, S.tau2: sp.Rational(1, 2), g: sp.Rational(1, 2)}
    o = lr.opt_out_effect(2, 18, 1.0, 0.5, 0.5)
    assert float(t["private, r*"].subs(vals)) == pytest.approx(o.private, rel=1e-12)
    assert float(t["opted out, r*"].subs(vals)) == pytest.approx(o.opted_out, rel=1e-12)
    o1 = lr.opt_out_effect(2, 18, 1.0, 0.5, 0.5, r=1.0)
    assert float(t["gain, r=1"].subs(vals)) == pytest.approx(o1.gain, rel=1e-10)


def test_point_estimation_numeric():
    N, rho, a2, t2, g = 100, 0.05, 1.0, 0.5, 0.1
    n_np, n_p = 5, 95
    assert pe.optimal_ratio(N, rho, a2, t2, g) == pytest.approx(lr.optimal_ratio(n_np, n_p, a2, t2, 0, n_p * g / n_p))
    assert pe.optimal_server_error(N, rho, a2, t2, g) == pytest.approx(lr.optimal_server_error(n_np, n_p, a2, t2, 0, g))
    assert pe.server_error(1.0, N, rho, a2, t2, g) == pytest.approx(pe.hdp_fedavg_server_error(N, rho, a2, t2, g))
    assert pe.optimal_lambda_private(N, rho, a2, t2, g) == pytest.approx(lr.optimal_lambda(2, n_np, n_p, a2, t2, 0, g))
    assert pe.optimal_lambda_nonprivate(a2, t2) == pytest.approx(2.0)
    gaps = pe.server_gaps(N, rho, a2, t2, g)
    assert gaps.dp_minus_hdp == pytest.approx(rho * (1 - rho) * g)
    assert min(gaps) > 0
    # printed (79) numerically
    sc = a2 + t2
    assert gaps.hdp_minus_opt == pytest.approx(rho * (1 - rho)**3 * g**2 * N / (sc + rho * (1 - rho) * g * N))


@pytest.mark.parametrize("call, match", [
    (lambda: lr.optimal_ratio(-1, 3, 1, 1, 0, 1), "N1"),
    (lambda: lr.optimal_ratio(2.5, 3, 1, 1, 0, 1), "N1"),
    (lambda: lr.optimal_ratio(0, 0, 1, 1, 0, 1), "N1 \\+ N2"),
    (lambda: lr.server_error(-0.1, 2, 3, 1, 1, 0, 1), "r must be >= 0"),
    (lambda: lr.server_error(0.0, 0, 3, 1, 1, 0, 1), "r must be > 0"),
    (lambda: lr.optimal_lambda(3, 2, 3, 1, 1, 0, 1), "group"),
    (lambda: lr.optimal_lambda(1, 0, 3, 1, 1, 0, 1), "N1 must be >= 1"),
    (lambda: lr.local_error(-1, 1, 1, 2, 3, 1, 1, 0, 1), "lam"),
    (lambda: lr.local_error(1, 1, 1, 2, 3, 0, 1, 0, 1), "alpha2 must be > 0"),
    (lambda: lr.local_error(1, 1, 1, 2, 3, 1, -1, 0, 1), "tau2"),
    (lambda: lr.optimal_ratio(2, 3, 1, 1, float("nan"), 1), "gamma1_2"),
    (lambda: lr.optimal_weights(3, 1, 1, 0.1), "one entry per privacy level"),
    (lambda: lr.optimal_lambdas([3, 0], 1, 1, [0.1, 0.2]), "N must be an integer >= 1"),
    (lambda: lr.opt_out_effect(2, 0, 1, 1, 1), "N_p"),
    (lambda: pe.optimal_ratio(10, 1.5, 1, 1, 1), "rho_np"),
    (lambda: pe.optimal_lambda_private(10, 1.0, 1, 1, 1), "rho_np must be < 1"),
    (lambda: pe.optimal_lambda_nonprivate(1, -2), "tau2"),
])
def test_bad_input_raises(call, match):
    with pytest.raises(ValueError, match=match):
        call()
