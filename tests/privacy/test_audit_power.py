"""fedtrain.audit_power: the detection threshold, the committed power file (it reproduces, and it says what the
privacy-audit chapter states), bad input, and the claim that the many-run audit with 320,000 trials catches a noise
halving that the smaller audits miss."""
from __future__ import annotations

import json

import numpy as np
import pytest

from fedtrain.audit import audit_many_runs, broken_engine
from fedtrain.audit_power import (AUDITS, CLAIMS, POWER_FILE, detection_threshold, load_power, main,
                                  many_run_setting, power_point)
from tests.conftest import slow


def _pts(caught: dict[float, bool], audit="a", eps=1.0):
    return [dict(audit=audit, eps=eps, factor=f, caught=c) for f, c in caught.items()]


def test_detection_threshold_is_the_top_of_an_unbroken_run_of_catches():
    assert detection_threshold(_pts({0.1: True, 0.3: True, 0.5: True, 1.0: False}), "a", 1.0) == 0.5
    # a catch above a miss does not count: 0.7 is caught but 0.6 is not
    assert detection_threshold(_pts({0.5: True, 0.6: False, 0.7: True, 1.0: False}), "a", 1.0) == 0.5
    assert detection_threshold(_pts({0.1: False, 0.5: True}), "a", 1.0) is None
    with pytest.raises(ValueError, match="no points"):
        detection_threshold(_pts({0.5: True}), "b", 1.0)


def test_power_point_bad_input():
    with pytest.raises(ValueError, match="audit_name"):
        power_point("nope", 1.0, 0.5)
    with pytest.raises(ValueError, match="eps"):
        power_point("one-run", float("inf"), 0.5)
    with pytest.raises(ValueError, match="factor"):
        power_point("one-run", 1.0, 0.0)


def test_load_power_names_the_file_and_the_command(tmp_path):
    with pytest.raises(FileNotFoundError, match="audit_power.json not found.*python -m fedtrain.audit_power"):
        load_power(tmp_path / "audit_power.json")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"points": [{"audit": "one-run"}]}))
    with pytest.raises(ValueError, match="bad.json is corrupt"):
        load_power(bad)


def test_main_refuses_an_unknown_audit(capsys):
    assert main(["--out", "/nonexistent/x.json", "--audits", "nope"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: --audits: unknown audit 'nope'")


def test_main_resumes_and_writes_provenance(tmp_path):
    out = tmp_path / "p.json"
    assert main(["--out", str(out), "--audits", "one-run", "--claims", "2", "--factors", "0.2"]) == 0
    first = json.loads(out.read_text())
    assert len(first["points"]) == 1 and first["points"][0]["caught"]
    assert main(["--out", str(out), "--audits", "one-run", "--claims", "2", "--factors", "0.2"]) == 0
    again = json.loads(out.read_text())
    assert again["points"] == first["points"] and len(again["runs"]) == 2  # resumed: nothing recomputed
    assert {"command", "commit", "torch", "settings"} <= set(again["provenance"])


def test_the_committed_power_file_reproduces_and_says_what_the_chapter_states():
    data = load_power(POWER_FILE)
    pt = {(p["audit"], p["eps"], p["factor"]): p for p in data["points"]}
    for key in [("one-run", 2.0, 0.5), ("many-run", 1.0, 0.2)]:  # seeded: recomputed bit for bit
        again = power_point(*key)
        assert again["eps_lower"] == pt[key]["eps_lower"] and again["caught"] == pt[key]["caught"], (key, again)
    for e in CLAIMS:  # the engine as built passes every audit; a lower bound never exceeds the run's exact ε
        for name in AUDITS:
            if (name, e, 1.0) in pt:
                assert not pt[(name, e, 1.0)]["caught"]
    assert all(p["eps_lower"] <= p["true_eps"] for p in data["points"])
    assert all(p["true_eps"] > 1.9 * p["eps"] for p in data["points"] if p["factor"] == 0.5)
    assert not any(pt[("one-run", e, 0.5)]["caught"] for e in CLAIMS)
    assert all(pt[("many-run 320k", e, 0.5)]["caught"] for e in (1.0, 2.0, 4.0))
    assert not any(pt[("many-run", e, 0.5)]["caught"] for e in (1.0, 2.0, 4.0))
    assert np.isfinite([p["seconds"] for p in data["points"]]).all()


# ε = 1 runs in `make test` (about 20 s on one core); ε = 2 and 4 (30-45 s each) with FEDBOOK_SLOW=1 (`make slow`):
# in `make test` the committed file's points at ε = 2 and 4 are asserted caught (the committed-file test above) and
# the ε = 1 point, the same seeded code path, is recomputed here bit for bit
@pytest.mark.parametrize("eps", [1.0, pytest.param(2.0, marks=slow), pytest.param(4.0, marks=slow)])
def test_the_many_run_audit_at_320k_trials_catches_a_noise_halving(eps):
    """What the privacy-audit chapter claims: with 10,000 silos × 32 seeds (160,000 held-out trials) the many-run
    audit catches the engine's noise halved (true ε about twice the claim) at claimed ε 1, 2 and 4 on the seeded
    engine; with the 100 silos of the smaller audit it misses the halving at each of them."""
    cfg, xy = many_run_setting(eps)
    kw = AUDITS["many-run 320k"][1]
    with broken_engine(noise_factor=0.5):
        a = audit_many_runs(cfg, xy, **kw)
    assert a.details["trials"] == 160_000 and a.caught, a
    committed = {(p["audit"], p["eps"], p["factor"]): p for p in load_power(POWER_FILE)["points"]}
    assert a.eps_lower == committed[("many-run 320k", eps, 0.5)]["eps_lower"], (a.eps_lower, committed)
    with broken_engine(noise_factor=0.5):
        small = audit_many_runs(cfg, xy, **AUDITS["many-run"][1])
    assert not small.caught, small
