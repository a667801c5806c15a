"""The committed real-image claim runs (``results/fedhdp-claims-fashion.json.gz``, grid ``claims-fashion``, read through
the committed store): exactly the grid's configurations, filed under the keys of the current code, on the data as
loaded now, with the privacy they record recomputed by two accountants, and the claims' outcomes the chapter states.
The command that packs the file serves it from a store and trains nothing; it refuses an incomplete grid.

Retraining a committed row takes minutes: ``FEDBOOK_SLOW=1`` runs it (``test_a_committed_fashion_row_reproduces``).
"""
from __future__ import annotations

import json
import math
import random
from pathlib import Path

import numpy as np
import pytest

from fedtrain.config import ENGINE_VERSION
from fedtrain.data.files import DatasetNotFoundError
from fedtrain.encoding import decode_float
from fedtrain.clientdp.accounting import group_epsilon
from fedtrain.clientdp.config import FedHDPConfig
from fedtrain.book_results import committed_store
from fedtrain.fedhdp.experiments import PAPER_TABLE2, check_claims, paper_comparison
from fedtrain.presets import FEDHDP_GRIDS, fedhdp_grid
from fedtrain.results import row_key
from tests.conftest import slow, store_that_must_not_train

ROOT = Path(__file__).resolve().parents[2]
NAME = "fedhdp-claims-fashion"
GRID = "claims-fashion"


@pytest.fixture(scope="module")
def rows() -> list[dict]:
    return committed_store().client_rows(NAME)


@pytest.fixture(scope="module")
def prov() -> dict:
    return committed_store().client_header(NAME)["provenance"]


@pytest.fixture(scope="module")
def current_identity() -> dict:
    """The data identities of the grid's datasets as loaded now; a clear skip where the Fashion-MNIST files are absent."""
    from fedtrain.data.registry import load_dataset

    try:
        return {ds: load_dataset(ds).identity() for ds in FEDHDP_GRIDS[GRID]["datasets"]}
    except DatasetNotFoundError as exc:
        pytest.skip(f"Fashion-MNIST files absent (install Debian's dataset-fashion-mnist as root: "
                    f"apt-get install dataset-fashion-mnist, as tools/setup_env.sh does): {str(exc)[:200]}")


def test_saved_configs_are_exactly_the_grid(rows):
    key = lambda d: json.dumps(d, sort_keys=True)  # noqa: E731
    assert sorted(key(r["config"]) for r in rows) == sorted(key(c.to_dict()) for c in fedhdp_grid(GRID))
    assert committed_store().client_header(NAME)["grid"] == GRID


def test_rows_are_filed_under_the_current_keys(rows, prov):
    """Each row's key is the current code's (config key with the engine version, and the data identity's digest)."""
    assert prov["engine_version"] == ENGINE_VERSION
    for r in rows:
        assert r["key"] == row_key(FedHDPConfig.from_dict(r["config"]), r["data"]["identity"])


def test_provenance_names_grid_command_data_privacy_and_time(rows, prov):
    assert prov["grid"] == GRID and prov["runs"] == len(rows) == len(fedhdp_grid(GRID)) and prov["missing_runs"] == 0
    assert prov["command"].startswith(f"fedtrain fedhdp-claims --grid {GRID} --results ")
    assert "--partial" not in prov["command"]
    assert prov["rows_commit"] != "not recorded by the rows" and "+dirty" not in prov["written_by_commit"]
    g = FEDHDP_GRIDS[GRID]
    assert prov["target_epsilon"] == g["target_epsilon"] and prov["delta"] == g["delta"]
    assert prov["accountant"] == g["accountant"] and "client-level" in prov["adjacency"]
    assert prov["noise_multiplier"] == fedhdp_grid(GRID)[0].noise_multiplier
    assert prov["real_data"] is True and set(prov["data_identity"]) == set(g["datasets"])
    for r in rows:
        assert r["data"]["identity"] == prov["data_identity"][r["config"]["dataset"]]
    wall = np.array([r["wall_time"] for r in rows])
    s = prov["seconds_per_run"]
    assert s["total"] == pytest.approx(wall.sum()) and s["median"] == pytest.approx(np.median(wall))
    assert s["min"] == pytest.approx(wall.min()) and s["max"] == pytest.approx(wall.max())


def test_recorded_data_identities_are_the_current_datasets(prov, current_identity):
    assert prov["data_identity"] == current_identity


def test_recorded_epsilon_is_within_target_and_recomputes(rows, prov):
    """ε of every private group: within the target, equal to the RDP accountant's recomputation from the rounds it
    released, equal to Opacus's RDP accountant (an independent implementation of the same bound, 1e-6), and above the
    tight PLD accountant's ε of the same mechanism."""
    from opacus.accountants import RDPAccountant

    spent, independent = [], {}
    for r in rows:
        p = r["privacy"]
        if "private" not in p["groups"]:
            assert r["config"]["method"] == "nonprivate" and decode_float(p["epsilon"]) == math.inf
            continue
        g = p["groups"]["private"]
        eps, rounds = decode_float(g["epsilon"]), int(g["rounds_released"])
        z, q = decode_float(p["effective_noise_multiplier"]), float(p["sample_rate"])
        assert p["accountant"] == "rdp" and float(p["delta"]) == 1e-4
        if rounds == 0:  # r = 0: the private group is never contacted
            assert r["config"]["ratio"] == 0.0 and eps == 0.0
            continue
        assert rounds == r["config"]["rounds"] and z == r["config"]["noise_multiplier"]
        assert eps <= prov["target_epsilon"]
        assert eps == pytest.approx(group_epsilon(z, q, rounds, 1e-4, "rdp"), rel=1e-12)
        if (z, q, rounds) not in independent:  # one mechanism per (z, q, rounds): Opacus loops in Python
            opacus = RDPAccountant()
            opacus.history = [(z, q, rounds)]
            independent[z, q, rounds] = opacus.get_epsilon(1e-4)
        assert eps == pytest.approx(independent[z, q, rounds], rel=1e-6)
        spent.append(eps)
    assert max(spent) == prov["epsilon_spent"] and min(spent) == max(spent)  # one mechanism for every private group
    assert group_epsilon(prov["noise_multiplier"], 0.05, 200, 1e-4, "pld") < prov["epsilon_spent"]


#: What the chapter states about each claim on these rows (book/fedhdp_practice.ipynb, "The paper's claims on real
#: images"): each claim's verdicts (holds / tie / fails; claim 1 against both private baselines).
CHAPTER_OUTCOMES = {
    "1 (noniid-fashion)": {"holds"}, "2 (noniid-fashion) delta_g": {"fails"}, "2 (noniid-fashion) delta_l": {"holds"},
    "1 (noniid-fashion-skewed)": {"tie"}, "2 (noniid-fashion-skewed) delta_g": {"holds"},
    "2 (noniid-fashion-skewed) delta_l": {"holds"}, "3": {"tie"}, "4": {"holds"}, "5 (noniid-fashion)": {"holds"},
    "5 (noniid-fashion-skewed)": {"holds"}, "6": {"holds"},
}


def _outcomes(checks) -> dict[str, set]:
    out: dict[str, set] = {}
    for c in checks:
        name = c.claim.split(":")[0]
        if name.startswith("2 "):
            name += " delta_g" if "delta_g" in c.claim else " delta_l"
        out.setdefault(name, set()).add(c.verdict)
    return out


def test_claims_outcomes_are_what_the_chapter_states(rows):
    checks = check_claims(rows, plain="noniid-fashion", skewed="noniid-fashion-skewed",
                          epsilon_target=FEDHDP_GRIDS[GRID]["target_epsilon"])
    assert _outcomes(checks) == CHAPTER_OUTCOMES


def test_paper_comparison_sets_table_2_beside_the_runs_without_zero_spreads(rows):
    plain, skewed = FEDHDP_GRIDS[GRID]["datasets"]
    table = paper_comparison(rows, plain, skewed)
    lines = table.splitlines()
    assert len(lines) == 2 + 8 and all(line.count("|") == 6 for line in lines)  # header, rule, 8 quantities
    for k in ("plain", "skewed"):
        assert all(f"{PAPER_TABLE2[k][q]:g}" in table for q in ("fedhdp_acc_g", "dp-fedavg", "r0_acc_g"))
    assert "± 0.00" not in table  # a spread that rounds to zero says so instead
    r0 = next(line for line in lines if line.startswith("| FedHDP Acc_g at r = 0"))
    assert r0.split("|")[5].strip() == "10.00 (every seed)"  # skewed data, r = 0: the opted-out class only


@slow
def test_a_committed_fashion_row_reproduces(rows, current_identity):
    """One committed row, drawn at random with a fixed seed among the runs that train (r > 0 or a baseline), is
    retrained from its config and gives its stored metrics (rel 1e-5: float32 summation order may differ by CPU)."""
    from fedtrain.clientdp.trainer import train

    pool = [r for r in rows if not (r["config"]["method"] == "fedhdp" and r["config"]["ratio"] == 0.0)]
    row = random.Random(20261124).choice(sorted(pool, key=lambda r: r["key"]))
    result = train(FedHDPConfig.from_dict(row["config"])).to_dict()
    assert result["data"]["identity"] == row["data"]["identity"]
    for name, stored in row["metrics"].items():
        got, stored = decode_float(result["metrics"][name]), decode_float(stored)
        if math.isnan(stored):
            assert math.isnan(got), name
        else:
            assert got == pytest.approx(stored, rel=1e-5, abs=1e-9), (name, got, stored)


def test_the_command_serves_the_grid_from_a_store_trains_nothing_and_refuses_an_incomplete_grid(
        rows, tmp_path, monkeypatch, capsys, current_identity):
    from fedtrain.cli import main

    store = store_that_must_not_train(rows, tmp_path / "store", monkeypatch, "fedtrain fedhdp-claims --grid")
    from fedtrain.results import FORMAT, MANIFEST

    cmd = ["fedhdp-claims", "--grid", GRID, "--results", str(store.root), "--rows-commit", "abc"]
    out = tmp_path / "committed"
    out.mkdir()
    (out / MANIFEST).write_text(json.dumps({"format": FORMAT, "engine_version": ENGINE_VERSION, "files": {}}))
    assert main(cmd + ["--pack", str(out)]) == 0
    assert "[holds] claim 6" in capsys.readouterr().out
    metrics = lambda rs: sorted(json.dumps([r["key"], r["metrics"]], sort_keys=True) for r in rs)  # noqa: E731
    packed = committed_store(out)
    assert metrics(packed.client_rows(NAME)) == metrics(rows)
    head = packed.client_header(NAME)
    assert head["provenance"]["rows_commit"] == "abc" and head["provenance"]["missing_runs"] == 0
    assert head["command"] == head["provenance"]["command"] and f"--pack {out}" in head["command"]

    next(store.root.glob("*.json")).unlink()
    before = (out / MANIFEST).read_bytes()
    assert main(cmd + ["--pack", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"holds {len(rows) - 1} of the {len(rows)} runs" in err and "--partial" in err
    with pytest.raises(SystemExit):
        main(cmd + ["--pack", str(out), "--partial"])  # --pack takes a complete grid only
    assert "--pack takes a complete grid" in capsys.readouterr().err and (out / MANIFEST).read_bytes() == before
    assert main(cmd + ["--partial"]) == 0  # served and checked, nothing packed
