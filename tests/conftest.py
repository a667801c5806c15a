"""Shared pytest set-up: one torch thread (2-core machines), non-interactive matplotlib, data paths."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest


#: Tests that retrain a committed row of a real-image grid (minutes on one core) run only with ``FEDBOOK_SLOW=1``.
SLOW_ENV = "FEDBOOK_SLOW"
slow = pytest.mark.skipif(os.environ.get(SLOW_ENV, "0").strip() != "1",
                          reason=f"retrains a committed real-image run (minutes on one core): set {SLOW_ENV}=1")

os.environ.setdefault("MPLBACKEND", "Agg")
os.environ.setdefault("OMP_NUM_THREADS", "1")
# the on-disk calibration cache (fedtheory.privacy.calibration) of the test session: a fresh folder,
# never the user's cache (subprocesses, e.g. CLI tests, inherit it)
os.environ["FEDBOOK_CACHE_DIR"] = tempfile.mkdtemp(prefix="fedbook-test-cache-")

try:  # torch is a dependency, but keep pure-theory tests usable without it
    import torch

    torch.set_num_threads(1)
except ImportError:  # pragma: no cover
    pass

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """``../shared`` beside the checkout (always present in CI)."""
    return SHARED


@pytest.fixture(scope="session")
def school_path() -> Path:
    """The real School dataset; tests that need it are skipped with a reason if it is absent."""
    path = SHARED / "data" / "school" / "school.mat"
    if not path.exists():
        pytest.skip(f"real School data not found at {path}")
    return path


def store_that_must_not_train(rows: list, folder: Path, monkeypatch: pytest.MonkeyPatch, what: str):
    """A results store holding the client-level ``rows`` (dicts of a saved FedHDP file), with FedHDP's trainer
    replaced by one that fails the test: ``what`` is served from the store or it is an error."""
    from fedtrain.clientdp import trainer
    from fedtrain.results import ResultsStore

    store = ResultsStore(folder)
    for r in rows:
        store.put(trainer.FedHDPResult.from_dict(r))

    def no_training(*args, **kwargs):
        raise AssertionError(f"{what} trained a stored run")

    monkeypatch.setattr(trainer, "train", no_training)
    return store
