"""Where the results stores live, and the names that mark them (the committed store's manifest and format)."""
from __future__ import annotations

import os
from pathlib import Path

__all__ = ["DEFAULT_RESULTS_DIR", "WORK_DIR", "DEFAULT_WORK_STORE", "MANIFEST", "FORMAT", "REGENERATE_COMMAND",
           "STORE_ENV", "shown_path"]

#: ``results/`` at the repository root: the committed store (``*.json.gz`` and ``MANIFEST.json``, see
#: :class:`~fedtrain.results.CommittedStore`) and, git-ignored, the working stores of sweeps.
DEFAULT_RESULTS_DIR = Path(__file__).resolve().parents[2] / "results"
#: Working stores of ``fedtrain sweep --preset`` (one JSON file per run, resumable; git-ignored).
WORK_DIR = DEFAULT_RESULTS_DIR / "work"
#: The working store of ``fedtrain sweep`` without ``--results``: ``fedtrain-results`` in the current folder
#: (never the committed store, which sweeps only read).
DEFAULT_WORK_STORE = Path("fedtrain-results")
#: The committed store's manifest; a folder holding one is refused as a working store.
MANIFEST = "MANIFEST.json"
#: The committed store's format; 2: rows keyed by configuration and data identity
#: (:func:`~fedtrain.results.row_key`); 3: each row's privacy ledger kept (its ε is recomputed on read) and every
#: row sealed by its digest (:mod:`fedtrain.store.claims`, :mod:`fedtrain.store.integrity`).
FORMAT = "fedbook-results-3"
#: The command that regenerates the committed store (what an out-of-date store's error message says).
REGENERATE_COMMAND = "make results  (= fedtrain sweep --preset paper --pack results)"
#: Environment variable naming another committed store for the chapters to read (default ``results/``).
STORE_ENV = "FEDBOOK_RESULTS_STORE"


def shown_path(path: str | os.PathLike) -> str:
    """``path`` as a store's ``repr`` shows it: relative to the repository when it lies inside it (``results``),
    else just its folder name, so that no machine's absolute path reaches a printed page or log."""
    p = Path(path).resolve()
    try:
        return p.relative_to(Path(__file__).resolve().parents[2]).as_posix() or "."
    except ValueError:
        return p.name
