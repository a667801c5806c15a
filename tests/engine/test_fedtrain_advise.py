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
