"""Shared pytest set-up: one torch thread (2-core machines), non-interactive matplotlib, data paths."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest


#: Long checks (half a minute to minutes on one core) run only with ``FEDBOOK_SLOW=1`` (``make slow`` runs just
#: them): retraining a committed row of a real-image grid, and repeats of a claim at more settings than the one that
#: ``make test`` recomputes.  Each marks with ``@slow`` (or ``pytest.param(..., marks=slow)``) a check whose faster
#: equivalent stays in ``make test``; such a test carries the marker ``slow`` too (``pytest -m slow``).
SLOW_ENV = "FEDBOOK_SLOW"
SLOW_REASON = f"a long check whose faster equivalent runs in make test: set {SLOW_ENV}=1 (make slow)"
slow = pytest.mark.skipif(os.environ.get(SLOW_ENV, "0").strip() != "1", reason=SLOW_REASON)


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: a long check run only with FEDBOOK_SLOW=1 (make slow); a faster "
                                       "equivalent runs in make test")


def pytest_collection_modifyitems(config, items):
    """Tests marked ``@slow`` also carry the marker ``slow``, so that ``make slow`` selects them (``-m slow``)."""
    for item in items:
        if any(m.kwargs.get("reason") == SLOW_REASON for m in item.iter_markers("skipif")):
            item.add_marker(pytest.mark.slow)

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
