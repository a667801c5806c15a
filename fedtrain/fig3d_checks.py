"""Fig. 3(d)'s readings (MR-MTL paper, Sec. 5, Fig. 3) as checks that can fail, on stored runs of a label-skewed grid.

The paper reads its Fig. 3 (privacy-utility curves: test accuracy against the per-silo ε, every method at its best
λ and η, the same (ε, δ) for every silo) as:

1. MR-MTL is consistently the best method, at least as good as both endpoints (Local and FedAvg), except in the
   high-privacy regime;
2. there is a band of ε where MR-MTL clearly beats both endpoints (the paper names the band for panels (a)–(c):
   ε ≈ 0.5 on Vehicle, ≈ 6 on School, ≈ 1.5 on GLEAM; for panel (d) it names none);
3. on panel (d), heterogeneous CIFAR-10, finetuning beats local training.

Readings 1 and 2 are read at each privacy level as one check, "MR-MTL beats both Local and FedAvg", with three
verdicts (:func:`fedtrain.claim_check.verdict`, margin ``max(tol, 2 SE)`` of the difference,
:func:`fedtrain.claim_check.margin`): it **holds** where MR-MTL beats both beyond the margin (a level in reading 2's
band), is a **tie** where MR-MTL is within the margin of an endpoint and below neither beyond it (reading 1's "at
least as good", not more), and **fails** where an endpoint is above it beyond the margin.  Reading 3, "finetuning
beats local training", has the same three verdicts.  These are the paper's readings
(:data:`~fedtrain.claim_check.PAPER_READING`).

MR-MTL is taken at its best λ over ``{0} ∪`` the λ grid, λ = 0 being Local's run (the one definition of
:mod:`fedtrain.fig6_checks`): MR-MTL at its best λ is never below Local, and where λ = 0 is its best, "MR-MTL beats
Local" is a tie at best.

A third check is about the grid, not the paper (:data:`~fedtrain.claim_check.GRID_CHECK`): MR-MTL's best λ over
the grid must be *located*, as in :mod:`fedtrain.fig6_checks` (d): strictly inside the λ grid, or at an end of the
profile, λ = 0 (Local) or λ → ∞ (FedAvg), whose run is at least as good as every λ of the grid
(:func:`~fedtrain.fig6_checks.locate_lambda`); a best at the grid's edge that beats the end beyond it by less than
the margin is a tie (the data cannot tell whether the optimum lies beyond the grid), by more it fails.

Comparisons are in standard errors over seeds, as in :mod:`fedtrain.fig6_checks`.  Each
privacy level is read on its complete seeds only (a seed whose every run at that ε is computed), so that MR-MTL's
best λ is chosen over the whole λ grid and every method is averaged over the same seeds.  A tuned grid's clip-only
controls (``clip_only_eps``) are no privacy level of the figure: :mod:`fedtrain.dp_costs` reads them.

Method names and labels come from the method registry (:func:`fedtrain.methods.registry.method_spec`).
"""
from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING, Any, Iterable, Sequence

from fedtrain.analysis import best_by_setting
from fedtrain.claim_check import (FAILS, GRID_CHECK, HOLDS, PAPER_READING, PENDING, TIE, ClaimCheck, verdict,
                                  worst)
from fedtrain.fig6_checks import _fmt, _margin, best_lambda_text, complete_blocks, fold_lambda_ends, locate_lambda
from fedtrain.methods.registry import method_spec

if TYPE_CHECKING:  # pragma: no cover
    from fedtrain.config import RunConfig
    from fedtrain.engine import RunResult

__all__ = ["METHODS", "KINDS", "CHECKS", "CHECK_KINDS", "HOLDS", "TIE", "FAILS", "PENDING", "fig3d_kind", "fig3d_table",
           "fig3d_status", "complete_rows", "privacy_levels", "with_lambda_zero"]

#: The methods of Fig. 3(d), by registry name (IFCA with 10 % of the rounds selecting clusters privately).
METHODS = ("local", "fedavg", "finetune", "mrmtl", "ifca")
#: Their labels, from the registry.
KINDS = tuple(method_spec(m).label for m in METHODS)
_LOCAL, _FEDAVG, _FINETUNE, _MRMTL, _IFCA = KINDS
#: The checks' names, in the order :func:`fig3d_status` returns them.
CHECKS = (f"{_MRMTL} beats both {_LOCAL} and {_FEDAVG}",
          f"Finetuning ({_FINETUNE}) beats local training ({_LOCAL})",
          f"{_MRMTL}'s best λ is located (inside the λ grid, or at λ = 0 or λ → ∞)")
#: Each check's kind, in the order of :data:`CHECKS`: the paper's readings, then the check of the grid.
CHECK_KINDS = (PAPER_READING, PAPER_READING, GRID_CHECK)


def fig3d_kind(config: "RunConfig") -> str:
    """The method of a Fig. 3(d) run (:data:`KINDS`)."""
    if config.method not in METHODS:
        raise ValueError(f"config.method must be one of {', '.join(METHODS)} (got {config.method!r})")
    return method_spec(config.method).label


def _eps_key(c: Any) -> float:
    return math.inf if math.isinf(c.eps) else float(c.eps)


def fig3d_table(rows: Iterable["RunResult"]) -> dict[tuple[str, float], dict[str, Any]]:
    """``{(kind, ε): best cell}`` (:func:`fedtrain.analysis.best_by_setting`: ``mean``, ``std``, ``n``, ``lam``,
    ``lr``) plus ``lams``, the λ values > 0 run for that cell; MR-MTL at its best λ over ``{0} ∪`` its grid
    (:func:`fedtrain.fig6_checks.fold_lambda_ends`: λ = 0 is Local's run; ``grid`` its best over the grid)."""
    rows = list(rows)
    table = best_by_setting(rows, _eps_key, label=fig3d_kind)
    for (kind, eps), cell in table.items():
        cell["lams"] = tuple(sorted({float(r.config.lam) for r in rows
                                     if fig3d_kind(r.config) == kind and _eps_key(r.config) == eps}))
    return fold_lambda_ends(table, {_MRMTL: (_LOCAL, _FEDAVG)})


def with_lambda_zero(rows: Iterable["RunResult"]) -> "list[RunResult]":
    """``rows`` and, for every Local run, the same run as MR-MTL at λ = 0 (Algorithm A1 with λ = 0 trains each silo
    alone: Local), so that a figure taking each method at its best λ (e.g.
    :func:`fedtrain.figures.plot_privacy_utility`) takes MR-MTL's over ``{0} ∪`` its grid, as :func:`fig3d_table`
    does.  The copies are for plotting: they carry Local's numbers under MR-MTL's configuration at λ = 0."""
    rows = list(rows)
    zero = [dataclasses.replace(r, config=r.config.replace(method="mrmtl", lam=0.0))
            for r in rows if r.config.method == "local"]
    return rows + zero


def privacy_levels(configs: Sequence["RunConfig"], clip_only_eps: "float | None" = None) -> list[float]:
    """The privacy levels of the grid ``configs`` that the figure reads, ascending (``math.inf``: without privacy),
    leaving out the clip-only controls' ε (``clip_only_eps``)."""
    return sorted({_eps_key(c) for c in configs if clip_only_eps is None or c.eps != clip_only_eps})


def _complete_seeds(rows: Sequence["RunResult"], configs: Sequence["RunConfig"], eps: float):
    """The runs at ``eps`` in complete seeds, and ``(runs present, runs in the grid)`` at ``eps``: the complete blocks
    of :func:`fedtrain.fig6_checks.complete_blocks` (a grid without mask ratios has one block per seed)."""
    kept, counts = complete_blocks(rows, configs, eps)
    return kept, (sum(n for n, _ in counts.values()), sum(m for _, m in counts.values()))


def _checks(t: dict, eps: float, tol: float) -> list[ClaimCheck]:
    c = lambda kind: t[(kind, eps)]  # noqa: E731
    mr = c(_MRMTL)
    ends = {k: (mr["mean"] - c(k)["mean"], _margin(mr, c(k), tol)) for k in (_LOCAL, _FEDAVG)}
    vs = "; ".join(f"{k} {_fmt(c(k))} (difference {d:+.3f}, margin {m:.3f})" for k, (d, m) in ends.items())
    both = worst(*(verdict(d, m) for d, m in ends.values()))
    out = [ClaimCheck(CHECKS[0], both, f"{_MRMTL} {_fmt(mr)} at {best_lambda_text(mr)}; {vs}", CHECK_KINDS[0])]
    ft, loc = c(_FINETUNE), c(_LOCAL)
    m = _margin(ft, loc, tol)
    out.append(ClaimCheck(CHECKS[1], verdict(ft["mean"] - loc["mean"], m),
                          f"{_FINETUNE} {_fmt(ft)} vs {_LOCAL} {_fmt(loc)} (difference "
                          f"{ft['mean'] - loc['mean']:+.3f}, margin {m:.3f})", CHECK_KINDS[1]))
    where, text = locate_lambda(mr, (_LOCAL, c(_LOCAL)), (_FEDAVG, c(_FEDAVG)), tol)
    out.append(ClaimCheck(CHECKS[2], where, text, CHECK_KINDS[2]))
    return out


def fig3d_status(rows: Iterable["RunResult"], configs: Sequence["RunConfig"], *, tol: float = 0.01,
                 clip_only_eps: "float | None" = None) -> dict[float, list[ClaimCheck]]:
    """The checks of the module docstring (:data:`CHECKS`) at each privacy level of the grid ``configs`` (e.g.
    :func:`fedtrain.deep_grids.deep_grid` ``("fig3d-fashion")``, or a tuned grid's configurations with its clip-only
    controls at ``clip_only_eps``, left out), of which only ``rows`` may be computed: ``{ε: [check, ...]}``, ε
    ascending (``math.inf``: without privacy).  A level is read on its complete seeds; with none, its checks are
    :data:`~fedtrain.claim_check.PENDING`, saying how many of its runs are in.  ``tol`` (accuracy) is the smallest
    margin a comparison allows.  Render with :func:`fedtrain.fig6_checks.fig6_status_html`."""
    if not tol >= 0:
        raise ValueError(f"tol must be >= 0 (got {tol!r})")
    configs = list(configs)
    if not configs:
        raise ValueError("configs must hold the grid's configurations (got none)")
    for c in configs:
        fig3d_kind(c)
    rows = list(rows)
    out: dict[float, list[ClaimCheck]] = {}
    for eps in privacy_levels(configs, clip_only_eps):
        kept, (present, total) = _complete_seeds(rows, configs, eps)
        if not kept:
            out[eps] = [ClaimCheck(n, PENDING, f"waits for a complete seed: {present} of {total} runs in", k)
                        for n, k in zip(CHECKS, CHECK_KINDS)]
            continue
        out[eps] = _checks(fig3d_table(kept), eps, tol)
    return out


def complete_rows(rows: Iterable["RunResult"], configs: Sequence["RunConfig"], *,
                  clip_only_eps: "float | None" = None) -> "list[RunResult]":
    """The ``rows`` that lie in complete seeds of their privacy level (what :func:`fig3d_status` reads; plot these),
    the clip-only controls (``clip_only_eps``) left out."""
    rows = list(rows)
    out: list = []
    for eps in privacy_levels(configs, clip_only_eps):
        out += _complete_seeds(rows, configs, eps)[0]
    return out
