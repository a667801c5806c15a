"""pytest plugin: hand the notebooks that nbval executes to the book build, so that `make test`
executes each notebook once.

With ``FEDBOOK_NB_CACHE=<dir>`` set, every notebook whose code cells all ran and passed under nbval is
stored, with the outputs nbval received from the kernel, in the jupyter-cache at ``<dir>``.  The book
build (Jupyter Book 1 with ``execute_notebooks: cache``) then finds each notebook in that cache and
renders the stored outputs instead of executing it again.  jupyter-cache matches a notebook by the hash
of its code cells and kernelspec, so a notebook whose code changed after nbval ran is executed by the
build as usual; a notebook that failed or was skipped under nbval is never cached.

Use: ``FEDBOOK_NB_CACHE=_build/.jupyter_cache python -m pytest -p tools.nbval_cache --nbval-lax ... book``.
Without the variable the plugin does nothing.
"""
from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest

_STATE = "_fedbook_nb_state"


def _cache_dir() -> str | None:
    return os.environ.get("FEDBOOK_NB_CACHE") or None


def _state(nb_file: Any) -> dict:
    state = getattr(nb_file, _STATE, None)
    if state is None:
        state = {"ok": True, "ran": 0, "t0": time.perf_counter()}
        setattr(nb_file, _STATE, state)
    return state


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Any:
    outcome = yield
    if _cache_dir() is None or not hasattr(item, "test_outputs") or not hasattr(item, "cell"):
        return
    report = outcome.get_result()
    state = _state(item.parent)
    if report.when == "setup" and not report.passed:
        state["ok"] = False
    if report.when != "call":
        return
    if not report.passed:  # failed, or skipped: the notebook as a whole was not executed
        state["ok"] = False
        return
    state["ran"] += 1
    # item.cell is the cell object inside item.parent.nb: the notebook collects its own outputs.
    item.cell.outputs = list(item.test_outputs or [])
    item.cell.execution_count = state["ran"]
    for out in item.cell.outputs:
        if out.get("output_type") == "execute_result":
            out["execution_count"] = state["ran"]


def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    cache_dir = _cache_dir()
    if cache_dir is None or not hasattr(item, "cell"):
        return
    nb_file = item.parent
    if nextitem is not None and nextitem.parent is nb_file:
        return  # more cells of this notebook to come
    state = _state(nb_file)
    n_code = sum(1 for c in nb_file.nb.cells if c.cell_type == "code")
    if not state["ok"] or state["ran"] != n_code:
        return
    from ipykernel.ipkernel import IPythonKernel
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn

    # A kernel writes language_info into the notebooks it executes (the build's lexer for the code cells).
    # nbval ran the notebook in this environment's ipykernel (--nbval-current-env): record its value.
    nb_file.nb.metadata["language_info"] = dict(IPythonKernel.language_info)
    cache = get_cache(str(Path(cache_dir).resolve()))
    cache.cache_notebook_bundle(
        CacheBundleIn(nb_file.nb, str(Path(str(nb_file.fspath)).resolve()),
                      data={"execution_seconds": time.perf_counter() - state["t0"]}),
        check_validity=False, overwrite=True)
