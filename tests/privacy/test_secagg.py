"""Secure aggregation with S local steps (Heikkilä 2025, Thms 4.6-4.7, App. A.3): calibrations and checks."""
from __future__ import annotations

import math

import numpy as np
import pytest
from dp_accounting import gaussian_mechanism

from fedtheory.figures import secagg as FS
from fedtheory.privacy import secagg as S
from fedtheory.privacy.dpsgd_accounting import epsilon as dpsgd_epsilon

FM = dict(M=10, S=11, R=20, sample_rate=512 / 5600, target_eps=1.0, delta=1e-5)


def test_ordering_of_calibrations():
    """ddp < ddp_hbc < ldp and ldp < naive in the FMNIST setting, for RDP and PLD."""
    for acc in ("rdp", "pld"):
        s = {c: S.per_client_noise(**FM, calibration=c, accountant=acc) for c in S.CALIBRATIONS}
        assert s["ddp"] < s["ddp_hbc"] < s["ldp"] < s["naive"], (acc, s)


def test_sqrt_m_scaling_and_guarantee():
    """Thm 4.7: σ_j·√M is the same σ_total for every M, and that σ_total meets the target (ε ≤ 1)."""
    base = dict(FM)
    totals = []
    for M in (2, 5, 10, 40):
        base["M"] = M
        sj = S.per_client_noise(**base, calibration="ddp")
        totals.append(sj * math.sqrt(M))
        hbc = S.per_client_noise(**base, calibration="ddp_hbc")
        assert hbc * math.sqrt(M - 1) == pytest.approx(totals[-1], rel=1e-12)
    assert np.allclose(totals, totals[0], rtol=1e-12)
    eps = dpsgd_epsilon(totals[0], 1e-5, FM["sample_rate"], FM["R"] * FM["S"], accountant="rdp")
    assert 0.99 <= eps <= 1.0
    # ldp: one client's own noise already meets the target
    ldp = S.per_client_noise(**FM, calibration="ldp")
    assert ldp == pytest.approx(totals[0], rel=1e-12)


def test_forward_direction_round_trip():
    for c in S.CALIBRATIONS:
        sj = S.per_client_noise(**FM, calibration=c)
        eps = S.epsilon_of_per_client_noise(sj, FM["M"], FM["S"], FM["R"], FM["sample_rate"], FM["delta"], c)
        assert 0.99 <= eps <= 1.0, c


def test_naive_matches_exact_gaussian_composition():
    """Naive: R unamplified Gaussian releases with sensitivity S·C.  R-fold composition of a Gaussian
    is exactly a Gaussian with multiplier z/√R, so σ_j = σ_analytic(ε, δ)·√R·√S/√M, with σ_analytic from
    dp_accounting's exact (Balle-Wang) calibration.  The PLD accountant agrees to 0.5 %, RDP is above."""
    exact = gaussian_mechanism.get_sigma_gaussian(1.0, 1e-5) * math.sqrt(20 * 11 / 10)
    pld = S.per_client_noise(**FM, calibration="naive", accountant="pld")
    rdp = S.per_client_noise(**FM, calibration="naive", accountant="rdp")
    assert pld == pytest.approx(exact, rel=5e-3)
    assert rdp >= exact
    assert exact == pytest.approx(17.50, abs=0.01)  # naive DDP (round sensitivity S·C, exact GDP), computed independently


def test_naive_grows_like_sqrt_s_and_ddp_slower():
    Ss = (1, 4, 16)
    naive = [S.per_client_noise(FM["M"], s, FM["R"], FM["sample_rate"], 1.0, 1e-5, "naive") for s in Ss]
    assert naive[1] / naive[0] == pytest.approx(2.0, rel=1e-9) and naive[2] / naive[1] == pytest.approx(2.0, rel=1e-9)
    ddp = [S.per_client_noise(FM["M"], s, FM["R"], FM["sample_rate"], 1.0, 1e-5, "ddp") for s in Ss]
    assert ddp[0] < ddp[1] < ddp[2]
    assert ddp[2] / ddp[0] < naive[2] / naive[0]


def test_paper_code_accountant_reproduces_shipped_configs():
    """The seed paper's accountant (integer orders 2..255, classic conversion) gives ε = 1 at its shipped
    σ_total values (σ given to 3-4 digits, so to 1e-3)."""
    for z, q, steps in [(1.368, 128 / 5600, 20), (6.822, 512 / 5600, 220), (14.47, 256 / 4800, 3040),
                        (3.688, 0.05, 200)]:
        assert S.paper_code_epsilon(z, q, steps, 1e-5) == pytest.approx(1.0, abs=1e-3)
    # and it is looser than our RDP accountant at the same noise
    assert dpsgd_epsilon(6.822, 1e-5, 512 / 5600, 220, accountant="rdp") < 0.9


def test_heterogeneous_reduces_to_equal_clients():
    M, z = 10, 6.0
    s = S.heterogeneous_client_noise(np.ones(M), np.ones(M) * 2.0, z)
    assert np.allclose(s, z / math.sqrt(M) * 2.0)
    assert S.heterogeneous_effective_multiplier(np.ones(M), 2.0, s) == pytest.approx(z)


def test_heterogeneous_effective_multiplier_general():
    rng = np.random.default_rng(0)
    c, C = rng.uniform(0.5, 2, 7), rng.uniform(0.5, 3, 7)
    s = S.heterogeneous_client_noise(c, C, 4.0)
    assert S.heterogeneous_effective_multiplier(c, C, s) == pytest.approx(4.0, rel=1e-12)
    # direct definition: noise std of Σ c_j ξ_j over the largest per-client sensitivity c_j C_j
    assert S.heterogeneous_effective_multiplier(c, C, s) == pytest.approx(
        np.sqrt(np.sum((c * s) ** 2)) / np.max(c * C), rel=1e-12)


def test_monte_carlo_sum_of_client_noises_is_one_central_mechanism():
    """Σ_j N(0, σ_j² C²) over M clients has variance (σ_total C)² (4 SE on the variance estimate)."""
    M, C = 10, 1.5
    z_total = S.per_client_noise(**FM, calibration="ddp") * math.sqrt(M)
    agg = S.simulate_aggregate_noise(M, z_total / math.sqrt(M), clip=C, dim=4, trials=50_000, seed=3)
    target = (z_total * C) ** 2
    v = agg.var(axis=0, ddof=1)
    se = target * math.sqrt(2.0 / (agg.shape[0] - 1))  # SE of a Gaussian sample variance
    assert np.all(np.abs(v - target) <= 4 * se)
    # and it is Gaussian: standardized 4th moment 3 (SE sqrt(96/n))
    k = (agg[:, 0] ** 4).mean() / agg[:, 0].var() ** 2
    assert abs(k - 3.0) <= 4 * math.sqrt(96 / agg.shape[0])


def test_monte_carlo_summed_release_is_s_fold_composition():
    """Without subsampling, the released round sum has mean S·C and variance S·σ_total²·C², so its
    GDP parameter mean/sd equals √S/σ_total, the S-fold composition (Lemma 4.5 loses nothing)."""
    M, Sn, sj, C = 5, 8, 0.7, 1.0
    present = S.simulate_summed_release(M, Sn, sj, C, True, trials=60_000, seed=1)
    absent = S.simulate_summed_release(M, Sn, sj, C, False, trials=60_000, seed=2)
    n = present.size
    sd = math.sqrt(Sn * M) * sj * C
    diff = present.mean() - absent.mean()
    assert abs(diff - Sn * C) <= 4 * sd * math.sqrt(2 / n)
    assert abs(present.var(ddof=1) - sd**2) <= 4 * sd**2 * math.sqrt(2 / (n - 1))
    mu_hat = diff / math.sqrt(0.5 * (present.var(ddof=1) + absent.var(ddof=1)))
    assert mu_hat == pytest.approx(math.sqrt(Sn) / (sj * math.sqrt(M)), rel=0.02)


def test_bad_inputs():
    with pytest.raises(ValueError, match="calibration"):
        S.per_client_noise(**FM, calibration="central")
    with pytest.raises(ValueError, match="accountant"):
        S.per_client_noise(**FM, accountant="gdp")
    with pytest.raises(ValueError, match="M >= 2"):
        S.per_client_noise(1, 11, 20, 0.1, 1.0, 1e-5, "ddp_hbc")
    with pytest.raises(ValueError, match="sample_rate"):
        S.per_client_noise(10, 11, 20, 1.5, 1.0, 1e-5)
    with pytest.raises(ValueError, match="S must be an integer"):
        S.per_client_noise(10, 0, 20, 0.1, 1.0, 1e-5)


def test_figures():
    import matplotlib.pyplot as plt

    curves = FS.noise_curves(10, [1, 11], 20, 512 / 5600, 1.0, 1e-5, "rdp")
    for c in S.CALIBRATIONS:
        assert curves[c][1] == pytest.approx(S.per_client_noise(**FM, calibration=c), rel=1e-12)
    fig = FS.plot_noise_vs_steps(S_values=(1, 11), accountants=("rdp",))
    assert len(fig.axes[0].lines) >= 4
    plt.close(fig)
    fig = FS.plot_widget(M=5, S=4, eps=2.0, accountant="rdp")
    assert len(fig.axes) == 2
    plt.close(fig)


def test_estimate_gdp_mu_recovers_known_gaussian_pair():
    """On N(m1, s²) vs N(m0, s²) samples the estimate is within 4 SE of μ = (m1 - m0)/s; a wrong
    estimator (e.g. dividing by the variance, or by the sd of one sample only) would miss by far more."""
    rng = np.random.default_rng(11)
    for m1, m0, s, n1, n0 in [(3.0, 1.0, 2.0, 40_000, 40_000), (0.5, 0.0, 0.25, 30_000, 50_000),
                              (-1.0, 0.0, 3.0, 20_000, 20_000)]:
        mu = (m1 - m0) / s
        est = S.estimate_gdp_mu(rng.normal(m1, s, n1), rng.normal(m0, s, n0))
        se = math.sqrt((1 / n1 + 1 / n0) * (1 + mu**2 / 8))
        assert abs(est - mu) <= 4 * se, (m1, m0, s, est, mu, se)
    # the summed secure-aggregation release: μ = √S/σ_total (S-fold composition)
    M, Sn, sj = 5, 8, 0.7
    n = 60_000
    est = S.estimate_gdp_mu(S.simulate_summed_release(M, Sn, sj, 1.0, True, trials=n, seed=1),
                            S.simulate_summed_release(M, Sn, sj, 1.0, False, trials=n, seed=2))
    mu = math.sqrt(Sn) / (sj * math.sqrt(M))
    assert abs(est - mu) <= 4 * math.sqrt((2 / n) * (1 + mu**2 / 8))


def test_estimate_gdp_mu_se_formula_matches_spread():
    """The stated SE is the actual spread of the estimator over replications (4 SE on the sd ratio)."""
    rng = np.random.default_rng(5)
    reps, n, mu = 400, 2_000, 2.0
    x = rng.normal(mu, 1.0, (reps, n))
    y = rng.normal(0.0, 1.0, (reps, n))
    ests = np.array([S.estimate_gdp_mu(a, b) for a, b in zip(x, y)])
    se = math.sqrt((2 / n) * (1 + mu**2 / 8))
    # sd of a sample of `reps` values has relative SE ≈ 1/sqrt(2 (reps-1))
    assert abs(ests.std(ddof=1) / se - 1) <= 4 / math.sqrt(2 * (reps - 1))
    assert abs(ests.mean() - mu) <= 4 * se / math.sqrt(reps)


def test_estimate_gdp_mu_bad_inputs():
    with pytest.raises(ValueError, match="at least 2 samples"):
        S.estimate_gdp_mu([1.0], [0.0, 1.0])
    with pytest.raises(ValueError, match="zero variance"):
        S.estimate_gdp_mu([1.0, 1.0], [0.0, 0.0])
    with pytest.raises(ValueError, match="present"):
        S.estimate_gdp_mu([float("nan"), 1.0], [0.0, 1.0])
