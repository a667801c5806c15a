"""fedtrain.store.provenance: the commit a row names (git's, or the one $FEDBOOK_COMMIT names for a copy of a
checkout) and the machine it records."""
from __future__ import annotations

import platform

import torch

from fedtrain.store.provenance import COMMIT_ENV, git_commit, machine, provenance


def test_the_named_commit_of_a_copy_wins_and_is_marked(monkeypatch, tmp_path):
    monkeypatch.delenv(COMMIT_ENV, raising=False)
    assert git_commit(tmp_path) == "unknown"  # no .git, nothing named
    here = git_commit()
    assert here != "unknown" and " (copy)" not in here  # this checkout: git's HEAD
    monkeypatch.setenv(COMMIT_ENV, "d2603cc")
    assert git_commit(tmp_path) == git_commit() == "d2603cc (copy)"  # a copy, with or without a (stale) .git
    assert provenance("cmd")["commit"] == "d2603cc (copy)"


def test_the_machine_names_architecture_cpus_torch_and_python():
    m = machine()
    assert m.startswith(f"{platform.machine()}, ") and " CPUs" in m
    assert f"torch {torch.__version__}" in m and m.endswith(f"Python {platform.python_version()}")
    assert provenance("cmd", seconds=1.5)["machine"] == m
