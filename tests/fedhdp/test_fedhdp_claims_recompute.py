"""The committed FedHDP claim runs on the digit stand-in (``results/fedhdp-claims-digits.json.gz``, read through the
committed store like every chapter's rows) reproduce: a few rows, drawn at random with a fixed seed (one per method),
are retrained from their stored configs and must give the stored metrics (rel 1e-5: float32 summation order may
differ across CPUs) and the stored privacy per group exactly."""
from __future__ import annotations

import math
import random

import pytest

from fedtrain.book_results import committed_store
from fedtrain.encoding import decode_float
from fedtrain.clientdp.config import FedHDPConfig
from fedtrain.clientdp.trainer import train

def _sample() -> list[dict]:
    runs = committed_store().client_rows("fedhdp-claims-digits")
    rng = random.Random(20261124)
    by_method: dict[str, list[dict]] = {}
    for r in runs:
        by_method.setdefault(r["config"]["method"], []).append(r)
    return [rng.choice(rows) for _, rows in sorted(by_method.items())]


@pytest.mark.parametrize("row", _sample(), ids=lambda r: f"{r['config']['method']}-{r['config']['dataset']}-"
                                                        f"r{r['config']['ratio']}-s{r['config']['seed']}")
def test_a_committed_claim_run_reproduces(row):
    result = train(FedHDPConfig.from_dict(row["config"])).to_dict()
    assert result["privacy"]["groups"] == row["privacy"]["groups"]  # ε per group, from the ledger, bit for bit
    for name, stored in row["metrics"].items():
        got, stored = decode_float(result["metrics"][name]), decode_float(stored)  # NaN/inf are stored as text
        if math.isnan(stored):
            assert math.isnan(got), name
        else:
            assert got == pytest.approx(stored, rel=1e-5, abs=1e-9), (name, got, stored)
