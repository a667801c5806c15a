"""The paper's result tables (Aldaghri et al., Tables 2-3 and 8-11) built from :class:`FedHDPResult` objects.

Columns: Alg | r | Acc_g | Acc_g,p | Acc_g,np | Δ_g | Acc_l,p | Acc_l,np | Δ_l, accuracies in %.  The
number in parentheses is the paper's "variance across clients": the variance of the per-client accuracy
taken as a fraction, times 100 — read off the skewed r = 0 row, where a private client's accuracy is 1
for the 7.1 % of clients holding a 7 and 0 otherwise: 0.071·0.929·100 = 6.6, printed 6.5.  Cells of a
group a method does not have print ``-``.  Several seeds of one setting form one row: every entry is
the mean over the seeds, and :func:`table_rows` also gives the sample standard deviation (``ddof=1``)
over seeds of ``Acc_g``, ``Δ_g`` and ``Δ_l`` and the number of seeds; a sd that rounds to zero at the digits shown
reads ``±<0.01`` (:func:`fedtrain.analysis.spread_text`).  :func:`format_table` with ``parts`` splits the nine
columns into narrower tables of the same rows (:data:`TABLE_PARTS`: the global model's, the personal models'), each
fitting a book page's column.
"""
from __future__ import annotations

import math
from typing import Iterable, Mapping, Sequence

import numpy as np

from fedtrain.analysis import spread_text
from fedtrain.encoding import decode_float
from fedtrain.clientdp.config import FEDHDP_METHODS
from fedtrain.methods.registry import method_spec

__all__ = ["COLUMNS", "TABLE_PARTS", "table_rows", "format_table"]

#: The paper's columns (key in ``FedHDPResult.metrics``, header).
COLUMNS = (("acc_g", "Acc_g"), ("acc_g_p", "Acc_g,p"), ("acc_g_np", "Acc_g,np"), ("delta_g", "Δ_g"),
           ("acc_l_p", "Acc_l,p"), ("acc_l_np", "Acc_l,np"), ("delta_l", "Δ_l"))
#: The paper's table in two parts (part name → headers), for :func:`format_table`'s ``parts``.
TABLE_PARTS = {"global model": ("Alg", "r", "Acc_g", "Acc_g,p", "Acc_g,np", "Δ_g"),
               "personal models": ("Alg", "r", "Acc_l,p", "Acc_l,np", "Δ_l")}
_VAR = {"acc_g_p": "var_g_p", "acc_g_np": "var_g_np", "acc_l_p": "var_l_p", "acc_l_np": "var_l_np"}


def _metrics(r) -> tuple[str, float, dict]:
    if isinstance(r, dict):
        cfg = r["config"]
        met = {k: (decode_float(v) if isinstance(v, (str, int, float)) and k != "metric" else v)
               for k, v in r["metrics"].items()}
        method = cfg["method"]
        ratio = float(cfg["ratio"]) if method_spec(method).takes_ratio else 1.0
    else:
        method, ratio, met = r.config.method, r.config.effective_ratio, r.metrics
    return method, ratio, met


def _mean(vals):
    vals = [v for v in vals if v is not None and not (isinstance(v, float) and math.isnan(v))]
    return float(np.mean(vals)) if vals else math.nan


def _sd(vals):
    vals = [v for v in vals if not math.isnan(v)]
    return float(np.std(vals, ddof=1)) if len(vals) > 1 else math.nan


def table_rows(results: Iterable) -> list[dict]:
    """One row per (method, r): the mean over seeds of every column and variance, ``sd_*`` over seeds, ``n``.

    ``results``: :class:`~fedtrain.clientdp.trainer.FedHDPResult` objects or their ``to_dict()`` form.
    Rows come in the paper's order (methods as in :data:`~fedtrain.clientdp.config.FEDHDP_METHODS`, r ascending).
    """
    groups: dict[tuple, list[dict]] = {}
    for r in results:
        method, ratio, met = _metrics(r)
        groups.setdefault((method, ratio if method_spec(method).takes_ratio else None), []).append(met)
    rows = []
    for (method, ratio), mets in sorted(groups.items(), key=lambda kv: (FEDHDP_METHODS.index(kv[0][0]),
                                                                         kv[0][1] if kv[0][1] is not None else -1)):
        row = {"method": method, "label": method_spec(method).label, "r": ratio, "n": len(mets)}
        for key, _ in COLUMNS:
            row[key] = _mean([m[key] for m in mets])
            if key in _VAR:
                row[_VAR[key]] = _mean([m[_VAR[key]] for m in mets])
        for key in ("acc_g", "delta_g", "delta_l", "acc_g_p", "acc_g_np"):
            row["sd_" + key] = _sd([m[key] for m in mets])
        rows.append(row)
    return rows


def _cell(row: dict, key: str, digits: int, with_sd: bool) -> str:
    v = row[key]
    if math.isnan(v):
        return "-"
    text = f"{v:.{digits}f}"
    if key in _VAR and not math.isnan(row[_VAR[key]]):
        text += f"({row[_VAR[key]]:.{digits}f})"
    if with_sd and "sd_" + key in row and not math.isnan(row["sd_" + key]):
        text += f" ±{spread_text(row['sd_' + key], digits)}"
    return text


def format_table(rows: Sequence[dict], *, digits: int = 2, with_sd: bool = True, title: str | None = None,
                 parts: Mapping[str, Sequence[str]] | None = None) -> str:
    """The rows as a Markdown table in the paper's format (``± sd`` over seeds appended when ``with_sd``).

    ``parts`` (name → headers, e.g. :data:`TABLE_PARTS`): instead one table per part, with those columns of the
    same rows under the part's name in italics (the seed count, with ``with_sd``, ends every part)."""
    head = ["Alg", "r"] + [h for _, h in COLUMNS] + (["seeds"] if with_sd else [])
    body = []
    for row in rows:
        cells = [row["label"], "-" if row["r"] is None else f"{row['r']:g}"]
        cells += [_cell(row, k, digits, with_sd) for k, _ in COLUMNS]
        if with_sd:
            cells.append(str(row["n"]))
        body.append(cells)
    if parts is None:
        tables = [(None, head)]
    else:
        unknown = sorted({c for cols in parts.values() for c in cols} - set(head))
        if unknown or not parts:
            raise ValueError(f"parts must map names to headers among {head} (unknown: {unknown})")
        tables = [(name, list(cols) + (["seeds"] if with_sd and "seeds" not in cols else []))
                  for name, cols in parts.items()]
    lines = [f"**{title}**", ""] if title else []
    for name, cols in tables:
        idx = [head.index(c) for c in cols]
        if name is not None:
            lines += ([""] if lines else []) + [f"*{name}*", ""]
        lines += ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
        lines += ["| " + " | ".join(cells[i] for i in idx) + " |" for cells in body]
    return "\n".join(lines)
