"""The committed FedHDP claim runs (``book/data/fedhdp_claims.json``) reproduce: a few rows, drawn at random with a
fixed seed (one per method), are retrained from their stored configs and must give the stored metrics (rel 1e-5:
float32 summation order may differ across CPUs)."""
from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest

from fedtrain.encoding import decode_float
from fedtrain.clientdp.config import FedHDPConfig
from fedtrain.clientdp.trainer import train

CLAIMS = Path(__file__).resolve().parents[2] / "book" / "data" / "fedhdp_claims.json"


def _sample() -> list[dict]:
    runs = json.loads(CLAIMS.read_text())["runs"]
    rng = random.Random(20261124)
    by_method: dict[str, list[dict]] = {}
    for r in runs:
        by_method.setdefault(r["config"]["method"], []).append(r)
    return [rng.choice(rows) for _, rows in sorted(by_method.items())]


@pytest.mark.parametrize("row", _sample(), ids=lambda r: f"{r['config']['method']}-{r['config']['dataset']}-"
                                                        f"r{r['config']['ratio']}-s{r['config']['seed']}")
def test_a_committed_claim_run_reproduces(row):
    result = train(FedHDPConfig.from_dict(row["config"])).to_dict()
    for name, stored in row["metrics"].items():
        got, stored = decode_float(result["metrics"][name]), decode_float(stored)  # NaN/inf are stored as text
        if math.isnan(stored):
            assert math.isnan(got), name
        else:
            assert got == pytest.approx(stored, rel=1e-5, abs=1e-9), (name, got, stored)
