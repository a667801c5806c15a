"""`fedtrain run` imports only what a run needs, so that a single run starts fast.

A run with a warm calibration cache must not import sympy, matplotlib, opacus, ray, the ``dp_accounting``
package (its ``__init__`` pulls its PLD/RDP accountants and scipy.stats/signal; the run uses only its
event classes, :func:`fedtheory.privacy.events._dp_event_module`) or scipy.optimize (the calibration search).
It does import scipy.special: the RDP accountant verifies every cached noise multiplier and computes ε
spent from the ledger (a cache is a hint, never a fact), one evaluation per distinct silo.  Checked in a fresh
interpreter, since the test process has imported everything.  Times are measured in
benchmarks/bench_single_run.py, not here.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

HEAVY = ("sympy", "matplotlib", "opacus", "ray", "dp_accounting", "dp_accounting.pld", "scipy.stats",
         "scipy.optimize")

CODE = """
import contextlib, io, json, sys
from fedtrain.cli import main
buf = io.StringIO()
with contextlib.redirect_stdout(buf):
    status = main(["run", "--dataset", "school-standin", "--method", "mrmtl", "--eps", "3", "--lam", "0.1",
                   "--lr", "0.03", "--rounds", "2", "--json", "--no-progress"])
out = json.loads(buf.getvalue())
print(json.dumps({"status": status, "heavy": [m for m in %r if m in sys.modules],
                  "eps_spent": out["eps_spent"], "mean": out["mean"]}))
""" % (HEAVY,)


def _run(cache):
    env = dict(os.environ, FEDBOOK_CACHE_DIR=str(cache), OMP_NUM_THREADS="1")
    out = subprocess.run([sys.executable, "-c", CODE], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    cache = tmp_path_factory.mktemp("calibration-cache")
    cold = _run(cache)  # calibrates and fills the cache
    cold["cached"] = len(list(cache.glob("*.json")))
    warm = _run(cache)
    return cold, warm


def test_a_warm_run_imports_no_heavy_module(runs):
    _, warm = runs
    assert warm["status"] in (0, None)
    assert warm["heavy"] == [], f"`fedtrain run` imported {warm['heavy']}"


def test_a_warm_run_reports_the_same_numbers(runs):
    """A warm run (cached noise multipliers, verified) reports the cold run's numbers bit for bit."""
    cold, warm = runs
    assert cold["cached"] > 0 and "sympy" not in cold["heavy"]  # the cold run did calibrate, never with sympy
    assert warm["eps_spent"] == cold["eps_spent"] and warm["mean"] == cold["mean"]


def test_event_classes_are_dp_accountings():
    """The events loaded without the package's __init__ are dp_accounting's own classes."""
    import dp_accounting

    from fedtheory.privacy import events

    assert events.GaussianDpEvent is dp_accounting.GaussianDpEvent
    assert events.DpEvent is dp_accounting.dp_event.DpEvent
    assert isinstance(events.dpsgd_event(1.0, 0.5, 3), dp_accounting.SelfComposedDpEvent)
