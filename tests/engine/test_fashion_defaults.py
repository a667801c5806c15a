"""The real Fashion-MNIST datasets' default η: where it comes from (the committed regime probes) and that a first
run with it learns (RunConfig's η = 0.01 left the ConvNet at chance: 0.10 after 10 rounds)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from fedtrain.config import RunConfig, paper_defaults
from fedtrain.paper import FASHION_LR, LR_GRID, PAPER_DEFAULTS

PROBES = Path(__file__).resolve().parents[2] / "benchmarks" / "regime_probes.json"


def test_default_eta_is_the_probes_best_private_eta_at_the_datasets_clip():
    rows = json.loads(PROBES.read_text())["rows"]
    clip = PAPER_DEFAULTS["rotated-masked-fashion"]["clip"]
    pool = [r for r in rows if r["mask_ratio"] == 0.0 and r["train_per_silo"] == 500 and r["clip"] == clip
            and r["lr"] in LR_GRID]
    assert len({r["lr"] for r in pool}) >= 2  # a choice among at least two η
    best = max(pool, key=lambda r: r["acc_private"])
    assert best["lr"] == FASHION_LR
    for name in ("rotated-masked-fashion", "hetero-fashion"):
        assert paper_defaults(name, "mrmtl")["lr"] == FASHION_LR
        assert RunConfig(**{**paper_defaults(name, "mrmtl"), "dataset": name, "method": "mrmtl"}).lr == FASHION_LR


def test_a_first_run_with_the_default_eta_learns():
    """MR-MTL λ = 1, ε = 8, 10 rounds (the command that stayed at chance), on 4 silos of 400 images and 100 test
    images each: 400 test images, so chance (0.10) has a standard error of 0.015; the default must beat it by 0.10."""
    from fedtrain.engine import run
    from fedtrain.sweep import load_config_data

    c = RunConfig(**{**paper_defaults("rotated-masked-fashion", "mrmtl"), "dataset": "rotated-masked-fashion",
                     "method": "mrmtl", "lam": 1.0, "eps": 8.0, "rounds": 10,
                     "dataset_options": {"num_silos": 4, "train_per_silo": 400, "test_per_silo": 100}})
    try:
        data = load_config_data(c)
    except FileNotFoundError as exc:  # the Fashion-MNIST files are a system package (dataset-fashion-mnist)
        pytest.skip(str(exc))
    r = run(c, data)
    assert max(r.eps_spent) <= 8.0 + 1e-9
    assert r.test_metric >= 0.20, r.test_metric
