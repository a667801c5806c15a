"""Fig. 6's readings (MR-MTL paper, Sec. 6, Fig. 6 and App. C.5) as checks that can fail, on stored runs.

The paper reads its Fig. 6 (rotated and masked MNIST, the ConvNet, every silo at one (ε, δ)) as:

(a) without masks, IFCA-warm-started MR-MTL matches IFCA, and the two are the best methods; warm-starting *local*
    training gains nothing (a silo that trains alone forgets where it started);
(b) as the mask ratio grows, MR-MTL (plain or warm-started) stays the best method;
(c) as the mask ratio grows, the warm start's gain over plain MR-MTL shrinks (the silo-specific masks, not the
    rotation groups, become the main heterogeneity).

Each method is taken at its best (λ, η) for the cell, as the paper does (hyper-parameters picked on the test
metric, the tuning not charged to privacy).  A fourth check, (d), is about the grid, not the paper: every best λ of
MR-MTL and of the warm-started MR-MTL must lie strictly inside the λ grid, or the "best" is only the grid's edge.

Comparisons are made in standard errors (SE) over seeds, SE of the difference: "a matches b" means
``abs(a - b) <= max(tol, 2 SE)``; "a beats b" means ``a - b > -max(tol, 2 SE)`` (a is not worse beyond noise).  With two seeds the SE is
rough; the details printed with each check give the numbers so that a reader can judge.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable, Sequence

from fedtrain.analysis import best_by_setting

if TYPE_CHECKING:  # pragma: no cover
    from fedtrain.config import RunConfig
    from fedtrain.engine import RunResult

__all__ = ["KINDS", "PaperCheck", "fig6_kind", "fig6_table", "fig6_checks"]

#: The six kinds of runs of Fig. 6 (Algorithm A2's two warm-started variants by what runs after the warm start).
KINDS = ("Local", "FedAvg", "IFCA", "MR-MTL", "IFCA → Local", "IFCA → MR-MTL")


@dataclass(frozen=True)
class PaperCheck:
    """One reading of a paper figure, checked on stored runs: ``holds`` and the numbers behind it."""

    name: str
    holds: bool
    detail: str


def fig6_kind(config: "RunConfig") -> str:
    """The kind of a Fig. 6 run (:data:`KINDS`): ``ifca-mrmtl`` at λ = 0 is IFCA-warm-started local training."""
    m = config.method
    if m == "ifca-mrmtl":
        return "IFCA → Local" if config.lam == 0 else "IFCA → MR-MTL"
    names = {"local": "Local", "fedavg": "FedAvg", "ifca": "IFCA", "mrmtl": "MR-MTL"}
    if m not in names:
        raise ValueError(f"config.method must be one of local, fedavg, ifca, mrmtl, ifca-mrmtl (got {m!r})")
    return names[m]


def fig6_table(rows: Iterable["RunResult"], eps: float) -> dict[tuple[str, float], dict[str, Any]]:
    """``{(kind, mask ratio): best cell}`` at privacy level ``eps`` (``math.inf``: without privacy); a cell as in
    :func:`fedtrain.analysis.best_by_setting` (``mean``, ``std``, ``n``, ``lam``, ``lr``) plus ``lams``: the λ
    values run for that cell."""
    rows = [r for r in rows if r.config.eps == eps or (math.isinf(eps) and math.isinf(r.config.eps))]
    if not rows:
        raise ValueError(f"no runs at eps={eps!r}")
    mask = lambda c: float(c.dataset_options.get("mask_ratio", 0.0))  # noqa: E731
    table = best_by_setting(rows, mask, label=fig6_kind)
    for (kind, ratio), cell in table.items():
        cell["lams"] = tuple(sorted({float(r.config.lam) for r in rows
                                     if fig6_kind(r.config) == kind and mask(r.config) == ratio}))
    return table


def _se(cell: dict) -> float:
    return cell["std"] / math.sqrt(cell["n"]) if cell["n"] > 1 else math.nan


def _margin(a: dict, b: dict, tol: float) -> float:
    se = math.sqrt(_se(a) ** 2 + _se(b) ** 2)
    return max(tol, 2 * se) if math.isfinite(se) else tol


def _fmt(cell: dict) -> str:
    return f"{cell['mean']:.3f}" + (f" ± {_se(cell):.3f}" if cell["n"] > 1 else " (1 seed)")


def fig6_checks(rows: Iterable["RunResult"], eps: float, *, tol: float = 0.01) -> list[PaperCheck]:
    """Checks (a)–(d) of the module docstring on the runs at ``eps``; ``tol`` (accuracy) is the smallest margin
    a comparison allows (used when 2 SE is smaller, e.g. with one seed).  Needs every kind at every mask ratio,
    and at least two mask ratios."""
    if not tol >= 0:
        raise ValueError(f"tol must be >= 0 (got {tol!r})")
    t = fig6_table(rows, eps)
    ratios: Sequence[float] = sorted({r for _, r in t})
    missing = [(k, r) for k in KINDS for r in ratios if (k, r) not in t]
    if missing:
        raise ValueError(f"Fig. 6 needs every kind at every mask ratio; missing {missing}")
    if len(ratios) < 2:
        raise ValueError(f"Fig. 6's checks need at least two mask ratios (got {list(ratios)})")
    r0, r_max = ratios[0], ratios[-1]
    c = lambda kind, r: t[(kind, r)]  # noqa: E731
    out = []

    wm, ifca = c("IFCA → MR-MTL", r0), c("IFCA", r0)
    m = _margin(wm, ifca, tol)
    out.append(PaperCheck(f"(a) mask {r0:g}: IFCA-warm-started MR-MTL matches IFCA",
                          abs(wm["mean"] - ifca["mean"]) <= m,
                          f"{_fmt(wm)} vs {_fmt(ifca)} (margin {m:.3f})"))
    top = max((c(k, r0) for k in KINDS), key=lambda x: x["mean"])
    leaders = [k for k in ("IFCA", "IFCA → MR-MTL") if top["mean"] - c(k, r0)["mean"] <= _margin(top, c(k, r0), tol)]
    out.append(PaperCheck(f"(a) mask {r0:g}: IFCA and its MR-MTL warm start are the best",
                          len(leaders) > 0,
                          f"best {top['label']} {_fmt(top)}; within the margin: {', '.join(leaders) or 'neither'}"))
    wl, loc = c("IFCA → Local", r0), c("Local", r0)
    m = _margin(wl, loc, tol)
    out.append(PaperCheck(f"(a) mask {r0:g}: warm-starting local training gains nothing",
                          wl["mean"] - loc["mean"] <= m,
                          f"IFCA → Local {_fmt(wl)} vs Local {_fmt(loc)} (margin {m:.3f})"))

    for r in ratios[1:]:
        mr = max((c("MR-MTL", r), c("IFCA → MR-MTL", r)), key=lambda x: x["mean"])
        rivals = [k for k in ("Local", "FedAvg", "IFCA", "IFCA → Local")
                  if c(k, r)["mean"] - mr["mean"] > _margin(mr, c(k, r), tol)]
        out.append(PaperCheck(f"(b) mask {r:g}: MR-MTL (plain or warm-started) is the best",
                              not rivals,
                              f"{mr['label']} {_fmt(mr)}; " + ("no other method above it beyond the margin" if not rivals
                                                               else "beaten by " + ", ".join(
                                                                   f"{k} {_fmt(c(k, r))}" for k in rivals))))

    gain = {r: c("IFCA → MR-MTL", r)["mean"] - c("MR-MTL", r)["mean"] for r in ratios}
    se = lambda r: math.sqrt(_se(c("IFCA → MR-MTL", r)) ** 2 + _se(c("MR-MTL", r)) ** 2)  # noqa: E731
    m = max(tol, 2 * math.sqrt(se(r0) ** 2 + se(r_max) ** 2)) if math.isfinite(se(r0) + se(r_max)) else tol
    out.append(PaperCheck(f"(c) the warm start's gain shrinks from mask {r0:g} to {r_max:g}",
                          gain[r0] - gain[r_max] > m,
                          "gain over MR-MTL: " + ", ".join(f"{gain[r]:+.3f} at {r:g}" for r in ratios)
                          + f" (margin {m:.3f})"))

    edges = []
    for kind in ("MR-MTL", "IFCA → MR-MTL"):
        for r in ratios:
            cell = c(kind, r)
            if len(cell["lams"]) < 3 or cell["lam"] in (min(cell["lams"]), max(cell["lams"])):
                edges.append(f"{kind} at mask {r:g}: λ = {cell['lam']:g} of {list(cell['lams'])}")
    out.append(PaperCheck("(d) every best λ lies inside the λ grid", not edges,
                          "all interior" if not edges else "; ".join(edges)))
    return out
