"""The λ advisor in training units: per-direction App. E.5 with curvature, checked against sympy, a brute-force
minimisation, a Monte Carlo of MR-MTL's shrinkage with non-unit curvature, and rescaled features."""
import dataclasses
import math

import numpy as np
import pytest
import sympy as sp
from scipy import optimize

from fedtheory.lambda_advisor import (DirectionSilo, advise_directions, derive_direction_lambda, direction_errors,
                               direction_lambda)


def test_direction_lambda_is_the_sympy_minimiser_and_h_times_theorem_e5():
    lam_star, err = derive_direction_lambda()
    h, v, V, K, lam = sp.symbols("h v V K lambda", positive=True)
    f_star = sp.lambdify((h, v, V, K), lam_star)
    f_err = sp.lambdify((lam, h, v, V, K), err)
    rng = np.random.default_rng(0)
    for _ in range(20):
        hh, vv, VV, KK = rng.uniform(0.2, 5), rng.uniform(0.1, 1), rng.uniform(1, 3), int(rng.integers(3, 50))
        closed = float(direction_lambda(hh, vv, VV, KK))
        assert closed == pytest.approx(f_star(hh, vv, VV, KK), rel=1e-12)
        # independent: brute-force minimisation of the exact per-direction error over log λ
        res = optimize.minimize_scalar(lambda x: f_err(math.exp(x), hh, vv, VV, KK), bounds=(-12, 12),
                                       method="bounded", options={"xatol": 1e-10})
        assert math.exp(res.x) == pytest.approx(closed, rel=1e-4)
        # h times Theorem E.5 (unit curvature) for the same silo variances
        from fedtheory.mean_estimation.heterogeneous import external_variance, optimal_lambdas_heterogeneous
        tau2 = 0.3
        s = np.concatenate([[vv], rng.uniform(0.05, 0.5, KK - 1)])
        e5 = optimal_lambdas_heterogeneous(s, tau2)[0]
        V_k = external_variance(s, tau2)[0]
        assert float(direction_lambda(hh, vv, V_k, KK)) == pytest.approx(hh * e5, rel=1e-10)


def _random_silos(rng, K=6, d=3, curv=(0.3, 4.0), var=(0.02, 0.2)):
    silos = []
    for _ in range(K):
        U, _ = np.linalg.qr(rng.normal(size=(d, d)))
        silos.append(DirectionSilo(rng.uniform(*curv, size=d), U, rng.uniform(*var, size=d)))
    return silos


def test_non_unit_curvature_against_monte_carlo_of_mrmtl_shrinkage():
    """Independent check: draw w_k ~ N(θ, τ²I) and ŵ_k = w_k + N(0, Σ_k), form MR-MTL's estimate with the matrix
    shrinkage ``H(H + λI)⁻¹ŵ_k + λ(H + λI)⁻¹w̄`` (w̄ the plain average of the ŵ_j) and measure the excess test
    error ``(w − w_k)ᵀH_k(w − w_k)``; the per-direction formula must agree within 4 standard errors at every λ,
    and the Monte Carlo's best λ must be the advised one within its resolution."""
    rng = np.random.default_rng(7)
    K, d, tau2, trials = 6, 3, 0.05, 40_000
    silos = _random_silos(rng, K, d)
    Hs = [(s.U * s.h) @ s.U.T for s in silos]
    chol = [s.U * np.sqrt(s.stat_var) for s in silos]
    w = 0.7 + np.sqrt(tau2) * rng.standard_normal((trials, K, d))
    what = w + np.einsum("kpq,tkq->tkp", np.array(chol), rng.standard_normal((trials, K, d)))
    wbar = what.mean(axis=1)
    lams = np.array([0.0, 0.1, 0.3, 1.0, 3.0, 10.0, np.inf])
    for lam in lams:
        errs = np.zeros(trials)
        for k, H in enumerate(Hs):
            if np.isfinite(lam):
                A = H @ np.linalg.inv(H + lam * np.eye(d))
                est = what[:, k] @ A.T + wbar @ (np.eye(d) - A).T
            else:
                est = wbar
            e = est - w[:, k]
            errs += np.einsum("tp,pq,tq->t", e, H, e) / K
        theory = direction_errors(lam, silos, tau2, dp_model="release").mean()
        se = errs.std(ddof=1) / math.sqrt(trials)
        assert abs(errs.mean() - theory) < 4 * se, (lam, errs.mean(), theory, se)
    adv = advise_directions(silos, tau2, dp_model="release")
    fine = np.logspace(-2, 2, 41)
    curve = [direction_errors(l, silos, tau2, dp_model="release").mean() for l in fine]
    assert adv.common_lambda == pytest.approx(fine[int(np.argmin(curve))], rel=0.13)


def test_common_lambda_scales_with_curvature_and_unit_curvature_does_not():
    """Features ×c: curvature ×c², variances and τ² ×1/c² (parameters ×1/c): the error curve is the same function
    of λ/c², so the advised λ is ×c² (here ×4) exactly; at h = 1 the unit-curvature App. E.5 advice agrees."""
    rng = np.random.default_rng(3)
    silos = _random_silos(rng, K=8, d=4)
    base = advise_directions(silos, 0.08, dp_model="release").common_lambda
    scaled = [dataclasses.replace(s, h=4 * s.h, stat_var=s.stat_var / 4) for s in silos]
    assert advise_directions(scaled, 0.02, dp_model="release").common_lambda == pytest.approx(4 * base, rel=1e-4)
    # unit curvature: the per-direction model reduces to Theorem E.5's common-λ curve
    from fedtheory.lambda_advisor import advise_from_variances
    unit = [DirectionSilo(np.ones(1), np.ones((1, 1)), np.array([v])) for v in rng.uniform(0.02, 0.2, 8)]
    a = advise_directions(unit, 0.08, dp_model="release")
    b = advise_from_variances(np.array([float(s.stat_var[0]) for s in unit]), tau2=0.08)
    lam_grid = np.logspace(-3, 3, 61)
    from fedtheory.mean_estimation.heterogeneous import mse_heterogeneous
    e5 = mse_heterogeneous(lam_grid, np.array([float(s.stat_var[0]) for s in unit]), 0.08).mean(axis=-1)
    ours = np.array([direction_errors(l, unit, 0.08, dp_model="release").mean() for l in lam_grid])
    np.testing.assert_allclose(ours, e5, rtol=1e-12)
    assert a.common_lambda == pytest.approx(b.common_lambda, rel=0.06)   # b: E.5 on its 161-point grid


def test_prox_dp_model_contracts_noise_at_rate_h_plus_lambda():
    """DP noise under the prox term: the variance of e ← (1 − η(h + λ))e + N(0, s²) after T steps, simulated."""
    from fedtheory.privacy.random_walk import simulate_walk

    silo = DirectionSilo(np.array([0.8]), np.ones((1, 1)), np.array([1e-9]), dp_step_var=1e-4, steps=300)
    other = DirectionSilo(np.array([0.8]), np.ones((1, 1)), np.array([1e-9]))
    lam, lr = 2.0, 0.05
    e = direction_errors(lam, [silo, other], 1e-12, lr=lr, dp_model="prox")[0]
    sim = simulate_walk(1e-4, lr, 0.8 + lam, 300, trials=40_000, seed=2)
    var, se = sim.var(), sim.var() * math.sqrt(2 / sim.size)
    # the silo's own term is h·Var (its share in the centre is O(1/K²) and small next to the tolerance)
    assert abs(e / 0.8 - var) < 4 * se + 1e-3 * var
    assert direction_errors(np.inf, [silo, other], 1e-12, lr=lr, dp_model="prox")[0] < e


def test_predict_in_training_units_rescaled_features():
    """fedtrain's prediction on linear-regression data with non-unit curvature: features ×2 with lr ÷ 4 (the same
    GD trajectory reparametrised, non-private) multiplies the advised λ by about 4; the intercept column is not
    rescaled, so the factor is not exact. The unit-curvature advice stays put."""
    from fedtrain.advise import predict
    from fedtrain.config import RunConfig
    from fedtrain.data.gaussian import gaussian_linear_regression

    data = gaussian_linear_regression(num_silos=30, n=60, dim=4, tau=0.3, sigma=1.0, seed=2)
    stretch = np.array([0.5, 1.0, 1.5, 2.0])
    d1 = dataclasses.replace(data, train_x=[x * stretch for x in data.train_x],
                             test_x=[x * stretch for x in data.test_x])
    d2 = dataclasses.replace(data, train_x=[2 * x for x in d1.train_x], test_x=[2 * x for x in d1.test_x])
    cfg = RunConfig(dataset="gaussian-linreg", method="mrmtl", lr=0.1, rounds=400, batch_size=60, eps=math.inf)
    (p1,) = predict(d1, cfg, [math.inf])
    (p2,) = predict(d2, cfg.replace(lr=0.025), [math.inf])
    ratio = p2.predicted_lambda / p1.predicted_lambda
    assert 3.3 < ratio < 4.2, ratio
    assert 0.8 < p2.advice.common_lambda / p1.advice.common_lambda < 1.25


def test_cli_check_with_repeats_writes_a_report_with_provenance(tmp_path):
    import contextlib
    import io

    from fedtrain.advise import load_check
    from fedtrain.cli import main

    out = tmp_path / "check.json"
    with contextlib.redirect_stdout(io.StringIO()):
        rc = main(["advise", "--dataset", "gaussian", "-D", "num_silos=8", "-D", "n=50", "--eps", "1",
                   "--rounds", "3", "--batch-size", "10", "--delta", "1e-3", "--lam", "0,1,10", "--repeats", "3",
                   "--check", "--check-out", str(out), "--results", str(tmp_path / "store"), "--no-progress"])
    assert rc == 0
    doc = load_check(out)
    assert doc["command"].startswith("fedtrain advise") and doc["seconds"] >= 0 and doc["settings"]["repeats"] == 3
    (r,) = doc["advice"]
    assert r["repeats"] == 3 and len(r["swept_best_per_repeat"]) == 3 and len(r["predicted_lambda_per_split"]) == 3
    assert len(set(r["predicted_lambda_per_split"])) > 1          # each repeat's split gives its own prediction
    assert r["swept_best_lambda"] in (0.0, 1.0, 10.0) and r["swept_best_quantiles"][0] <= r["swept_best_quantiles"][1]
    assert r["excess_at_predicted"] >= -1e-12
    with pytest.raises(FileNotFoundError, match="fedtrain advise"):
        load_check(tmp_path / "missing.json")


def test_interpolated_error():
    from fedtrain.advise import interpolated_error

    curve = [(0.0, 3.0), (0.1, 2.0), (1.0, 1.0), (10.0, 4.0)]
    assert interpolated_error(curve, math.sqrt(10.0)) == pytest.approx(2.5)
    assert interpolated_error(curve, 0.05) == pytest.approx(2.5) and interpolated_error(curve, 100.0) == 4.0
