"""fedtrain advise: the prediction reduces to Thm 6.3 on mean-estimation data; CLI --check runs a sweep."""
import io
import json
import math

import numpy as np
import pytest

from fedtrain.advise import nearest_grid_error, predict
from fedtrain.cli import main
from fedtrain.config import RunConfig
from fedtrain.data.gaussian import gaussian_mean_estimation


def test_prediction_on_mean_estimation_data_is_theorem_6_3():
    """Intercept-only data, non-private, GD run to convergence: σ̃² = σ̂²/n and τ̂² ≈ τ², so the common λ is
    σ²/(nτ²) = 0.04 up to the estimation error of τ̂² with K = 60 silos (~20 %) and the λ grid."""
    data = gaussian_mean_estimation(num_silos=60, n=100, tau=0.5, sigma=1.0, seed=3)
    cfg = RunConfig(dataset="gaussian", method="mrmtl", lr=0.5, rounds=200, batch_size=100, eps=math.inf)
    (p,) = predict(data, cfg, [math.inf])
    assert np.allclose(p.stat_var, [np.var(y, ddof=1) / 100 for y in data.train_y], rtol=1e-6)
    assert p.dp_var.max() == 0
    assert 0.04 / 1.6 < p.advice.common_lambda < 0.04 * 1.6


def test_prediction_grows_as_eps_shrinks():
    data = gaussian_mean_estimation(num_silos=20, n=100, tau=0.3, sigma=1.0, seed=1)
    cfg = RunConfig(dataset="gaussian", method="mrmtl", lr=0.1, rounds=20, batch_size=20, eps=1.0, delta=1e-3)
    lams = [p.advice.common_lambda for p in predict(data, cfg, [0.5, 2.0, math.inf])]
    assert lams[0] > lams[1] > lams[2]


def test_nearest_grid_error():
    curve = [(0.0, 3.0), (0.1, 2.0), (1.0, 1.0), (10.0, 4.0)]
    assert nearest_grid_error(curve, 0.8) == 1.0 and nearest_grid_error(curve, 0.0) == 3.0
    assert nearest_grid_error(curve, math.inf) == 4.0


def test_cli_advise_check_json(tmp_path):
    out = io.StringIO()
    import contextlib

    with contextlib.redirect_stdout(out):
        rc = main(["advise", "--dataset", "gaussian", "-D", "num_silos=8", "-D", "n=50", "--eps", "1,inf",
                   "--rounds", "3", "--batch-size", "10", "--delta", "1e-3", "--lam", "0,1", "--check", "--json",
                   "--results", str(tmp_path),
                   "--no-progress"])
    assert rc == 0
    d = json.loads(out.getvalue().strip().splitlines()[-1])
    assert len(d["advice"]) == 2 and d["advice"][0]["eps"] == 1.0
    assert all({"predicted_lambda", "swept_best_lambda", "swept_curve", "excess_at_predicted"} <= set(r)
               for r in d["advice"])
    assert all(r["swept_best_lambda"] in (0.0, 1.0) for r in d["advice"])


def test_cli_advise_rejects_other_methods():
    with pytest.raises(SystemExit):
        main(["advise", "--dataset", "gaussian", "--method", "fedavg", "--eps", "1"])


@pytest.mark.parametrize("method", ["ditto", "ifca", "fedavg"])
def test_predict_refuses_a_method_whose_privacy_plan_is_not_mrmtls(method):
    """Ditto runs an extra DP-SGD pass per round and IFCA private selections: MR-MTL's plan would calibrate
    other noise than the method's own, so the prediction refuses them instead of advising on the wrong plan."""
    data = gaussian_mean_estimation(num_silos=4, n=20, seed=0)
    cfg = RunConfig(dataset="gaussian", method=method, lr=0.1, rounds=2, batch_size=10, eps=1.0, delta=1e-3)
    with pytest.raises(ValueError, match=r"config.method must be 'mrmtl'.*" + method):
        predict(data, cfg, [1.0])


# ----------------------------------------------------------------------------------------------------
# the advisor's objective is the sweep's: silos weighted by their test counts
# ----------------------------------------------------------------------------------------------------
def test_sweep_weights_reproduce_the_engines_test_metric():
    """The weights the advisor averages the silos with give a run's reported test metric from its per-silo metrics
    (the engine's own aggregation, an independent computation); the plain mean does not (unequal test counts)."""
    from fedtheory.lambda_advisor import sweep_weights
    from fedtrain.engine import run
    from fedtrain.testing import tiny_federated

    data = tiny_federated("regression", num_silos=6, n_test=(5, 120), seed=4)
    cfg = RunConfig(dataset="tiny", method="mrmtl", lam=1.0, lr=0.1, rounds=3, batch_size=16, eps=math.inf)
    res = run(cfg, data)
    w = sweep_weights(data.test_sizes)
    assert abs(float(res.silo_metrics @ w) - res.test_metric) <= 1e-6 * res.test_metric
    assert abs(float(res.silo_metrics.mean()) - res.test_metric) > 1e-3 * res.test_metric


def _direction_silos(seed, K=6, d=3):
    from fedtheory.lambda_advisor import DirectionSilo

    rng = np.random.default_rng(seed)
    # silos of very different noise: the noisy ones want a large λ, the clean ones a small one
    return [DirectionSilo(rng.uniform(0.3, 3.0, d), np.linalg.qr(rng.normal(size=(d, d)))[0],
                          rng.uniform(0.001, 0.01, d) * (5.0 if k % 2 else 1.0)) for k in range(K)]


def test_advised_lambda_minimises_the_weighted_mean_of_the_silos_errors():
    """``advise_directions(weights=...)`` against a brute-force minimisation of ``Σ_k ω_k E_k(λ)`` on a dense grid of
    ``direction_errors``: the advised λ is at the dense grid's best up to its spacing and no worse; weighting the
    clean silos up moves the advice down (the plain mean would not)."""
    from fedtheory.lambda_advisor import advise_directions, direction_errors

    silos = _direction_silos(1)
    tau2 = 0.005
    dense = np.logspace(-3, 3, 1201)
    per = np.array([direction_errors(l, silos, tau2, dp_model="release") for l in dense])
    results = {}
    for name, w in (("uniform", np.ones(6)), ("clean heavy", np.array([10.0, 1.0] * 3))):
        adv = advise_directions(silos, tau2, dp_model="release", weights=w)
        obj = per @ (w / w.sum())
        best = dense[int(np.argmin(obj))]
        assert abs(np.log(adv.common_lambda / best)) <= np.log(dense[1] / dense[0]) + 1e-9, (name, adv.common_lambda, best)
        assert float(direction_errors(adv.common_lambda, silos, tau2, dp_model="release") @ (w / w.sum())) <= obj.min() + 1e-12
        results[name] = adv.common_lambda
    assert results["clean heavy"] < 0.8 * results["uniform"]
    assert advise_directions(silos, tau2, dp_model="release").common_lambda == results["uniform"]


def test_predict_weights_the_silos_by_test_counts():
    """``predict`` minimises the test-count weighted objective: its advice carries those weights, and with the test
    counts of one silo multiplied the prediction moves (it would not under the plain mean)."""
    from fedtrain.testing import tiny_federated

    data = tiny_federated("regression", num_silos=6, n_test=(5, 120), seed=2, tau=0.3, noise=0.5)
    cfg = RunConfig(dataset="tiny", method="mrmtl", lr=0.05, rounds=20, batch_size=16, eps=math.inf)
    (p,) = predict(data, cfg, [math.inf])
    assert np.allclose(p.directions.weights, data.test_sizes / data.test_sizes.sum(), rtol=0, atol=1e-15)


def test_bracket_extension_steps_past_an_edge_best_or_prediction():
    from fedtrain.advise import bracket_extension

    grid = [0.0, 0.1, 1.0, 10.0]
    assert bracket_extension(grid, 1.0, 2.0) == []                    # both interior
    assert bracket_extension(grid, 10.0, 2.0) == [20.0]               # best at the top edge
    assert bracket_extension(grid, 1.0, 31.0) == [20.0]               # prediction above the grid
    assert bracket_extension(grid, 0.0, 0.5) == []                    # λ = 0 is an end the grid cannot pass
    assert bracket_extension([0.1, 1.0], 0.1, 0.5) == [0.05]          # best at the lowest λ with nothing below
    assert bracket_extension(grid, 1.0, 0.01) == [0.05]               # prediction below the smallest positive λ
    assert bracket_extension(grid, 1.0, math.inf) == []               # FedAvg is not swept


def test_cli_advise_check_extends_its_grid_until_the_best_is_interior(tmp_path):
    """Non-private silos with a strong common part: MR-MTL's best λ lies above the grid given (0, 0.01); the check
    sweeps larger λ until the best is interior, and reports what it added."""
    import contextlib

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = main(["advise", "--dataset", "gaussian", "-D", "num_silos=8", "-D", "n=20", "-D", "tau=0.05",
                   "--eps", "inf", "--rounds", "20", "--lr", "0.5", "--batch-size", "20", "--delta", "1e-3",
                   "--lam", "0,0.01", "--check", "--json", "--no-progress"])
    assert rc == 0
    (r,) = json.loads(out.getvalue().strip().splitlines()[-1])["advice"]
    lams = r["swept_lams"]
    assert r["grid_extended_with"] and set(r["grid_extended_with"]) <= set(lams)
    assert lams[0] < r["swept_best_lambda"] < lams[-1]
    pred = float(r["predicted_lambda"])
    assert lams[0] <= pred <= lams[-1] or not math.isfinite(pred)


def test_drifted_walk_mean_radius_against_simulation():
    """The stationary mean distance of a walk with Gaussian steps and a constant pull toward the origin (the
    clip-together prox term's saturated pull), simulated, against ``dim·s²/(2·drift)``: within 4 standard errors
    plus 2 % for the diffusion limit (drift/s = 0.05 here; simulated 288.1 against 290)."""
    from fedtheory.lambda_advisor import drifted_walk_mean_radius

    rng = np.random.default_rng(0)
    dim, s, mu, walkers, burn, steps = 29, 1.0, 0.05, 400, 20_000, 4_000
    x = np.zeros((walkers, dim))
    radii = []
    for t in range(burn + steps):
        r = np.linalg.norm(x, axis=1, keepdims=True)
        x = x - mu * x / np.maximum(r, 1e-12) + s * rng.standard_normal(x.shape)
        if t >= burn and t % 40 == 0:
            radii.append(np.linalg.norm(x, axis=1).mean())
    radii = np.asarray(radii)
    se = radii.std(ddof=1) / np.sqrt(len(radii)) * 3   # samples 40 steps apart are correlated: a generous SE
    want = drifted_walk_mean_radius(dim, s, mu)
    assert abs(radii.mean() - want) <= 4 * se + 0.02 * want, (radii.mean(), want, se)


def test_prox_clip_saturation_formula():
    from fedtheory.lambda_advisor import drifted_walk_mean_radius, prox_clip_saturation

    B, D, eta, z, c = 32.0, 29, 0.01, 40.0, 1.0
    d = drifted_walk_mean_radius(D, eta * c * z / B, eta * c)
    assert np.isclose(prox_clip_saturation(B, D, eta, z), c / d, rtol=1e-12)
    with pytest.raises(ValueError, match="noise_multiplier"):
        prox_clip_saturation(B, D, eta, 0.0)


def test_check_report_records_the_stores_provenance(tmp_path, monkeypatch):
    """The --check-out report's commit is the results store's (fedtrain.store.provenance.git_commit): a copied tree's
    $FEDBOOK_COMMIT wins (then whether the tree was dirty is not known), and it is written through the project's
    atomic writer (no temporary file left; what load_check reads back)."""
    from fedtrain import advise
    from fedtrain.store.provenance import COMMIT_ENV, git_commit

    path = tmp_path / "sub" / "check.json"
    monkeypatch.delenv(COMMIT_ENV, raising=False)
    advise.write_check([{"eps": 1.0}], path, command="fedtrain advise ...", seconds=1.0, settings={"rounds": 3})
    doc = advise.load_check(path)
    here = git_commit()
    assert doc["commit"] == here and doc["advice"] == [{"eps": 1.0}] and doc["settings"] == {"rounds": 3}
    assert doc["uncommitted_changes"] is (None if here == "unknown" else here.endswith("+dirty"))
    monkeypatch.setenv(COMMIT_ENV, "c" * 40)
    advise.write_check([], path, command="c", seconds=0.0, settings={})
    doc = advise.load_check(path)
    assert doc["commit"] == "c" * 40 + " (copy)" and doc["uncommitted_changes"] is None
    assert sorted(p.name for p in path.parent.iterdir()) == ["check.json"]
    assert not hasattr(advise, "code_commit")  # one provenance function: the store's
