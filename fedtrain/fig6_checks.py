"""Fig. 6's readings (MR-MTL paper, Sec. 6, Fig. 6 and App. C.5) as checks that can fail, on stored runs.

The paper reads its Fig. 6 (rotated and masked MNIST, the ConvNet, every silo at one (ε, δ)) as:

(a) without masks, IFCA-warm-started MR-MTL matches IFCA, and the two are the best methods (each of them, not
    only the better one); warm-starting *local* training gains nothing (a silo that trains alone forgets where it
    started);
(b) as the mask ratio grows, MR-MTL (plain or warm-started) stays the best method;
(c) as the mask ratio grows, the warm start's gain over plain MR-MTL shrinks (the silo-specific masks, not the
    rotation groups, become the main heterogeneity).  The reading presupposes a gain: it holds only where the warm
    start beats plain MR-MTL at the smallest mask ratio and the gain falls toward the largest, each beyond its
    margin; with no gain at the smallest mask ratio it is at best a tie (none within the margin) and fails where the
    warm start loses there beyond it.

**Best λ.**  Each method is taken at its best (λ, η) for the cell, as the paper does.  A method with a
regularization strength (the registry's ``uses_lambda``: MR-MTL and its IFCA warm start) has one definition of its
best λ here and in the book: the λ of the best mean accuracy over ``{0} ∪`` the λ grid, where λ = 0 is the run at
the profile's λ = 0 end (:data:`LAMBDA_ENDS`: Local for MR-MTL, IFCA → Local for the warm start), and a tie goes to
λ = 0.  So MR-MTL at its best λ is never below Local, and a best λ of 0 says that no pull toward the centre helped.

(a)–(c) are **paper readings** (:data:`~fedtrain.claim_check.PAPER_READING`).  A fourth check, (d), is a **grid
check** (:data:`~fedtrain.claim_check.GRID_CHECK`), about this project's λ grid, not the paper: every best λ of
MR-MTL and of the warm-started MR-MTL must be *located*.  λ interpolates between two runs of the grid (the paper's
reading of λ, Fig. 5): λ = 0 is Local (for the warm-started MR-MTL, IFCA → Local) and λ → ∞ pins every silo to the
centre, FedAvg (for the warm-started MR-MTL, IFCA).  A best λ strictly inside the λ grid is located; so is a best
that is one of the two ends (the end's run is at least as good as every λ > 0 of the grid: no λ > 0 helps, or
every λ pulls too little).  A best λ on the grid's smallest or largest value that beats the end beyond it by more
than the margin below is not (it fails): the optimum may lie between them, outside the grid, and the grid must reach
further there; by less than the margin it is a tie, as a reading is.

Comparisons are made in standard errors (SE) over seeds, SE of the difference, with the margin
``m = max(tol, 2 SE)`` (:func:`fedtrain.claim_check.margin`; with one seed the stated accuracy margin ``tol``).  A
reading that says one thing is better than another ("the best", "shrinks") has three verdicts
(:func:`fedtrain.claim_check.verdict`): :data:`HOLDS` when the difference exceeds the margin, :data:`TIE` when it
lies within it (not worse beyond noise, not better either: the data cannot tell them apart), :data:`FAILS` when
the other is better beyond the margin.  A reading that says two things are alike ("matches", "gains nothing")
holds within the margin and fails outside it (:func:`fedtrain.claim_check.alike`): for it a tie is what it claims.
With two seeds the SE is rough; the details printed with each check give the numbers so that a reader can judge.

Method names and labels come from the method registry (:func:`fedtrain.methods.registry.method_spec`) and the
curve a run belongs to from :func:`fedtrain.deep_grids.method_family`.
"""
from __future__ import annotations

import html
import math
from typing import TYPE_CHECKING, Any, Iterable, Sequence

from fedtrain.analysis import best_by_setting, spread_text
from fedtrain.claim_check import (FAILS, GRID_CHECK, HOLDS, PAPER_READING, PENDING, TIE, ClaimCheck, alike, margin,
                                  verdict, worst)
from fedtrain.dp_costs import DPCosts
from fedtrain.methods.registry import method_spec
from fedtrain.book_results import grid_configs, grid_file, grid_rows
from fedtrain.deep_grids import REAL_IMAGE_GRIDS, control_key, deep_grid, method_family, tuned_settings

if TYPE_CHECKING:  # pragma: no cover
    from fedtrain.config import RunConfig
    from fedtrain.engine import RunResult

__all__ = ["FAMILIES", "KINDS", "LAMBDA_ENDS", "family_label", "locate_lambda", "fig6_kind", "fig6_table",
           "fig6_checks", "fold_lambda_ends", "HOLDS", "TIE", "FAILS", "PENDING", "PAPER_READING", "GRID_CHECK", "verdict",
           "complete_blocks", "fig6_status", "fig6_status_html", "best_lambda_text", "grid_costs", "CHAPTER_GRIDS",
           "committed_grid", "shown_grid", "tuning_scores", "tuning_table", "tuning_report"]

#: The curves of Fig. 6, by :func:`fedtrain.deep_grids.method_family`: the registry's methods, IFCA-warm-started MR-MTL
#: (Algorithm A2) split by what runs after the warm start (λ = 0: IFCA → Local).
FAMILIES = ("local", "fedavg", "ifca", "mrmtl", "ifca-local", "ifca-mrmtl")


def family_label(family: str) -> str:
    """The label of a curve (:data:`FAMILIES`, or any registered method): the registry's label; the warm-started
    variants named by what runs after IFCA's warm start (``"IFCA → Local"``, ``"IFCA → MR-MTL"``)."""
    if family == "ifca-local":
        return f"{method_spec('ifca').label} → {method_spec('local').label}"
    if family == "ifca-mrmtl":
        return f"{method_spec('ifca').label} → {method_spec('mrmtl').label}"
    return method_spec(family).label


#: The six kinds of runs of Fig. 6 (labels of :data:`FAMILIES`, from the registry).
KINDS = tuple(family_label(f) for f in FAMILIES)
#: The runs at the two ends of each λ profile (λ = 0, λ → ∞), by kind: the paper's interpolation reading of λ.
LAMBDA_ENDS = {family_label("mrmtl"): (family_label("local"), family_label("fedavg")),
               family_label("ifca-mrmtl"): (family_label("ifca-local"), family_label("ifca"))}


def fig6_kind(config: "RunConfig") -> str:
    """The kind of a Fig. 6 run (:data:`KINDS`): ``ifca-mrmtl`` at λ = 0 is IFCA-warm-started local training."""
    family = method_family(config)
    if family not in FAMILIES:
        raise ValueError(f"config.method must be one of local, fedavg, ifca, mrmtl, ifca-mrmtl (got {config.method!r})")
    return family_label(family)


def _is_eps(c: Any, eps: float) -> bool:
    return c.eps == eps or (math.isinf(eps) and math.isinf(c.eps))


def fold_lambda_ends(table: dict, ends: "dict[str, tuple[str, str]]") -> dict:
    """Each λ profile's cell of ``table`` (``{(kind, setting): cell}``, cells of
    :func:`fedtrain.analysis.best_by_setting` over λ > 0, with ``lams``) at its best λ over ``{0} ∪`` its λ grid
    (the module docstring's one definition): where the λ = 0 end (``ends[kind][0]``) is at least as good, the cell is
    the end's run at ``lam = 0`` with ``end`` naming it.  Every λ-profile cell keeps its best over the grid as
    ``grid`` (check (d) reads it).  Returns a new table; ``table`` is not changed."""
    out = {key: dict(cell) for key, cell in table.items()}
    for (kind, setting), cell in table.items():
        if kind not in ends:
            continue
        low = table.get((ends[kind][0], setting))
        folded = dict(cell, grid=dict(cell))
        if low is not None and low["mean"] >= cell["mean"]:
            folded.update({k: low[k] for k in ("mean", "std", "n", "lr", "diverged") if k in low},
                          lam=0.0, end=low["label"])
        out[(kind, setting)] = folded
    return out


def fig6_table(rows: Iterable["RunResult"], eps: float) -> dict[tuple[str, float], dict[str, Any]]:
    """``{(kind, mask ratio): best cell}`` at privacy level ``eps`` (``math.inf``: without privacy); a cell as in
    :func:`fedtrain.analysis.best_by_setting` (``label``, ``mean``, ``std``, ``n``, ``lam``, ``lr``) plus ``lams``,
    the λ values > 0 run for that cell.  A λ profile (MR-MTL, IFCA → MR-MTL) is at its best λ over ``{0} ∪`` its λ
    grid (:func:`fold_lambda_ends`: ``lam = 0`` and ``end`` when its λ = 0 end is at least as good; ``grid``, its
    best over the grid)."""
    rows = [r for r in rows if _is_eps(r.config, eps)]
    if not rows:
        raise ValueError(f"no runs at eps={eps!r}")
    mask = lambda c: float(c.dataset_options.get("mask_ratio", 0.0))  # noqa: E731
    table = best_by_setting(rows, mask, label=fig6_kind)
    for (kind, ratio), cell in table.items():
        cell["lams"] = tuple(sorted({float(r.config.lam) for r in rows
                                     if fig6_kind(r.config) == kind and mask(r.config) == ratio}))
    return fold_lambda_ends(table, LAMBDA_ENDS)


def best_lambda_text(cell: dict) -> str:
    """A λ-profile cell's best λ in words: ``"λ = 0.1"``, or ``"λ = 0 (Local)"`` where the λ = 0 end is the best."""
    return f"λ = {cell['lam']:g}" + (f" ({cell['end']})" if cell.get("end") else "")


def _se(cell: dict) -> float:
    return cell["std"] / math.sqrt(cell["n"]) if cell["n"] > 1 else math.nan


def _margin(a: dict, b: dict, tol: float) -> float:
    return margin(math.sqrt(_se(a) ** 2 + _se(b) ** 2), tol)


def _fmt(cell: dict) -> str:
    """Mean ± SE over seeds at 3 decimals; an SE that rounds to zero reads "± <0.001" (seeds that agree to the
    digits shown), one seed "(1 seed)"."""
    if cell["n"] <= 1:
        return f"{cell['mean']:.3f} (1 seed)"
    return f"{cell['mean']:.3f} ± {spread_text(_se(cell), 3)}"


def _at(cell: dict) -> str:
    """A λ-profile cell with its best λ, e.g. ``"0.512 ± 0.003 at λ = 0 (Local)"``."""
    return f"{_fmt(cell)} at {best_lambda_text(cell)}" if "grid" in cell else _fmt(cell)


_L, _F, _I, _M, _IL, _IM = KINDS


def _name_a(r0: float) -> list[str]:
    return [f"(a) mask {r0:g}: {_IM} matches {_I}",
            f"(a) mask {r0:g}: {_I} and {_IM} are the best",
            f"(a) mask {r0:g}: warm-starting local training ({_IL}) gains nothing over {_L}"]


def _name_b(r: float) -> str:
    return f"(b) mask {r:g}: {_M} or {_IM} is the best"


def _name_c(r0: float, r_max: float) -> str:
    return f"(c) the warm start's gain ({_IM} − {_M}) shrinks from mask {r0:g} to {r_max:g}"


NAME_D = "(d) every best λ is located (inside the λ grid, or at λ = 0 or λ → ∞)"


def _best_of(t: dict, r: float, group: Sequence[str], tol: float, *, every: bool = False) -> tuple[str, str]:
    """Whether the best of the kinds ``group`` is the best method at mask ``r``: :data:`HOLDS` when it beats every
    kind outside ``group`` beyond the margin, :data:`TIE` when one of them is within the margin of it (none above
    beyond it), :data:`FAILS` when one of them is above it beyond the margin; and the numbers.  ``every``: whether
    *each* kind of ``group`` is the best (``"the two are the best"``): the worst of their verdicts
    (:func:`fedtrain.claim_check.worst`), each kind against the kinds outside ``group``."""
    rivals = {k: t[(k, r)] for k in KINDS if k not in group}
    if every:
        found = [_leads(t[(k, r)], rivals, tol) for k in group]
        return worst(*(v for v, _ in found)), "; ".join(text for _, text in found)
    return _leads(max((t[(k, r)] for k in group), key=lambda x: x["mean"]), rivals, tol)


def _leads(lead: dict, rivals: dict, tol: float) -> tuple[str, str]:
    """Whether the cell ``lead`` beats every cell of ``rivals`` (by kind) beyond the margin (:func:`_best_of`)."""
    margins = {k: _margin(lead, x, tol) for k, x in rivals.items()}
    others = {k: (verdict(lead["mean"] - x["mean"], margins[k]), margins[k]) for k, x in rivals.items()}
    above = [k for k, (v, _) in others.items() if v == FAILS]
    level = [k for k, (v, _) in others.items() if v == TIE]
    v = worst(*(x for x, _ in others.values()))
    text = f"{lead['label']} {_at(lead)}; " + (
        "beaten by " + ", ".join(f"{k} {_fmt(rivals[k])} (margin {others[k][1]:.3f})" for k in above) if above else
        "tied within the margin with " + ", ".join(f"{k} {_fmt(rivals[k])} (margin {others[k][1]:.3f})" for k in level)
        if level else "every other method below it beyond the margin (at least "
        f"{min(m for _, m in others.values()):.3f})")
    return v, text


def _checks_a(t: dict, r0: float, tol: float) -> list[ClaimCheck]:
    c = lambda kind, r: t[(kind, r)]  # noqa: E731
    names = _name_a(r0)
    wm, ifca = c(_IM, r0), c(_I, r0)
    m = _margin(wm, ifca, tol)
    out = [ClaimCheck(names[0], alike(wm["mean"] - ifca["mean"], m),
                      f"{_IM} {_at(wm)} vs {_I} {_fmt(ifca)} (margin {m:.3f})")]
    out.append(ClaimCheck(names[1], *_best_of(t, r0, (_I, _IM), tol, every=True)))
    wl, loc = c(_IL, r0), c(_L, r0)
    m = _margin(wl, loc, tol)
    out.append(ClaimCheck(names[2], HOLDS if wl["mean"] - loc["mean"] <= m else FAILS,
                          f"{_IL} {_fmt(wl)} vs {_L} {_fmt(loc)} (margin {m:.3f})"))
    return out


def _check_b(t: dict, r: float, tol: float) -> ClaimCheck:
    return ClaimCheck(_name_b(r), *_best_of(t, r, (_M, _IM), tol))


def _check_c(t: dict, ratios: Sequence[float], tol: float) -> ClaimCheck:
    c = lambda kind, r: t[(kind, r)]  # noqa: E731
    r0, r_max = ratios[0], ratios[-1]
    gain = {r: c(_IM, r)["mean"] - c(_M, r)["mean"] for r in ratios}
    se = lambda r: math.sqrt(_se(c(_IM, r)) ** 2 + _se(c(_M, r)) ** 2)  # noqa: E731
    m = margin(math.sqrt(se(r0) ** 2 + se(r_max) ** 2), tol)
    m0 = margin(se(r0), tol)
    # "the gain shrinks" presupposes a gain: the warm start must beat plain MR-MTL at the smallest mask ratio
    has_gain, shrinks = verdict(gain[r0], m0), verdict(gain[r0] - gain[r_max], m)
    why = {HOLDS: "", TIE: f"; no gain beyond the margin at mask {r0:g} ({m0:.3f}) to shrink",
           FAILS: f"; the warm start loses to {_M} at mask {r0:g} beyond the margin ({m0:.3f}): no gain to shrink"}
    return ClaimCheck(_name_c(r0, r_max), worst(has_gain, shrinks),
                      f"gain of {_IM} over {_M}: " + ", ".join(f"{gain[r]:+.3f} at {r:g}" for r in ratios)
                      + f" (margin {m:.3f}){why[has_gain]}")


def locate_lambda(cell: dict, low: tuple[str, dict], high: tuple[str, dict], tol: float = 0.01) -> tuple[str, str]:
    """Whether the best λ of a λ profile is located (the module docstring's check (d)): ``(verdict, text)``.

    ``cell``: the profile's cell (its best over the λ grid > 0 is ``cell["grid"]`` where :func:`fold_lambda_ends`
    made it, else ``cell`` itself: ``lam``, ``mean``, ``std``, ``n``; ``lams`` the λ grid > 0); ``low``/``high``: the
    names and best cells of the runs at its ends, λ = 0 and λ → ∞ (:data:`LAMBDA_ENDS`).  :data:`HOLDS` (located):
    the grid's best λ lies strictly inside the grid, or it is the grid's smallest (largest) λ and the λ = 0 (λ → ∞)
    end is at least as good.  Where the grid's edge beats the end beyond it: :data:`FAILS` by more than the margin
    (``max(tol, 2 SE)`` of the difference, :func:`fedtrain.claim_check.margin`: the grid must reach further there),
    :data:`TIE` within it (the data cannot tell whether the optimum lies beyond the grid)."""
    grid = cell.get("grid", cell)
    lam, lams = grid["lam"], cell["lams"]
    if min(lams) < lam < max(lams):
        return HOLDS, f"λ = {lam:g}"
    (name, end), side = (low, "λ = 0") if lam == min(lams) else (high, "λ → ∞")
    if end["mean"] >= grid["mean"]:
        return HOLDS, f"{side} ({name} {end['mean']:.3f} ≥ λ = {lam:g}'s {grid['mean']:.3f})"
    gap = grid["mean"] - end["mean"]
    m = _margin(grid, end, tol)
    verdict_ = FAILS if gap > m else TIE
    return verdict_, (f"λ = {lam:g}, the grid's {'smallest' if lam == min(lams) else 'largest'} of {list(lams)}, "
                      f"beats {side} ({name}): {grid['mean']:.3f} vs {end['mean']:.3f} (difference {gap:+.3f}, "
                      f"margin {m:.3f}{'' if verdict_ == FAILS else ': within it, a tie'})")


def _check_d(t: dict, ratios: Sequence[float], tol: float) -> ClaimCheck:
    found: dict = {HOLDS: [], TIE: [], FAILS: []}
    for kind, (low, high) in LAMBDA_ENDS.items():
        for r in ratios:
            v, text = locate_lambda(t[(kind, r)], (low, t[(low, r)]), (high, t[(high, r)]), tol)
            found[v].append(f"{kind} at mask {r:g}: {text}")
    v = worst(*(k for k, texts in found.items() if texts))
    detail = "; ".join(found[FAILS] + found[TIE]) if v != HOLDS else "located: " + "; ".join(found[HOLDS])
    return ClaimCheck(NAME_D, v, detail, GRID_CHECK)


def fig6_checks(rows: Iterable["RunResult"], eps: float, *, tol: float = 0.01) -> list[ClaimCheck]:
    """Checks (a)–(d) of the module docstring on the runs at ``eps`` (each with its verdict and kind: (a)–(c) paper
    readings, (d) a grid check); ``tol`` (accuracy) is the smallest margin
    a comparison allows (used when 2 SE is smaller, e.g. with one seed).  Needs every kind at every mask ratio,
    and at least two mask ratios (:func:`fig6_status` checks a grid still being computed)."""
    if not tol >= 0:
        raise ValueError(f"tol must be >= 0 (got {tol!r})")
    t = fig6_table(rows, eps)
    ratios: Sequence[float] = sorted({r for _, r in t})
    missing = [(k, r) for k in KINDS for r in ratios if (k, r) not in t]
    if missing:
        raise ValueError(f"Fig. 6 needs every kind at every mask ratio; missing {missing}")
    if len(ratios) < 2:
        raise ValueError(f"Fig. 6's checks need at least two mask ratios (got {list(ratios)})")
    return (_checks_a(t, ratios[0], tol) + [_check_b(t, r, tol) for r in ratios[1:]]
            + [_check_c(t, ratios, tol), _check_d(t, ratios, tol)])


# --------------------------------------------------------------------------------------------------
# a grid still being computed
# --------------------------------------------------------------------------------------------------
def _mask(c: Any) -> float:
    return float(c.dataset_options.get("mask_ratio", 0.0))


def complete_blocks(rows: Iterable["RunResult"], configs: Sequence["RunConfig"],
                    eps: float) -> "tuple[list[RunResult], dict[tuple[float, int], tuple[int, int]]]":
    """The runs at ``eps`` of the grid ``configs`` that lie in *complete blocks* — a (mask ratio, seed) whose every
    run of the grid is among ``rows`` — and ``{(mask ratio, seed): (runs present, runs in the grid)}`` for every
    block of the grid at ``eps``.  A Fig. 6 cell is read on complete blocks only, so that each method's best λ is
    chosen among the whole λ grid and every λ is averaged over the same seeds.  A tuned grid's clip-only controls
    (another ε) are blocks of their own at their ε."""
    configs = [c for c in configs if _is_eps(c, eps)]
    if not configs:
        raise ValueError(f"eps must be a privacy level of the grid (got {eps!r})")
    by_key = {r.config.key(): r for r in rows if _is_eps(r.config, eps)}
    blocks: dict[tuple[float, int], list] = {}
    for c in configs:
        blocks.setdefault((_mask(c), int(c.seed)), []).append(c)
    counts = {b: (sum(c.key() in by_key for c in cs), len(cs)) for b, cs in blocks.items()}
    kept = [by_key[c.key()] for b, cs in blocks.items() if counts[b][0] == counts[b][1] for c in cs]
    return kept, counts


def fig6_status(rows: Iterable["RunResult"], configs: Sequence["RunConfig"], eps: float, *,
                tol: float = 0.01) -> list[ClaimCheck]:
    """Checks (a)–(d) (:func:`fig6_checks`) on a grid ``configs`` (e.g. :func:`fedtrain.deep_grids.deep_grid`) of which
    only ``rows`` are computed: each check is evaluated on the complete blocks (:func:`complete_blocks`) when the mask
    ratios it reads have one, and is :data:`PENDING` otherwise, saying how many of its runs are in.  The checks are
    those of the full grid: (a) at its smallest mask ratio, (b) at each larger one, (c) between its smallest and
    largest, (d) on the mask ratios that have a complete block (pending while none has)."""
    if not tol >= 0:
        raise ValueError(f"tol must be >= 0 (got {tol!r})")
    rows = list(rows)
    kept, counts = complete_blocks(rows, configs, eps)
    ratios = sorted({r for r, _ in counts})
    if len(ratios) < 2:
        raise ValueError(f"the grid must have at least two mask ratios at eps={eps!r} (got {ratios})")
    done = sorted({r for (r, _), (n, m) in counts.items() if n == m})
    t = fig6_table(kept, eps) if kept else {}

    def pending_detail(rs: Sequence[float]) -> str:
        parts = [f"mask {r:g}: {sum(n for (q, _), (n, _m) in counts.items() if q == r)} of "
                 f"{sum(m for (q, _), (_n, m) in counts.items() if q == r)} runs" for r in rs if r not in done]
        return "waits for a complete seed of the runs at " + "; ".join(parts)

    r0, r_max = ratios[0], ratios[-1]
    out: list[ClaimCheck] = []
    if r0 in done:
        out += _checks_a(t, r0, tol)
    else:
        out += [ClaimCheck(n, PENDING, pending_detail([r0])) for n in _name_a(r0)]
    for r in ratios[1:]:
        out.append(_check_b(t, r, tol) if r in done else ClaimCheck(_name_b(r), PENDING, pending_detail([r])))
    if r0 in done and r_max in done:
        out.append(_check_c(t, [r for r in ratios if r in done], tol))
    else:
        out.append(ClaimCheck(_name_c(r0, r_max), PENDING, pending_detail([r0, r_max])))
    if done:
        d = _check_d(t, done, tol)
        rest = [r for r in ratios if r not in done]
        detail = d.detail + (f" (on mask {', '.join(f'{r:g}' for r in done)}; mask "
                             f"{', '.join(f'{r:g}' for r in rest)} pending)" if rest else "")
        out.append(ClaimCheck(d.name, d.verdict, detail, GRID_CHECK))
    else:
        out.append(ClaimCheck(NAME_D, PENDING, pending_detail(ratios), GRID_CHECK))
    return out


def grid_costs(rows: Iterable["RunResult"], clip_only_eps: float, steps: Iterable["RunResult"] = ()) -> list[DPCosts]:
    """What DP costs each method of a tuned grid (``*-tuned`` of :data:`fedtrain.deep_grids.REAL_IMAGE_GRIDS`), from its
    clip-only controls (:mod:`fedtrain.dp_costs`): for every control run (ε = ``clip_only_eps``: a method's best
    private configuration on the validation split, same λ, η and clip, negligible noise) the grid's run of the same
    configuration at each private ε and the method's run at the same λ without DP, in the same mask ratio and seed.

    The run without DP is at the control's η: the grid's own where its η tuned for no DP is the same (then
    ``nodp_tuned`` is the same number: the step costs nothing), else the step control in ``steps`` (rows of the grid's
    ``*-steps`` grid, :func:`fedtrain.deep_grids.step_controls`), and then the grid's own run gives ``nodp_tuned``
    (the smaller step's cost).  Where the step control is not in ``steps``
    (yet), the grid's own run at its own η stands in, and its "clipping cost" holds the smaller step's cost too (the
    :class:`DPCosts` has no ``nodp_tuned``).  Averaged over the seeds whose runs are all in ``rows`` (and, where any
    seed of a cell has its step control, over those seeds only: one kind of number a cell); a partial grid gives what
    its complete seeds allow.  One :class:`DPCosts` per method, λ, η, mask ratio and private ε, in the order of
    :data:`FAMILIES` (then other methods), mask, ε."""
    rows = [r for r in rows if not getattr(r, "diverged", False)]
    private: dict = {}
    nodp: dict = {}
    for r in rows:
        c = r.config
        if math.isinf(c.eps):
            nodp[control_key(c)] = r
        elif c.eps != clip_only_eps:
            private[(control_key(c), float(c.lr), float(c.eps))] = r
    same_eta = {(control_key(r.config), float(r.config.lr)): r for r in steps
                if not getattr(r, "diverged", False) and math.isinf(r.config.eps)}
    eps_values = sorted({e for (_, _, e) in private})
    cells: dict = {}
    for r in rows:
        c, control = r.config, control_key(r.config)
        if c.eps != clip_only_eps or control not in nodp:
            continue
        own = nodp[control]
        step = same_eta.get((control, float(c.lr)))
        if float(own.config.lr) == float(c.lr):  # its own η is the private η: no smaller step
            base, tuned = own.test_metric, own.test_metric
        elif step is not None:
            base, tuned = step.test_metric, own.test_metric
        else:
            base, tuned = own.test_metric, None
        for e in eps_values:
            p = private.get((control, float(c.lr), e))
            if p is not None:
                key = (method_family(c), _mask(c), float(c.lam), float(c.lr), e)
                cells.setdefault(key, []).append((base, r.test_metric, p.test_metric, tuned))
    order = {f: i for i, f in enumerate(FAMILIES)}
    masked = any("mask_ratio" in r.config.dataset_options for r in rows)
    out = []
    for (fam, mask, lam, lr, e), v in sorted(cells.items(), key=lambda kv: (order.get(kv[0][0], len(order)),
                                                                            kv[0][0], *kv[0][1:])):
        if any(x[3] is not None for x in v):
            v = [x for x in v if x[3] is not None]
        lam_text = f"λ = {lam:g}, " if lam > 0 else ""
        mean = [sum(x[i] for x in v) / len(v) for i in range(3)]
        tuned = sum(x[3] for x in v) / len(v) if v[0][3] is not None else None
        out.append(DPCosts(f"{family_label(fam)} ({lam_text}η = {lr:g})", f"mask {mask:g}" if masked else "all silos",
                           e, *mean, len(v), f"the grid's clip-only controls at ε = {clip_only_eps:g}"
                           + (" and its step controls" if tuned is not None else ""), nodp_tuned=tuned,
                           method=family_label(fam)))
    return out


# --------------------------------------------------------------------------------------------------
# which committed grid a figure of the deep chapter shows
# --------------------------------------------------------------------------------------------------
#: Per figure of the deep chapter: the noise-bound tuned grid it shows where its rows are committed, and the
#: clipping-bound grid it shows otherwise, as the regime contrast (:data:`fedtrain.deep_grids.REAL_IMAGE_GRIDS`).
CHAPTER_GRIDS = {"fig6": ("fig6-fashion-tuned", "fig6-fashion"), "fig3d": ("fig3d-fashion-tuned", "fig3d-fashion")}


def committed_grid(store: Any, grid: str) -> "tuple[list[RunResult], list[RunConfig]] | None":
    """``(rows, configs)`` of real-image grid ``grid`` in the committed ``store`` (a
    :class:`fedtrain.book_results.BookStore`), or ``None`` where its file is not committed yet, or, for a tuned
    grid, where its tuning grid is not committed whole (the tuned grid is defined by it).  A committed file that is
    stale or corrupt still raises (:meth:`~fedtrain.book_results.BookStore.grid_rows`)."""
    files = store.manifest.get("files", {})
    info = files.get(grid_file(grid))
    if not info or info.get("grid") != grid:
        return None
    tune = REAL_IMAGE_GRIDS[grid].get("tuned_by")
    if tune is not None:
        t = files.get(grid_file(tune))
        if not t or t.get("grid") != tune or t.get("missing"):
            return None
    configs = grid_configs(grid, store=store)
    return grid_rows(store, grid, configs), configs


def shown_grid(store: Any, figure: str) -> dict:
    """Which committed grid figure ``figure`` (``"fig6"`` or ``"fig3d"``, :data:`CHAPTER_GRIDS`) shows: the
    noise-bound tuned grid where its committed rows hold a complete block (a whole seed of a mask ratio and privacy
    level: :func:`complete_blocks`), else the clipping-bound grid.  Returns ``{"grid", "regime"
    ("noise-bound"/"clipping-bound"), "rows", "configs", "clip_only_eps" (``None`` without controls), "tuned"
    (the tuned grid's name), "tuned_rows" (its committed rows, possibly empty), "tuned_committed" (bool), "steps" (the
    tuned grid's step-control grid, ``*-steps``), "step_rows" (its committed rows, possibly empty: for
    :func:`grid_costs`), "step_runs" (its size)}``."""
    if figure not in CHAPTER_GRIDS:
        raise ValueError(f"figure must be one of {', '.join(map(repr, CHAPTER_GRIDS))} (got {figure!r})")
    tuned, contrast = CHAPTER_GRIDS[figure]
    got = committed_grid(store, tuned)
    spec = REAL_IMAGE_GRIDS[tuned]
    steps = next(g for g, s in REAL_IMAGE_GRIDS.items() if s.get("steps_of") == tuned)
    got_steps = committed_grid(store, steps)
    out = {"tuned": tuned, "tuned_rows": got[0] if got else [], "tuned_committed": got is not None, "steps": steps,
           "step_rows": got_steps[0] if got_steps else [], "step_runs": len(got_steps[1]) if got_steps else None}
    if got is not None and any(complete_blocks(got[0], got[1], e)[0] for e in spec["eps"]):
        return {**out, "grid": tuned, "regime": "noise-bound", "rows": got[0], "configs": got[1],
                "clip_only_eps": float(spec["clip_only_eps"])}
    rows, configs = committed_grid(store, contrast) or ([], deep_grid(contrast))
    return {**out, "grid": contrast, "regime": "clipping-bound", "rows": rows, "configs": configs,
            "clip_only_eps": None}


def tuning_scores(rows: Iterable["RunResult"]) -> list[dict]:
    """A tuning grid's choices (``*-tune``, :func:`fedtrain.deep_grids.tuned_settings`) with the validation accuracy
    behind them: one dict per method, λ and privacy (``label``, ``lam``, ``private``, ``scores`` ``{η: mean
    validation accuracy over the seeds}``, ``chosen`` η, ``best``: whether it is the method's best private
    configuration, the one its clip-only control repeats, ``edge``: ``"top"`` or ``"bottom"`` where the chosen η is
    the largest or smallest the configuration ran at, where the optimum may lie beyond the bracket, else ``None``),
    in the order of :data:`FAMILIES`."""
    rows = list(rows)
    lrs, best = tuned_settings(rows)
    by: dict = {}
    for r in rows:
        c = r.config
        by.setdefault((method_family(c), float(c.lam), math.isfinite(c.eps)), {}).setdefault(
            float(c.lr), []).append(float(r.test_metric))
    order = {f: i for i, f in enumerate(FAMILIES)}
    out = []
    for (fam, lam, private), per in sorted(by.items(), key=lambda kv: (order.get(kv[0][0], len(order)), *kv[0])):
        chosen = lrs[(fam, lam, private)]
        edge = None if len(per) < 2 else "top" if chosen == max(per) else "bottom" if chosen == min(per) else None
        out.append({"label": family_label(fam), "lam": lam, "private": private,
                    "scores": {lr: sum(v) / len(v) for lr, v in sorted(per.items())},
                    "chosen": chosen, "best": private and best.get(fam, (None,))[0] == lam, "edge": edge})
    return out


def tuning_table(rows: Iterable["RunResult"]) -> str:
    """:func:`tuning_scores` as a Markdown table: method, λ, with or without DP, validation accuracy at each η (the
    chosen one in bold, marked where it is the top or the bottom of the η values run), and a mark on each method's
    best private configuration."""
    return _tuning_markdown(tuning_scores(rows))


def _tuning_markdown(scores: list[dict]) -> str:
    """:func:`tuning_table` of already computed :func:`tuning_scores`."""
    if not scores:
        raise ValueError("rows must hold a tuning grid's runs")
    lines = ["| method | λ | DP | validation accuracy at each η (chosen in bold) | best private of its method |",
             "|---|---|---|---|---|"]
    for s in scores:
        mark = f" ({s['edge']} of the bracket)" if s["edge"] else ""
        cells = ", ".join((f"**η = {lr:g}: {v:.3f}**{mark}" if lr == s["chosen"] else f"η = {lr:g}: {v:.3f}")
                          for lr, v in s["scores"].items())
        lines.append(f"| {s['label']} | {s['lam']:g} | {'yes' if s['private'] else 'no'} | {cells} | "
                     f"{'yes' if s['best'] else ''} |")
    return "\n".join(lines)


def tuning_report(store: Any, tuned: str) -> "dict | None":
    """What the committed ``store`` holds of tuned grid ``tuned``'s tuning grid, or ``None`` where no tuning row is
    committed: ``{"grid", "present", "runs", "bracket" (its η values, ``{"private": ..., "nonprivate": ...}``),
    "table" (:func:`tuning_table`), "scores" (:func:`tuning_scores`), "at_edge" (its entries whose chosen η is the
    top or the bottom of the bracket)}``."""
    if "tuned_by" not in REAL_IMAGE_GRIDS.get(tuned, {}):
        names = [g for g, s in REAL_IMAGE_GRIDS.items() if "tuned_by" in s]
        raise ValueError(f"tuned must be a tuned grid ({', '.join(names)}); got {tuned!r}")
    tune = REAL_IMAGE_GRIDS[tuned]["tuned_by"]
    got = committed_grid(store, tune)
    if got is None or not got[0]:
        return None
    scores = tuning_scores(got[0])
    return {"grid": tune, "present": len(got[0]), "runs": len(got[1]), "bracket": REAL_IMAGE_GRIDS[tune]["lrs"],
            "table": _tuning_markdown(scores), "scores": scores, "at_edge": [s for s in scores if s["edge"]]}


_HEADINGS = {"paper reading": "the paper's readings", "paper claim": "the paper's claims",
             "grid check": "checks of this project's grid", "implementation check": "checks of the implementation",
             "privacy check": "checks of the privacy ledger"}


def fig6_status_html(columns: "dict[str, Sequence[ClaimCheck]]") -> str:
    """An HTML table of checks (:func:`fig6_status`, :func:`fedtrain.fig3d_checks.fig3d_status`): a row per check, a
    column per entry of ``columns`` (e.g. one per privacy level: ``{"ε = 4": [...], "without DP": [...]}``, each
    list naming the same checks in the same order); a cell is the verdict in bold (holds / tie / fails / pending),
    then its numbers.  The paper's readings come first, under their own heading row, then the checks of the grid
    under theirs."""
    cols = list(columns.items())
    if not cols:
        raise ValueError("columns must hold at least one list of checks")
    names = [s.name for s in cols[0][1]]
    if any([s.name for s in v] != names for _, v in cols):
        raise ValueError("columns must name the same checks in the same order")
    head = "".join(f"<th>{html.escape(k)}</th>" for k, _ in cols)
    kinds = [cols[0][1][i].kind for i in range(len(names))]
    body = []
    for kind, title in _HEADINGS.items():
        rows = [i for i, k in enumerate(kinds) if k == kind]
        if not rows:
            continue
        body.append(f'<tr><th colspan="{len(cols) + 1}">{html.escape(title)}</th></tr>')
        for i in rows:
            cells = "".join(f"<td><b>{html.escape(v[i].verdict)}</b>: {html.escape(v[i].detail)}</td>" for _, v in cols)
            body.append(f"<tr><td>{html.escape(names[i])}</td>{cells}</tr>")
    return f"<table><thead><tr><th>check</th>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
