"""A row's provenance: the engine version, the commit of the checkout and the command that computed it."""
from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

from fedtrain.config import ENGINE_VERSION

__all__ = ["git_commit", "provenance"]

_REPO = Path(__file__).resolve().parents[2]


def git_commit(repo: str | os.PathLike | None = None) -> str:
    """The checkout's commit (``git rev-parse HEAD``), with ``+dirty`` when ``fedtrain/`` or ``fedtheory/`` have
    uncommitted changes (then the commit alone does not reproduce the numbers); ``"unknown"`` outside git."""
    repo = Path(repo) if repo is not None else _REPO
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True,
                              timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "fedtrain", "fedtheory"], cwd=repo,
                               capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    if not head:
        return "unknown"
    return head + ("+dirty" if dirty else "")


def provenance(command: str | None = None, *, seconds: float | None = None, commit: str | None = None) -> dict:
    """A row's provenance: ``engine_version`` (:data:`~fedtrain.config.ENGINE_VERSION`), ``commit``
    (:func:`git_commit`), ``command`` (default: this process's command line) and ``seconds`` (the run's
    wall time; for a run trained in a batch of S by :func:`fedtrain.engine.run_many`, the batch's time / S)."""
    if command is None:
        command = " ".join(shlex.quote(a) for a in [Path(sys.argv[0]).name, *sys.argv[1:]]) if sys.argv else "python"
    return {"engine_version": ENGINE_VERSION, "commit": commit if commit is not None else git_commit(),
            "command": command, "seconds": None if seconds is None else float(seconds)}
