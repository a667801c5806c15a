"""fedtrain.dp_costs: the no DP / clip only / private decomposition read from the committed regime probes, and its
bad input."""
from __future__ import annotations

import json
import math

import pytest

from fedtrain.dp_costs import DPCosts, costs_table, load_probes, probe_costs


def test_the_committed_grids_setting_is_clipping_bound_and_the_chosen_one_noise_bound():
    doc = load_probes()
    grid = probe_costs(lr=0.1, clip=1.0, doc=doc)  # fig6-fashion's η and C
    assert [d.setting for d in grid] == ["mask 0", "mask 0.5"] and {d.limit for d in grid} == {"clipping"}
    chosen = probe_costs(lr=0.03, clip=8.0, doc=doc)  # the tuned grids' C, their η bracket's upper end
    assert {d.limit for d in chosen} == {"noise"}
    # the decomposition is the three accuracies' differences, recomputed here from the file's rows
    row = next(r for r in doc["rows"] if (r["lr"], r["clip"], r["mask_ratio"], r["train_per_silo"]) == (0.1, 1.0, 0.5, 500))
    d = grid[1]
    assert math.isclose(d.clip_cost, row["acc_nodp"] - row["acc_clip_only"])
    assert math.isclose(d.noise_cost, row["acc_clip_only"] - row["acc_private"])
    assert d.eps == doc["fixed"]["private_eps"] and d.seeds == 1 and "8 silos" in d.source and d.label == "Local (η = 0.1, C = 1)"


def test_limit_follows_the_larger_cost_and_the_table_shows_it():
    d = DPCosts("Local", "mask 0", 4.0, 0.7, 0.6, 0.3, 2, "planted")
    assert d.limit == "noise" and "noise-bound" in d.text()
    e = DPCosts("Local", "mask 0", 4.0, 0.7, 0.4, 0.35, 2, "planted")
    assert e.limit == "clipping" and "| mask 0, ε = 4, 2 seeds |" in costs_table([d, e]) and costs_table([d, e]).endswith("| clipping |")


def test_bad_input_names_the_file_and_the_setting(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"regime_probes\.json not found \(looked for .*\); .*fedtrain\.regime"):
        load_probes(tmp_path / "regime_probes.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ValueError, match="bad.json is unreadable"):
        load_probes(bad)
    bad.write_text(json.dumps({"rows": []}))
    with pytest.raises(ValueError, match="lacks its rows or its fixed settings"):
        load_probes(bad)
    with pytest.raises(ValueError, match="no setting lr=0.5"):
        probe_costs(lr=0.5, clip=1.0)
    with pytest.raises(ValueError, match="at least one"):
        costs_table([])


def test_tally_text_names_each_verdict_with_a_count():
    from fedtrain.claim_check import tally_text

    assert tally_text({"holds": 3, "tie": 7, "fails": 2, "pending": 0}) == "3 hold, 7 are ties and 2 fail"
    assert tally_text({"holds": 1, "tie": 1, "fails": 0, "pending": 0}) == "1 holds and 1 is a tie"
    assert tally_text({"holds": 0, "tie": 0, "fails": 0, "pending": 0}) == "none"


def test_every_probe_is_one_decomposition_a_row():
    from fedtrain.dp_costs import every_probe

    doc = load_probes()
    rows = every_probe(doc)
    assert len(rows) == len(doc["rows"]) and all(d.seeds == 1 for d in rows)
    assert {d.limit for d in rows} == {"clipping", "noise"}
