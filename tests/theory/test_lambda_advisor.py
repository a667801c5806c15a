"""fedtheory.lambda_advisor: λ*_k and gains vs the printed homogeneous results; τ̂² unbiased; bootstrap brackets."""
import numpy as np
import pytest

from fedtheory.lambda_advisor import advise, advise_from_variances, estimate_tau2_heterogeneous, noise_std
from fedtheory.mean_estimation import gap_to_fedavg, gap_to_local, local_variance, optimal_lambda
from fedtheory.privacy.gaussian import analytic_gaussian_sigma, gaussian_sigma


def test_equal_silos_reduce_to_theorem_6_3_and_props_6_5_6_6():
    a = advise([200] * 20, 0.25, 1e-5, sigma2=0.16, tau2=0.08**2)
    s2 = float(local_variance(0.16, 200, analytic_gaussian_sigma(0.25, 1e-5) ** 2))
    assert np.allclose(a.sigma_loc2, s2)
    assert np.allclose(a.lambda_star, optimal_lambda(s2, 0.08**2))
    assert np.allclose(a.gain_over_local, gap_to_local(s2, 0.08**2, 20))     # printed Prop. 6.5
    assert np.allclose(a.gain_over_fedavg, gap_to_fedavg(s2, 0.08**2, 20))   # printed Prop. 6.6
    assert a.common_lambda == pytest.approx(optimal_lambda(s2, 0.08**2), rel=0.06)  # grid of 20 points/decade


def test_calibrations_and_nonprivate_silo():
    assert noise_std(0.5, 1e-5, 2.0, "classic") == pytest.approx(gaussian_sigma(0.5, 1e-5, 2.0))
    z = noise_std([0.5, np.inf], 1e-5)
    assert z[1] == 0 and z[0] < noise_std(0.5, 1e-5, calibration="rdp") < noise_std(0.5, 1e-5, calibration="classic")
    with pytest.raises(ValueError, match="calibration"):
        noise_std(0.5, 1e-5, calibration="moments")
    with pytest.raises(ValueError, match="exactly one"):
        advise([10, 20], 1.0, 1e-5)


def test_tau2_estimate_is_unbiased_monte_carlo():
    rng = np.random.default_rng(0)
    s = rng.uniform(0.001, 0.02, 8)
    tau2 = 0.005
    w = np.sqrt(tau2) * rng.standard_normal((40_000, 8)) + np.sqrt(s) * rng.standard_normal((40_000, 8)) + 3.0
    est = estimate_tau2_heterogeneous(w, s)
    assert abs(est.mean() - tau2) <= 4 * est.std(ddof=1) / np.sqrt(est.size)


def test_noisier_silo_gets_larger_lambda_and_bootstrap_brackets():
    s = np.array([0.001, 0.002, 0.004, 0.008, 0.016, 0.03])
    a = advise_from_variances(s, tau2=0.004)
    assert np.all(np.diff(a.lambda_star[np.isfinite(a.lambda_star)]) > 0)
    rng = np.random.default_rng(1)
    w = np.sqrt(0.004) * rng.standard_normal(6) + np.sqrt(s) * rng.standard_normal(6)
    b = advise_from_variances(s, releases=w, bootstrap=100)
    lo, hi = b.quantiles["tau2"]
    assert b.tau2_estimated and lo <= hi and b.quantiles["mean_gain_over_local"][0] <= b.quantiles["mean_gain_over_local"][1]


def test_reml_tau2_nearly_unbiased_and_better_than_moment_with_a_noisy_silo():
    """Monte Carlo (2000 draws): REML's mean is within 10 % of τ² (it is clipped at 0, so slightly biased up) and
    it is zero far less often than the unweighted moment estimate, which one very noisy silo dominates."""
    from fedtheory.lambda_advisor import estimate_tau2_reml

    s = np.array([0.1095, 0.0026, 0.0048, 0.0011, 0.0019, 0.00034, 0.00023, 0.00034])
    rng = np.random.default_rng(0)
    w = 0.05 * rng.standard_normal((2000, 8)) + np.sqrt(s) * rng.standard_normal((2000, 8))
    reml = np.array([estimate_tau2_reml(row, s) for row in w])
    mom = np.maximum(estimate_tau2_heterogeneous(w, s), 0)
    se = reml.std(ddof=1) / np.sqrt(reml.size)
    assert abs(reml.mean() - 0.0025) < 0.1 * 0.0025 + 4 * se
    assert (reml == 0).mean() < 0.1 < 0.5 < (mom == 0).mean()
