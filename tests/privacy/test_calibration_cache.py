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
    real = ledger.calibrate_many
    monkeypatch.setattr(ledger, "calibrate_many", lambda *a, **k: [z * factor for z in real(*a, **k)])
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


# ----------------------------------------------------------------------------------------------------
# the tolerance of the check: a cached z just outside it is refused, on both paths (one entry, a run's batch)
# ----------------------------------------------------------------------------------------------------
RATES = (0.05, 0.2, 0.6)


def _events_of(q):
    return lambda z: dpsgd_event(z, q, 300)


def _calibrate_paths(path, fns, target, delta, cache):
    """z of each map by ``calibrate`` one at a time, or by ``calibrate_many`` (the batched check a run uses)."""
    if path == "one":
        return [C.calibrate(f, target, delta, "rdp", cache=cache) for f in fns]
    return C.calibrate_many(fns, target, delta, "rdp", cache=cache)


def _plant(cache, fns, target, delta, values):
    """Write ``values`` as the cached z of each map's entry (the files an uncached calibration wrote)."""
    for f, z in zip(fns, values):
        key = C._key(f, target, delta, "rdp", 1e-3)
        path = C._path(cache, key)
        obj = json.loads(path.read_text())
        path.write_text(json.dumps({**obj, "noise_multiplier": z}))


@pytest.mark.parametrize("path", ["one", "many"])
def test_a_cached_z_whose_eps_is_one_percent_above_target_is_refused(cache, path):
    """A cached z slightly too small — its ε is about 1.01 × the target (the z the search returns for 1.01 × the
    target, an independent calibration) — is refused, recalibrated and rewritten; a check loosened to accept
    ε ≤ 1.5 × target, or one that only looks far outside (×0.1, 0, inf), serves it."""
    target, delta = 1.0, 1e-5
    fns = [_events_of(q) for q in RATES]
    acc = A.get_accountant("rdp")
    _forget()
    clean = _calibrate_paths(path, fns, target, delta, cache=True)   # writes the entries
    _forget()
    loose = [C.calibrate(f, 1.01 * target, delta, "rdp", cache=False) for f in fns]
    _forget()
    over = [acc.epsilon(f(z), delta) for f, z in zip(fns, loose)]
    assert all(1.0 * target < e <= 1.01 * target for e in over), over   # just above the target: not private enough
    assert all(z < c for z, c in zip(loose, clean))
    _plant(cache, fns, target, delta, loose)
    _forget()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = _calibrate_paths(path, fns, target, delta, cache=True)
    assert got == clean
    assert any("> target" in str(w.message) for w in caught), [str(w.message) for w in caught]
    assert [json.loads(C._path(cache, C._key(f, target, delta, "rdp", 1e-3)).read_text())["noise_multiplier"]
            for f in fns] == clean                                        # rewritten
    _forget()
    assert all(acc.epsilon(f(z), delta) <= target for f, z in zip(fns, got))


@pytest.mark.parametrize("path", ["one", "many"])
def test_a_cached_z_just_above_the_minimal_one_is_refused(cache, path):
    """The other side of the tolerance: z·(1 + 2·rtol) is private but not the search's z (ε at z·(1−rtol) is
    still ≤ the target), on both paths."""
    target, delta = 1.0, 1e-5
    fns = [_events_of(q) for q in RATES]
    _forget()
    clean = _calibrate_paths(path, fns, target, delta, cache=True)
    _plant(cache, fns, target, delta, [z * (1 + 2e-3) for z in clean])
    _forget()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert _calibrate_paths(path, fns, target, delta, cache=True) == clean
    assert any("larger than needed" in str(w.message) for w in caught)


def test_calibrate_many_is_calibrate_one_by_one(cache):
    """Cold (searching and writing) and warm (every entry verified in one batch): the same bits as ``calibrate``
    without any cache, for maps with and without selections and at two δ."""
    from fedtheory.privacy.silos import silo_event

    fns = [lambda z, q=q, s=s: silo_event(z, q, 150, s, 0.2) for q in (0.03, 0.3, 1.0) for s in (0, 3)]
    targets = [0.5, 1.0, 2.0, 4.0, 8.0, 1.0]
    deltas = [1e-5, 1e-3] * 3
    _forget()
    fresh = [C.calibrate(f, t, d, "rdp", cache=False) for f, t, d in zip(fns, targets, deltas)]
    for _ in range(2):   # cold, then warm
        _forget()
        assert C.calibrate_many(fns, targets, deltas, "rdp", cache=True) == fresh


def _random_events(rng, n):
    from fedtheory.privacy.events import ComposedDpEvent, GaussianDpEvent, ZCDpEvent
    from fedtheory.privacy.silos import silo_event

    out = [silo_event(float(rng.uniform(0.3, 40)), float(rng.uniform(1e-4, 1.0)), int(rng.integers(1, 20_000)),
                      int(rng.integers(0, 4)), float(rng.uniform(0, 1))) for _ in range(n)]
    out += [ComposedDpEvent([dpsgd_event(2.0, 0.1, 100), dpsgd_event(5.0, 0.02, 1000), GaussianDpEvent(30.0)]),
            ZCDpEvent(0.01, 0.0), dpsgd_event(1.0, 0.5, 0), dpsgd_event(0.0, 0.5, 3), dpsgd_event(1e5, 1e-6, 10)]
    return out


def test_batched_epsilons_are_the_accountants_bit_for_bit():
    """``Accountant.epsilons`` (one batch: shared series coefficients, fractional orders pruned where their
    conversion term alone exceeds the integer orders' ε) against ``epsilon`` one event at a time: equal floats,
    on random DP-SGD/selection events, compositions, degenerate events; and the batched curves against the
    per-pair series."""
    from fedtheory.privacy.rdp import DEFAULT_ORDERS, _rdp_numpy, rdp_many

    rng = np.random.default_rng(7)
    events = _random_events(rng, 60)
    for delta in (1e-5, 1e-3):
        _forget()
        batched = A.get_accountant("rdp").epsilons(events, delta)
        _forget()
        one = [A.get_accountant("rdp").epsilon(e, delta) for e in events]
        assert batched == one
    qs, zs = rng.uniform(1e-4, 0.999, 30), rng.uniform(0.3, 60, 30)
    assert np.array_equal(rdp_many(qs, zs, DEFAULT_ORDERS),
                          np.array([_rdp_numpy(float(q), float(z), DEFAULT_ORDERS) for q, z in zip(qs, zs)]))
