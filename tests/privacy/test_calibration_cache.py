"""The calibration cache cannot weaken a run's privacy: a cached noise multiplier is a hint that the accountant
verifies, the key holds every input of the calibration, the ε a run reports comes from its ledger, and a run
that cannot certify its target stops and stores nothing.

The tampering cases go through the command line (``fedtrain run``) in a temporary cache folder
(``FEDBOOK_CACHE_DIR``, never the user's cache).  Privacy here: silo-specific sample-level DP,
add/remove-one record of a silo, RDP accountant unless named.
"""
from __future__ import annotations

import contextlib
import io
import json
import math
import warnings

import numpy as np
import pytest

from fedtheory.privacy import accountants as A
from fedtheory.privacy import calibration as C
from fedtheory.privacy.events import dpsgd_event
from fedtrain import ledger
from fedtrain.cli import main

# a small fast run: 6 silos of the School stand-in, 2 rounds, ε = 1 per silo
ARGS = ["run", "--dataset", "school-standin", "-D", "num_silos=6", "--method", "local", "--eps", "1",
        "--rounds", "2", "--json", "--no-progress"]


def _forget():
    """Drop the in-process memos, so that the next calibration reads the disk cache (or searches)."""
    C._MEMO.clear()
    A._MEMO.clear()


def _cli(argv) -> tuple[int, dict | None, str, list[str]]:
    """``fedtrain`` in this process: (status, JSON output or None, stderr, messages of RuntimeWarnings)."""
    out, err = io.StringIO(), io.StringIO()
    _forget()
    with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stdout(out), \
            contextlib.redirect_stderr(err):
        warnings.simplefilter("always")
        try:
            status = main(list(argv))
        except SystemExit as exc:
            status = exc.code
    text = out.getvalue().strip()
    msgs = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)
            and "calibration cache" in str(w.message)]
    return status, (json.loads(text) if text else None), err.getvalue(), msgs


@pytest.fixture
def cache(tmp_path, monkeypatch):
    folder = tmp_path / "calibration"
    monkeypatch.setenv("FEDBOOK_CACHE_DIR", str(folder))
    C._WARNED_FOLDERS.clear()
    yield folder
    _forget()


def _edit(folder, change):
    files = sorted(folder.glob("*.json"))
    assert files
    for f in files:
        obj = json.loads(f.read_text())
        change(obj)
        f.write_text(json.dumps(obj))
    return files


def _recomputed(out) -> np.ndarray:
    """ε per silo recomputed by the accountant from the run's noise multipliers and its silos' plan."""
    from fedtrain.data.registry import load_dataset

    data = load_dataset("school-standin", num_silos=6)
    n = data.train_sizes
    q, steps = ledger.sample_rates(n, 32), ledger.steps_per_epoch(n, 32) * 2
    acc = A.get_accountant("rdp")
    _forget()
    return np.array([acc.epsilon(dpsgd_event(float(z), float(qq), int(t)), float(d))
                     for z, qq, t, d in zip(out["noise_multipliers"], q, steps, out["delta"])])


@pytest.fixture
def clean(cache):
    status, out, err, msgs = _cli(ARGS)
    assert status == 0 and not msgs, (status, err, msgs)
    assert out["eps_spent_max"] <= 1.0
    return out


def _same_run(out, clean):
    for k in ("noise_multipliers", "eps_spent", "mean"):
        assert out[k] == clean[k], k


@pytest.mark.parametrize("tamper,reason", [
    (lambda o: o.update(noise_multiplier=o["noise_multiplier"] * 0.1), "> target"),   # too little noise
    (lambda o: o.update(noise_multiplier=0.0), "eps=inf"),                              # no noise at all
    (lambda o: o.update(noise_multiplier=math.inf), "not finite"),                      # not a number
    (lambda o: o.update(noise_multiplier="3.0"), "not a float"),                        # not a float
])
def test_a_tampered_noise_multiplier_is_discarded_recalibrated_and_rewritten(cache, clean, tamper, reason):
    """A cached z×0.1 would train with a tenth of the noise while reporting ε = 1 (true ε ≫ 1), and z = 0 without
    noise: each is discarded with one warning line, and the run is the one of a clean cache."""
    files = _edit(cache, tamper)
    status, out, err, msgs = _cli(ARGS)
    assert status == 0, err
    _same_run(out, clean)
    assert len(msgs) == 1 and reason in msgs[0] and "recalibrating" in msgs[0], msgs
    assert np.all(_recomputed(out) <= 1.0)
    for f in files:  # rewritten with the calibrated value
        z = json.loads(f.read_text())["noise_multiplier"]
        assert isinstance(z, float) and z in clean["noise_multipliers"]
    status, again, _, msgs = _cli(ARGS)  # the rewritten entries are trusted again: no warning
    assert status == 0 and not msgs
    _same_run(again, clean)


def test_a_cached_epsilon_field_never_changes_the_reported_epsilon(cache, clean):
    """The ε a run reports is the accountant's, from what ran: a cached ``epsilon`` field is never read."""
    _edit(cache, lambda o: o.update(epsilon=0.01))
    status, out, err, msgs = _cli(ARGS)
    assert status == 0 and not msgs, (err, msgs)
    _same_run(out, clean)
    assert out["eps_spent"] == list(_recomputed(out))  # the ledger's accounting, bit for bit


def test_more_noise_than_needed_is_discarded_and_recalibrated(cache, clean):
    """A larger cached z would be private but would train another run than an uncached calibration: it is not
    minimal within rtol (ε at z·(1−rtol) is still ≤ the target), so it is discarded, recalibrated and rewritten,
    and the run is the clean one."""
    files = _edit(cache, lambda o: o.update(noise_multiplier=o["noise_multiplier"] * 2))
    status, out, err, msgs = _cli(ARGS)
    assert status == 0, err
    _same_run(out, clean)
    assert len(msgs) == 1 and "larger than needed" in msgs[0] and "recalibrating" in msgs[0], msgs
    for f in files:
        assert json.loads(f.read_text())["noise_multiplier"] in clean["noise_multipliers"]


@pytest.mark.parametrize("accountant", ["rdp", "pld"])
def test_minimality_check_accepts_the_search_and_rejects_just_above_it(cache, accountant):
    """The check compares two independent things: the search's own z passes it (ε at z·(1−rtol) > target),
    and z·(1+2·rtol), still private, fails it; a cache holding the larger one gives the uncached z."""
    target, delta, rtol = 1.0, 1e-5, 1e-3
    _forget()
    z = C.calibrate(_event, target, delta, accountant, cache=False)
    assert C._verify(z, _event, target, delta, accountant, rtol) is None
    bigger = z * (1 + 2 * rtol)
    assert A.get_accountant(accountant).epsilon(_event(bigger), delta) <= target  # private...
    assert "larger than needed" in C._verify(bigger, _event, target, delta, accountant, rtol)  # ...but refused
    _forget()
    assert C.calibrate(_event, target, delta, accountant, cache=True) == z
    (path,) = cache.glob("*.json")
    obj = json.loads(path.read_text())
    path.write_text(json.dumps({**obj, "noise_multiplier": bigger}))
    _forget()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert C.calibrate(_event, target, delta, accountant, cache=True) == z
    assert any("larger than needed" in str(w.message) for w in caught)
    assert json.loads(path.read_text())["noise_multiplier"] == z


@pytest.mark.parametrize("factor,where", [(0.1, "spent eps"), (0.0, "before training")])
def test_a_run_that_cannot_certify_its_target_stops_and_stores_nothing(cache, tmp_path, monkeypatch, factor, where):
    """Defence in depth: even if the calibration returned too little noise (here: patched), the engine's own
    checks stop the run (one-line error, exit status 1) and the results store stays empty."""
    real = ledger.calibrate
    monkeypatch.setattr(ledger, "calibrate", lambda *a, **k: real(*a, **k) * factor)
    store = tmp_path / "store"
    status, out, err, _ = _cli(ARGS + ["--results", str(store)])
    assert status == 1 and out is None
    assert err.startswith("fedtrain: error: privacy: silo") and where in err and err.count("\n") == 1, err
    assert "add/remove-one record" in err and "rdp accountant" in err
    from fedtrain.results import ResultsStore

    assert ResultsStore(store).keys() == []


# ----------------------------------------------------------------------------------------------------
# the key holds every input of the calibration
# ----------------------------------------------------------------------------------------------------
def _event(z):
    return dpsgd_event(z, 0.05, 300)


@pytest.mark.parametrize("accountant", ["rdp", "pld"])
def test_key_separates_delta_and_target(cache, accountant):
    """In one process with the cache on, the same event at two δ and two targets: each z equals a fresh
    calibration without any cache and meets its own (ε, δ) (a key without δ or without the target fails)."""
    cases = [(t, d) for t in (1.0, 2.0) for d in (1e-5, 1e-3)]
    fresh = {}
    for t, d in cases:
        _forget()
        fresh[t, d] = C.calibrate(_event, t, d, accountant, cache=False)
    assert len(set(fresh.values())) == 4  # the four calibrations differ
    _forget()
    for rnd in range(2):  # first round: the in-process memo; second: the disk cache (memo cleared each time)
        for t, d in cases:
            if rnd:
                _forget()
            z = C.calibrate(_event, t, d, accountant, cache=True)
            assert z == fresh[t, d], (t, d, z, fresh[t, d])
            eps = A.get_accountant(accountant).epsilon(_event(z), d)
            assert 0.99 * t <= eps <= t
    assert len(list(cache.glob("*.json"))) == 4


def test_key_names_the_accountant_and_its_settings(cache):
    key = C._key(_event, 1.0, 1e-5, "pld", 1e-3)
    assert key["accountant"] == "pld" and key["accountant_settings"] == A.get_accountant("pld").description
    assert "dp-accounting" in key["versions"] and key["versions"]["calibration"] == C.CALIBRATION_VERSION
    assert {"target_eps", "delta", "rtol", "event_at_z1", "event_at_z3"} <= set(key)


# ----------------------------------------------------------------------------------------------------
# an unwritable cache folder
# ----------------------------------------------------------------------------------------------------
def test_an_unwritable_cache_folder_warns_once(tmp_path, monkeypatch):
    """One warning per folder and process, not one per calibration (a School run makes 79)."""
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("FEDBOOK_CACHE_DIR", str(blocker / "calibration"))
    C._WARNED_FOLDERS.clear()
    status, out, err, msgs = _cli(ARGS)
    assert status == 0 and out["eps_spent_max"] <= 1.0
    assert len(msgs) == 1 and "could not write" in msgs[0], msgs
    assert len(set(out["noise_multipliers"])) > 1  # several calibrations ran, one warning in all
