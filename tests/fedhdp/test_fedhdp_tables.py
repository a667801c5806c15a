"""fedtrain.fedhdp.tables: the paper's result tables from planted results (means and sd over seeds, parts)."""
import math

import pytest

from fedtrain.fedhdp.tables import COLUMNS, TABLE_PARTS, format_table, table_rows

_KEYS = [k for k, _ in COLUMNS]


def _result(method, seed, acc, ratio=None):
    """A planted result in ``to_dict()`` form: every column ``acc + seed offset``, variances 0.5."""
    metrics = {k: acc + (0.3 if seed else 0.0) for k in _KEYS}
    metrics.update({k: 0.5 for k in ("var_g_p", "var_g_np", "var_l_p", "var_l_np")})
    config = {"method": method, "seed": seed}
    if ratio is not None:
        config["ratio"] = ratio
    return {"config": config, "metrics": metrics}


def _planted():
    return ([_result("fedhdp", s, 80.0, r) for s in (0, 1) for r in (0.5, 0.0)]
            + [_result("dp-fedavg", s, 70.0) for s in (0, 1)] + [_result("nonprivate", 0, 90.0)])


def test_table_rows_order_means_and_sd_over_seeds():
    rows = table_rows(_planted())
    assert [(r["method"], r["r"], r["n"]) for r in rows] == [("nonprivate", None, 1), ("dp-fedavg", None, 2),
                                                             ("fedhdp", 0.0, 2), ("fedhdp", 0.5, 2)]
    fed = rows[2]
    assert fed["acc_g"] == pytest.approx(80.15) and fed["sd_acc_g"] == pytest.approx(0.3 / math.sqrt(2))
    assert math.isnan(rows[0]["sd_acc_g"])  # one seed: no sd


def test_format_table_whole_and_in_parts():
    rows = table_rows(_planted())
    whole = format_table(rows, title="planted").splitlines()
    assert whole[0] == "**planted**"
    assert whole[2] == "| Alg | r | " + " | ".join(h for _, h in COLUMNS) + " | seeds |"
    assert whole[5].startswith("| DP-FedAvg+Ditto | - | 70.15 ±0.21 | 70.15(0.50) ±0.21 |")
    assert whole[4].startswith("| Non-Private+Ditto | - | 90.00 | 90.00(0.50) |")  # one seed: no ± sd
    split = format_table(rows, parts=TABLE_PARTS)
    heads = [ln for ln in split.splitlines() if ln.startswith("| Alg")]
    assert heads == ["| " + " | ".join(cols) + " | seeds |" for cols in TABLE_PARTS.values()]
    assert [ln for ln in split.splitlines() if ln.startswith("*")] == [f"*{n}*" for n in TABLE_PARTS]
    assert "| FedHDP | 0.5 | 80.15 ±0.21 |" in split
    assert sum(ln.startswith("| FedHDP | 0.5 |") for ln in split.splitlines()) == 2  # a row in each part
    bare = format_table(rows, with_sd=False, parts=TABLE_PARTS)
    assert "seeds" not in bare and "±" not in bare
    with pytest.raises(ValueError, match="parts must map names to headers"):
        format_table(rows, parts={"bad": ("Alg", "Acc")})


def test_a_spread_that_rounds_to_zero_is_not_printed_as_zero():
    same = [_result("dp-fedavg", 0, 70.0), _result("dp-fedavg", 1, 70.0)]
    same[1]["metrics"]["acc_g"] = 70.001
    line = format_table(table_rows(same)).splitlines()[2]
    assert "70.00 ±<0.01" in line and "±0.00" not in line
