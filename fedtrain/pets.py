"""The PETs Prize case study, reduced: node-level privacy from row-level DP-SGD, and rare-event scoring.

The winning solution of the pandemic-forecasting track (Liu et al. 2023) trained per-silo DP-SGD on one row per
person, each row holding features of a deterministic sample of the person's contacts.  DP-SGD then protects one
*row* (add/remove one record of a silo, the book's default adjacency); one *person* enters their own row and the
rows of everyone who sampled them as a contact, so the guarantee for a person follows by group privacy over
those rows.  The team bounded the group with the maximum node degree; :func:`node_level_guarantee` applies the
classic group-privacy bound to a group of known size.  :func:`pooled_average_precision` scores rare-event
predictions the way the challenge did (area under the precision-recall curve), and :func:`run_pets_example` runs
Local, FedAvg and MR-MTL on :func:`fedtrain.data.contacts.contact_network_standin`.
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from fedtheory.validation import check_integer_at_least, check_open_interval, check_positive
from fedtrain.config import RunConfig
from fedtrain.figures import COLUMN_WIDTH_IN, eps_axis, eps_positions, method_color
from fedtrain.methods.registry import method_spec

__all__ = ["node_level_guarantee", "pooled_average_precision", "run_pets_example", "plot_pets_example"]


def node_level_guarantee(eps: float, delta: float, group_size: int) -> tuple[float, float]:
    """``(g·ε, g·e^{(g−1)ε}·δ)``: the (ε, δ)-DP guarantee for a group of ``g = group_size`` records, given
    (ε, δ)-DP for one record (group privacy; Vadhan, *The Complexity of Differential Privacy*, Lemma 2.2).

    With rows built from contact samples, ``g`` is the number of rows one person's data enter (their own plus
    one per person who sampled them).  ``δ`` grows exponentially in ``g·ε``: the bound is loose, and the reason
    node-level guarantees for well-connected people are expensive.

    >>> node_level_guarantee(1.0, 1e-6, 1)
    (1.0, 1e-06)
    >>> eps, delta = node_level_guarantee(1.0, 1e-6, 6)
    >>> eps, round(delta, 6)
    (6.0, 0.00089)
    """
    eps = float(check_positive("eps", eps))
    delta = float(check_open_interval("delta", delta, 0.0, 1.0))
    g = int(check_integer_at_least("group_size", group_size, 1))
    return g * eps, min(1.0, g * math.exp((g - 1) * eps) * delta)


def pooled_average_precision(result, data) -> float:
    """Average precision (area under the precision-recall curve) of the positive class over every silo's test
    people, each scored by their own silo's final model (``result`` from :func:`fedtrain.engine.run` with
    ``keep_models=True`` on a two-class ``data``).  A random scorer gets the positive share."""
    from sklearn.metrics import average_precision_score

    if result.models is None:
        raise ValueError("result must come from a run with keep_models=True (its models are needed)")
    if data.task != "multiclass" or data.num_classes != 2:
        raise ValueError(f"data must be a two-class dataset (task 'multiclass', 2 classes; got {data.task!r}, "
                         f"{data.num_classes!r})")
    scores, labels = [], []
    for k, (x, y) in enumerate(zip(data.test_x, data.test_y)):
        w = np.asarray(result.models[k], dtype=float)  # (d + 1, 2), bias last
        logits = np.asarray(x, dtype=float) @ w[:-1] + w[-1]
        scores.append(logits[:, 1] - logits[:, 0])
        labels.append(np.asarray(y) == 1)
    y_all = np.concatenate(labels)
    if not y_all.any():
        raise ValueError("the test sets hold no positive example: average precision is undefined")
    return float(average_precision_score(y_all, np.concatenate(scores)))


def run_pets_example(data, eps_values: Sequence[float] = (1.0, 8.0, math.inf), *, lam: float = 1.0,
                     rounds: int = 30, lr: float = 0.5, batch_size: int = 32, delta: float = 1e-5,
                     seeds: Sequence[int] = (0, 1, 2)) -> list[dict]:
    """Train Local, FedAvg and MR-MTL (strength ``lam``) with per-silo DP-SGD at every ε of ``eps_values`` (row-level,
    add/remove one row of a silo, RDP accountant) on the two-class ``data``; one row per (method, ε) with the
    pooled average precision's mean and sd (ddof = 1) over ``seeds``, the largest certified row-level ε, and the
    node-level guarantee of :func:`node_level_guarantee` for ``data.info["rows_per_person"]``."""
    from fedtrain.engine import run_many

    g = int(data.info.get("rows_per_person", 1))
    configs = [RunConfig(data.name, method, eps=float(eps), delta=delta,
                         lam=lam if method_spec(method).uses_lambda else 0.0,  # the registry says who takes λ
                         lr=lr, rounds=rounds, batch_size=batch_size, seed=int(s))
               for method in ("local", "fedavg", "mrmtl") for eps in eps_values for s in seeds]
    results = run_many(configs, data, keep_models=True)
    out = []
    for i in range(0, len(configs), len(seeds)):
        block = results[i:i + len(seeds)]
        c = configs[i]
        ap = np.array([pooled_average_precision(r, data) for r in block])
        row = {"method": c.method, "eps": c.eps, "ap_mean": float(ap.mean()),
               "ap_sd": float(ap.std(ddof=1)) if ap.size > 1 else float("nan"), "n": int(ap.size),
               "eps_spent_max": float(max(np.max(r.eps_spent) for r in block)), "accountant": block[0].accountant}
        row["node_eps"], row["node_delta"] = ((math.inf, 1.0) if math.isinf(c.eps)
                                              else node_level_guarantee(row["eps_spent_max"], delta, g))
        out.append(row)
    return out


def plot_pets_example(rows: Sequence[dict], *, base_rate: float | None = None):
    """The reduced PETs example: pooled average precision (mean ± sd over seeds) against the row-level ε, one
    colour, line style and marker per method (non-private at the right, past a dashed separator), the random
    scorer's level (``base_rate``) as a grey line, the legend under the axes."""
    import matplotlib.pyplot as plt

    eps_values = sorted({r["eps"] for r in rows})
    pos = eps_positions(eps_values)
    fig, ax = plt.subplots(figsize=(COLUMN_WIDTH_IN, 3.6))
    styles = {"local": ("-", "o"), "fedavg": ("--", "s"), "mrmtl": ("-.", "^")}
    methods = list(dict.fromkeys(r["method"] for r in rows))
    for j, m in enumerate(methods):
        rs = sorted((r for r in rows if r["method"] == m), key=lambda r: r["eps"])
        x = np.array([pos[r["eps"]] for r in rs]) * 1.03 ** (j - 1)
        ls, marker = styles.get(m, ("-", "o"))
        ax.errorbar(x, [r["ap_mean"] for r in rs], yerr=[r["ap_sd"] for r in rs], ls=ls, marker=marker, ms=5,
                    capsize=3, color=method_color(m), label=method_spec(m).label)
    if base_rate is not None:
        ax.axhline(base_rate, color="0.5", lw=1, ls=":", label=f"random scorer ({base_rate:.3f})")
    eps_axis(ax, eps_values, pos)
    ax.set_ylim(0, None)
    ax.set_xlabel("row-level privacy budget ε per silo (log scale)")
    ax.set_ylabel("average precision (higher is better)")
    ax.set_title("Contact-network stand-in (synthetic)")
    ax.grid(alpha=0.3)
    handles, labels = ax.get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), frameon=False)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    return fig
