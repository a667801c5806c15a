"""The privacy ledger's theory side: events, the accountant registry, the one deterministic calibration
(same bits in a fresh process and after unrelated calibrations), its on-disk cache, and edge cases of ε."""
from __future__ import annotations

import json
import math
import multiprocessing as mp
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

from fedtheory.privacy import accountants as A
from fedtheory.privacy import calibration as C
from fedtheory.privacy import epsilon, gaussian_epsilon, noise_multiplier, silo_noise_multipliers
from fedtheory.privacy.events import (ComposedDpEvent, GaussianDpEvent, NoOpDpEvent, PoissonSampledDpEvent,
                                      SelfComposedDpEvent, ZCDpEvent, compose, dpsgd_event, selection_event)


def _forget():
    """Drop the in-process memos so that the next calibration really searches."""
    C._MEMO.clear()
    A._MEMO.clear()


# ----------------------------------------------------------------------------------------------------
# determinism: the same inputs give the same bits, whatever ran before
# ----------------------------------------------------------------------------------------------------
_CASES = [(1.0, 1e-5, 0.01, 1000, "rdp"), (0.3, 1e-4, 0.2, 300, "rdp"), (2.0, 1e-5, 0.05, 200, "pld")]


def _fresh_process_bits(cases) -> list[str]:
    code = ("import json, sys\nfrom fedtheory.privacy import noise_multiplier\n"
            "print(json.dumps([noise_multiplier(*c).hex() for c in json.loads(sys.argv[1])]))")
    env = dict(os.environ, FEDBOOK_CACHE_DIR="off")
    out = subprocess.run([sys.executable, "-c", code, json.dumps(cases)], capture_output=True, text=True, env=env,
                         check=True, timeout=300)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_calibration_is_identical_in_a_fresh_process_and_after_unrelated_calibrations():
    fresh = _fresh_process_bits(_CASES)
    _forget()
    # unrelated calibrations first (nearby problems: what the old warm start fed on)
    for e, d, q, t in [(0.9, 1e-5, 0.011, 990), (4.0, 1e-5, 0.01, 1000), (1.0, 1e-6, 0.3, 50), (0.3, 1e-4, 0.19, 310)]:
        noise_multiplier(e, d, q, t)
    silo_noise_multipliers([1.0, 2.0], 1e-4, [40, 400], 16, rounds=20)
    after = [noise_multiplier(*c).hex() for c in _CASES]
    assert after == fresh
    _forget()  # and once more in reverse order, memos dropped
    assert [noise_multiplier(*c).hex() for c in reversed(_CASES)] == list(reversed(fresh))


def test_per_silo_calibration_does_not_depend_on_the_other_silos():
    n = np.array([35, 80, 140, 36, 500])
    together = silo_noise_multipliers(1.0, 1e-4, n, 16, rounds=30)
    _forget()
    alone = np.array([silo_noise_multipliers(1.0, 1e-4, [v], 16, rounds=30)[0] for v in n[::-1]])[::-1]
    assert together.tobytes() == alone.tobytes()


# ----------------------------------------------------------------------------------------------------
# the one-sided guarantee, through every accountant
# ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("accountant", A.ACCOUNTANTS)
@pytest.mark.parametrize("target,q,steps", [(0.5, 0.02, 400), (4.0, 0.1, 50), (1.0, 1.0, 5)])
def test_calibrate_certifies_eps_below_and_close_to_target(accountant, target, q, steps):
    acc = A.get_accountant(accountant)
    z = C.calibrate(lambda s: dpsgd_event(s, q, steps), target, 1e-5, accountant)
    eps = acc.epsilon(dpsgd_event(z, q, steps), 1e-5)
    assert 0.99 * target <= eps <= target
    # the rdp accountant is independent of dp_accounting's own RDP accountant: cross-check the certificate
    if accountant == "rdp":
        from dp_accounting.rdp import RdpAccountant

        ref = RdpAccountant(list(A.DEFAULT_ORDERS))
        ref.compose(dpsgd_event(z, q, steps))
        assert ref.get_epsilon(1e-5) <= target * (1 + 1e-3)


def test_selections_compose_in_rdp_only_and_cost_noise():
    sel = selection_event(0.06, 10)
    assert sel == ZCDpEvent(rho=10 * 0.06 ** 2 / 8)
    event = lambda s: compose(dpsgd_event(s, 0.1, 300), sel)  # noqa: E731
    z = C.calibrate(event, 1.0, 1e-5, "rdp")
    assert z > C.calibrate(lambda s: dpsgd_event(s, 0.1, 300), 1.0, 1e-5, "rdp")
    assert A.get_accountant("rdp").epsilon(event(z), 1e-5) <= 1.0
    for name in ("pld", "prv"):
        with pytest.raises(ValueError, match="rdp"):
            A.get_accountant(name).epsilon(event(z), 1e-5)


def test_events_and_registry():
    e = dpsgd_event(1.5, 0.1, 20)
    assert e == SelfComposedDpEvent(PoissonSampledDpEvent(0.1, GaussianDpEvent(1.5)), 20)
    assert dpsgd_event(1.5, 1.0, 1) == GaussianDpEvent(1.5)
    assert isinstance(dpsgd_event(1.5, 0.1, 0), NoOpDpEvent)
    assert isinstance(compose(e, selection_event(0.1, 2)), ComposedDpEvent)
    assert A.ACCOUNTANTS == ("rdp", "pld", "prv")
    with pytest.raises(ValueError, match="accountant"):
        A.get_accountant("gdp")
    with pytest.raises(ValueError, match="target_eps"):
        C.calibrate(lambda s: e, 0.0, 1e-5)
    with pytest.raises(ValueError, match="event_of_noise"):
        C.calibrate(e, 1.0, 1e-5)
    # the same mechanism gives the same ε as the DP-SGD wrapper, for every accountant
    for name in A.ACCOUNTANTS:
        assert A.get_accountant(name).epsilon(e, 1e-5) == epsilon(1.5, 1e-5, 0.1, 20, name)


# ----------------------------------------------------------------------------------------------------
# epsilon on valid edge inputs
# ----------------------------------------------------------------------------------------------------
def test_epsilon_edge_inputs_do_not_raise():
    for q in (1e-10, 1e-12, 1e-16):
        e = epsilon(1.0, 1e-5, q, 100)
        assert 0 <= e <= epsilon(1.0, 1e-5, 1e-3, 100)
    for sigma in (3e5, 1e6, 1e9):
        assert 0 <= epsilon(sigma, 1e-5, 0.1, 100) < 0.01
    for acc in A.ACCOUNTANTS:
        assert epsilon(math.inf, 1e-5, 0.1, 100, acc) == 0.0  # as documented: infinite noise releases nothing


def test_prv_at_full_sampling_is_quiet_and_matches_the_exact_gaussian():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        e = epsilon(2.0, 1e-5, 1.0, 10, "prv")
    assert not [w for w in caught if issubclass(w.category, RuntimeWarning)]
    # 10 Gaussian releases with multiplier z = one release with multiplier z/sqrt(10) (exact, Balle & Wang)
    exact = gaussian_epsilon(2.0 / math.sqrt(10), 1e-5)
    assert exact - 1e-6 <= e <= exact + 0.02  # PRV's upper bound, eps_error = 0.01


# ----------------------------------------------------------------------------------------------------
# the on-disk cache
# ----------------------------------------------------------------------------------------------------
def _event(s):
    return dpsgd_event(s, 0.03, 700)


def test_disk_cache_is_bit_identical_and_skips_the_search(tmp_path, monkeypatch):
    monkeypatch.setenv("FEDBOOK_CACHE_DIR", str(tmp_path))
    _forget()
    uncached = C.calibrate(_event, 0.7, 1e-5, "rdp", cache=False)
    _forget()
    first = C.calibrate(_event, 0.7, 1e-5, "rdp", cache=True)
    files = list(tmp_path.glob("*.json"))
    assert len(files) == 1 and first.hex() == uncached.hex()
    _forget()
    monkeypatch.setattr(C, "_solve", lambda *a: pytest.fail("calibrated again despite the cache"))
    assert C.calibrate(_event, 0.7, 1e-5, "rdp", cache=True).hex() == uncached.hex()
    monkeypatch.undo()
    # a corrupt entry is ignored and rewritten
    monkeypatch.setenv("FEDBOOK_CACHE_DIR", str(tmp_path))
    files[0].write_text("{ not json")
    _forget()
    with pytest.warns(RuntimeWarning, match="discarded .*corrupt"):
        assert C.calibrate(_event, 0.7, 1e-5, "rdp", cache=True).hex() == uncached.hex()
    assert json.loads(files[0].read_text())["noise_multiplier"] == uncached
    # an entry for another key (e.g. a hash collision or a hand edit) is not trusted
    obj = json.loads(files[0].read_text())
    obj["noise_multiplier"] = 123.0
    obj["key"]["target_eps"] = "0.8"
    files[0].write_text(json.dumps(obj))
    _forget()
    assert C.calibrate(_event, 0.7, 1e-5, "rdp", cache=True) == uncached


def _worker(args):
    folder, target = args
    os.environ["FEDBOOK_CACHE_DIR"] = folder
    return C.calibrate(_event, target, 1e-5, "rdp", cache=True).hex()


def test_disk_cache_is_safe_under_concurrent_writers(tmp_path):
    ctx = mp.get_context("spawn")
    with ctx.Pool(3) as pool:
        out = pool.map(_worker, [(str(tmp_path), 0.9)] * 6 + [(str(tmp_path), 1.1)] * 3)
    assert len(set(out[:6])) == 1 and len(set(out[6:])) == 1
    files = sorted(tmp_path.glob("*.json"))
    assert len(files) == 2 and not list(tmp_path.glob(".*.tmp-*"))
    _forget()
    assert C.calibrate(_event, 0.9, 1e-5, "rdp", cache=False).hex() == out[0]
    for f in files:
        json.loads(f.read_text())  # every entry complete


def test_cache_location_and_off_switch(monkeypatch, tmp_path):
    monkeypatch.setenv("FEDBOOK_CACHE_DIR", "off")
    assert C.cache_dir() is None
    monkeypatch.delenv("FEDBOOK_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert C.cache_dir() == tmp_path / "fedbook" / "calibration"
