"""Fig. 3(d)'s readings (MR-MTL paper, Sec. 5, Fig. 3) as checks that can fail, on stored runs of a label-skewed grid.

The paper reads its Fig. 3 (privacy-utility curves: test accuracy against the per-silo ε, every method at its best
λ and η, the same (ε, δ) for every silo) as:

1. MR-MTL is consistently the best method, at least as good as both endpoints (Local and FedAvg), except in the
   high-privacy regime;
2. there is a band of ε where MR-MTL clearly beats both endpoints (the paper names the band for panels (a)–(c):
   ε ≈ 0.5 on Vehicle, ≈ 6 on School, ≈ 1.5 on GLEAM; for panel (d) it names none);
3. on panel (d), heterogeneous CIFAR-10, finetuning beats local training.

Readings 1 and 2 are read at each privacy level as one check, "MR-MTL beats both Local and FedAvg", with three
verdicts (:func:`fedtrain.fig6_checks.verdict`, margin ``max(tol, 2 SE)`` of the difference): it **holds** where
MR-MTL beats both beyond the margin (a level in reading 2's band), is a **tie** where MR-MTL is within the margin of
an endpoint and below neither beyond it (reading 1's "at least as good", not more), and **fails** where an endpoint
is above it beyond the margin.  Reading 3, "finetuning beats local training", has the same three verdicts.  These
are the paper's readings (:data:`~fedtrain.fig6_checks.PAPER_READING`).

A third check is about the grid, not the paper (:data:`~fedtrain.fig6_checks.GRID_CHECK`): MR-MTL's best λ must be
*located*, as in :mod:`fedtrain.fig6_checks` (d): strictly inside the λ grid, or at an end of the profile, λ = 0
(Local) or λ → ∞ (FedAvg), whose run is at least as good as every λ of the grid
(:func:`~fedtrain.fig6_checks.locate_lambda`).

Comparisons are in standard errors over seeds, as in :mod:`fedtrain.fig6_checks`.  Each
privacy level is read on its complete seeds only (a seed whose every run at that ε is computed), so that MR-MTL's
best λ is chosen over the whole λ grid and every method is averaged over the same seeds.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Iterable, Sequence

from fedtrain.analysis import best_by_setting
from fedtrain.fig6_checks import (FAILS, GRID_CHECK, HOLDS, PAPER_READING, PENDING, TIE, CheckStatus, _fmt, _margin,
                                  complete_blocks, locate_lambda, verdict)

if TYPE_CHECKING:  # pragma: no cover
    from fedtrain.config import RunConfig
    from fedtrain.engine import RunResult

__all__ = ["KINDS", "CHECKS", "CHECK_KINDS", "HOLDS", "TIE", "FAILS", "PENDING", "fig3d_kind", "fig3d_table", "fig3d_status", "complete_rows"]

#: The methods of Fig. 3(d) (IFCA with 10 % of the rounds selecting clusters privately).
KINDS = ("Local", "FedAvg", "Finetune", "MR-MTL", "IFCA")
#: The checks' names, in the order :func:`fig3d_status` returns them.
CHECKS = ("MR-MTL beats both Local and FedAvg",
          "Finetuning beats local training",
          "MR-MTL's best λ is located (inside the λ grid, or at λ = 0 or λ → ∞)")
#: Each check's kind, in the order of :data:`CHECKS`: the paper's readings, then the check of the grid.
CHECK_KINDS = (PAPER_READING, PAPER_READING, GRID_CHECK)
_NAMES = {"local": "Local", "fedavg": "FedAvg", "finetune": "Finetune", "mrmtl": "MR-MTL", "ifca": "IFCA"}


def fig3d_kind(config: "RunConfig") -> str:
    """The method of a Fig. 3(d) run (:data:`KINDS`)."""
    if config.method not in _NAMES:
        raise ValueError(f"config.method must be one of {', '.join(_NAMES)} (got {config.method!r})")
    return _NAMES[config.method]


def _eps_key(c: Any) -> float:
    return math.inf if math.isinf(c.eps) else float(c.eps)


def fig3d_table(rows: Iterable["RunResult"]) -> dict[tuple[str, float], dict[str, Any]]:
    """``{(kind, ε): best cell}`` (:func:`fedtrain.analysis.best_by_setting`: ``mean``, ``std``, ``n``, ``lam``,
    ``lr``) plus ``lams``, the λ values run for that cell."""
    rows = list(rows)
    table = best_by_setting(rows, _eps_key, label=fig3d_kind)
    for (kind, eps), cell in table.items():
        cell["lams"] = tuple(sorted({float(r.config.lam) for r in rows
                                     if fig3d_kind(r.config) == kind and _eps_key(r.config) == eps}))
    return table


def _complete_seeds(rows: Sequence["RunResult"], configs: Sequence["RunConfig"], eps: float):
    """The runs at ``eps`` in complete seeds, and ``(runs present, runs in the grid)`` at ``eps``: the complete blocks
    of :func:`fedtrain.fig6_checks.complete_blocks` (a grid without mask ratios has one block per seed)."""
    kept, counts = complete_blocks(rows, configs, eps)
    return kept, (sum(n for n, _ in counts.values()), sum(m for _, m in counts.values()))


def _checks(t: dict, eps: float, tol: float) -> list[CheckStatus]:
    c = lambda kind: t[(kind, eps)]  # noqa: E731
    mr = c("MR-MTL")
    ends = {k: (mr["mean"] - c(k)["mean"], _margin(mr, c(k), tol)) for k in ("Local", "FedAvg")}
    vs = "; ".join(f"{k} {_fmt(c(k))} (difference {d:+.3f}, margin {m:.3f})" for k, (d, m) in ends.items())
    each = [verdict(d, m) for d, m in ends.values()]
    both = FAILS if FAILS in each else (TIE if TIE in each else HOLDS)
    out = [CheckStatus(CHECKS[0], both, f"MR-MTL {_fmt(mr)}; {vs}", CHECK_KINDS[0])]
    ft, loc = c("Finetune"), c("Local")
    m = _margin(ft, loc, tol)
    out.append(CheckStatus(CHECKS[1], verdict(ft["mean"] - loc["mean"], m),
                           f"Finetune {_fmt(ft)} vs Local {_fmt(loc)} (difference {ft['mean'] - loc['mean']:+.3f}, "
                           f"margin {m:.3f})", CHECK_KINDS[1]))
    located, text = locate_lambda(mr, ("Local", c("Local")), ("FedAvg", c("FedAvg")))
    out.append(CheckStatus(CHECKS[2], HOLDS if located else FAILS, text, CHECK_KINDS[2]))
    return out


def fig3d_status(rows: Iterable["RunResult"], configs: Sequence["RunConfig"], *,
                 tol: float = 0.01) -> dict[float, list[CheckStatus]]:
    """The checks of the module docstring (:data:`CHECKS`) at each privacy level of the grid ``configs`` (e.g.
    :func:`fedtrain.deep_grids.deep_grid` ``("fig3d-fashion")``), of which only ``rows`` may be computed: ``{ε:
    [status of each check]}``, ε ascending (``math.inf``: without privacy).  A level is read on its complete seeds;
    with none, its checks are :data:`~fedtrain.fig6_checks.PENDING`, saying how many of its runs are in.  ``tol``
    (accuracy) is the smallest margin a comparison allows.  Render with :func:`fedtrain.fig6_checks.fig6_status_html`."""
    if not tol >= 0:
        raise ValueError(f"tol must be >= 0 (got {tol!r})")
    configs = list(configs)
    if not configs:
        raise ValueError("configs must hold the grid's configurations (got none)")
    for c in configs:
        fig3d_kind(c)
    rows = list(rows)
    out: dict[float, list[CheckStatus]] = {}
    for eps in sorted({_eps_key(c) for c in configs}):
        kept, (present, total) = _complete_seeds(rows, configs, eps)
        if not kept:
            out[eps] = [CheckStatus(n, PENDING, f"waits for a complete seed: {present} of {total} runs in", k)
                        for n, k in zip(CHECKS, CHECK_KINDS)]
            continue
        out[eps] = _checks(fig3d_table(kept), eps, tol)
    return out


def complete_rows(rows: Iterable["RunResult"], configs: Sequence["RunConfig"]) -> "list[RunResult]":
    """The ``rows`` that lie in complete seeds of their privacy level (what :func:`fig3d_status` reads; plot these)."""
    rows = list(rows)
    out: list = []
    for eps in sorted({_eps_key(c) for c in configs}):
        out += _complete_seeds(rows, configs, eps)[0]
    return out

