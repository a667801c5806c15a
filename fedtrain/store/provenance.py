"""A row's provenance: the engine version, the commit of the checkout, the command that computed it and the machine."""
from __future__ import annotations

import os
import platform
import shlex
import subprocess
import sys
from pathlib import Path

from fedtrain.config import ENGINE_VERSION

__all__ = ["git_commit", "machine", "provenance", "COMMIT_ENV"]

#: Names the commit of a copy of a checkout (a machine the working tree was copied to, with no ``.git`` or a stale
#: one): :func:`git_commit` returns it, marked ``(copy)``, instead of asking git.
COMMIT_ENV = "FEDBOOK_COMMIT"

_REPO = Path(__file__).resolve().parents[2]


def git_commit(repo: str | os.PathLike | None = None) -> str:
    """The checkout's commit (``git rev-parse HEAD``), with ``+dirty`` when ``fedtrain/`` or ``fedtheory/`` have
    uncommitted changes (then the commit alone does not reproduce the numbers); ``"unknown"`` outside git.  Where
    ``$FEDBOOK_COMMIT`` (:data:`COMMIT_ENV`) is set, it wins, followed by `` (copy)``: a copy of a checkout may carry
    a ``.git`` older than its files."""
    repo = Path(repo) if repo is not None else _REPO
    named = os.environ.get(COMMIT_ENV, "").strip()
    if named:
        return f"{named} (copy)"
    if not (repo / ".git").exists():
        return "unknown"
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


def machine() -> str:
    """The machine a row was computed on, as numbers depend on it: architecture, CPU count and model, torch and
    Python versions (e.g. ``"x86_64, 2 CPUs (AMD EPYC 7B13), torch 2.13.0+cpu, Python 3.11.7"``)."""
    import torch

    model = platform.processor() or ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    cpus = os.cpu_count() or 0
    return (f"{platform.machine()}, {cpus} CPUs{f' ({model})' if model else ''}, torch {torch.__version__}, "
            f"Python {platform.python_version()}")


def provenance(command: str | None = None, *, seconds: float | None = None, commit: str | None = None) -> dict:
    """A row's provenance: ``engine_version`` (:data:`~fedtrain.config.ENGINE_VERSION`), ``commit``
    (:func:`git_commit`), ``command`` (default: this process's command line), ``seconds`` (the run's
    wall time; for a run trained in a batch of S by :func:`fedtrain.engine.run_many`, the batch's time / S) and
    ``machine`` (:func:`machine`)."""
    if command is None:
        command = " ".join(shlex.quote(a) for a in [Path(sys.argv[0]).name, *sys.argv[1:]]) if sys.argv else "python"
    return {"engine_version": ENGINE_VERSION, "commit": commit if commit is not None else git_commit(),
            "command": command, "seconds": None if seconds is None else float(seconds), "machine": machine()}
