"""Fig. 6's readings (MR-MTL paper, Sec. 6, Fig. 6 and App. C.5) as checks that can fail, on stored runs.

The paper reads its Fig. 6 (rotated and masked MNIST, the ConvNet, every silo at one (ε, δ)) as:

(a) without masks, IFCA-warm-started MR-MTL matches IFCA, and the two are the best methods; warm-starting *local*
    training gains nothing (a silo that trains alone forgets where it started);
(b) as the mask ratio grows, MR-MTL (plain or warm-started) stays the best method;
(c) as the mask ratio grows, the warm start's gain over plain MR-MTL shrinks (the silo-specific masks, not the
    rotation groups, become the main heterogeneity).

Each method is taken at its best (λ, η) for the cell, as the paper does (hyper-parameters picked on the test
metric, the tuning not charged to privacy).  (a)–(c) are **paper readings** (:data:`PAPER_READING`).  A fourth
check, (d), is a **grid check** (:data:`GRID_CHECK`), about this project's λ grid, not the paper: every best λ of
MR-MTL and of the warm-started MR-MTL must be *located*.  λ interpolates between two runs of the grid (the paper's
reading of λ, Fig. 5): λ = 0 is Local (for the warm-started MR-MTL, IFCA → Local) and λ → ∞ pins every silo to the
centre, FedAvg (for the warm-started MR-MTL, IFCA).  A best λ strictly inside the λ grid is located; so is a best
that is one of the two ends (the end's run is at least as good as every λ > 0 of the grid: no λ > 0 helps, or
every λ pulls too little).  A best λ on the grid's smallest or largest value that beats the end beyond it is not:
the optimum may lie between them, outside the grid, and the grid must reach further there.

Comparisons are made in standard errors (SE) over seeds, SE of the difference, with the margin
``m = max(tol, 2 SE)``.  A reading that says one thing is better than another ("the best", "shrinks") has three
verdicts: :data:`HOLDS` when the difference exceeds the margin, :data:`TIE` when it lies within it (not worse beyond
noise, not better either: the data cannot tell them apart), :data:`FAILS` when the other is better beyond the
margin.  A reading that says two things are alike ("matches", "gains nothing") holds within the margin and fails
outside it: for it a tie is what it claims.  With two seeds the SE is rough; the details printed with each check
give the numbers so that a reader can judge.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable, Sequence

from fedtrain.analysis import best_by_setting, spread_text

if TYPE_CHECKING:  # pragma: no cover
    from fedtrain.config import RunConfig
    from fedtrain.engine import RunResult

__all__ = ["KINDS", "LAMBDA_ENDS", "locate_lambda", "PaperCheck", "fig6_kind", "fig6_table", "fig6_checks", "CheckStatus", "HOLDS", "TIE",
           "FAILS", "PENDING", "PAPER_READING", "GRID_CHECK", "verdict", "complete_blocks", "fig6_status",
           "fig6_status_html"]

#: The six kinds of runs of Fig. 6 (Algorithm A2's two warm-started variants by what runs after the warm start).
KINDS = ("Local", "FedAvg", "IFCA", "MR-MTL", "IFCA → Local", "IFCA → MR-MTL")


HOLDS, TIE, FAILS, PENDING = "holds", "tie", "does not hold", "pending"
#: The two kinds of checks: a reading of the paper's figure, and a check of this project's own grid.
PAPER_READING, GRID_CHECK = "paper reading", "grid check"


def verdict(difference: float, margin: float) -> str:
    """The verdict on "a is better than b" from ``difference = a − b``: :data:`HOLDS` beyond ``margin``,
    :data:`FAILS` below ``−margin``, :data:`TIE` within it."""
    if not margin >= 0:
        raise ValueError(f"margin must be >= 0 (got {margin!r})")
    return HOLDS if difference > margin else (TIE if difference >= -margin else FAILS)


@dataclass(frozen=True)
class PaperCheck:
    """One check of a paper figure on stored runs: ``verdict`` (:data:`HOLDS`, :data:`TIE` or :data:`FAILS`), the
    numbers behind it, and its ``kind`` (:data:`PAPER_READING` or :data:`GRID_CHECK`).  ``holds`` is ``True`` only
    for :data:`HOLDS`: a tie is not a hold."""

    name: str
    verdict: str
    detail: str
    kind: str = PAPER_READING

    def __post_init__(self):
        if self.verdict not in (HOLDS, TIE, FAILS):
            raise ValueError(f"verdict must be one of {HOLDS!r}, {TIE!r}, {FAILS!r} (got {self.verdict!r})")
        if self.kind not in (PAPER_READING, GRID_CHECK):
            raise ValueError(f"kind must be {PAPER_READING!r} or {GRID_CHECK!r} (got {self.kind!r})")

    @property
    def holds(self) -> bool:
        return self.verdict == HOLDS


def fig6_kind(config: "RunConfig") -> str:
    """The kind of a Fig. 6 run (:data:`KINDS`): ``ifca-mrmtl`` at λ = 0 is IFCA-warm-started local training."""
    m = config.method
    if m == "ifca-mrmtl":
        return "IFCA → Local" if config.lam == 0 else "IFCA → MR-MTL"
    names = {"local": "Local", "fedavg": "FedAvg", "ifca": "IFCA", "mrmtl": "MR-MTL"}
    if m not in names:
        raise ValueError(f"config.method must be one of local, fedavg, ifca, mrmtl, ifca-mrmtl (got {m!r})")
    return names[m]


def _is_eps(c: Any, eps: float) -> bool:
    return c.eps == eps or (math.isinf(eps) and math.isinf(c.eps))


def fig6_table(rows: Iterable["RunResult"], eps: float) -> dict[tuple[str, float], dict[str, Any]]:
    """``{(kind, mask ratio): best cell}`` at privacy level ``eps`` (``math.inf``: without privacy); a cell as in
    :func:`fedtrain.analysis.best_by_setting` (``mean``, ``std``, ``n``, ``lam``, ``lr``) plus ``lams``: the λ
    values run for that cell."""
    rows = [r for r in rows if _is_eps(r.config, eps)]
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
    """Mean ± SE over seeds at 3 decimals; an SE that rounds to zero reads "± <0.001" (seeds that agree to the
    digits shown), one seed "(1 seed)"."""
    if cell["n"] <= 1:
        return f"{cell['mean']:.3f} (1 seed)"
    return f"{cell['mean']:.3f} ± {spread_text(_se(cell), 3)}"


def _name_a(r0: float) -> list[str]:
    return [f"(a) mask {r0:g}: IFCA-warm-started MR-MTL matches IFCA",
            f"(a) mask {r0:g}: IFCA and its MR-MTL warm start are the best",
            f"(a) mask {r0:g}: warm-starting local training gains nothing"]


def _name_b(r: float) -> str:
    return f"(b) mask {r:g}: MR-MTL (plain or warm-started) is the best"


def _name_c(r0: float, r_max: float) -> str:
    return f"(c) the warm start's gain shrinks from mask {r0:g} to {r_max:g}"


NAME_D = "(d) every best λ is located (inside the λ grid, or at λ = 0 or λ → ∞)"
#: The runs at the two ends of each λ profile (λ = 0, λ → ∞), by kind: the paper's interpolation reading of λ.
LAMBDA_ENDS = {"MR-MTL": ("Local", "FedAvg"), "IFCA → MR-MTL": ("IFCA → Local", "IFCA")}


def _best_of(t: dict, r: float, group: Sequence[str], tol: float) -> tuple[str, str]:
    """Whether the best of the kinds ``group`` is the best method at mask ``r``: :data:`HOLDS` when it beats every
    other kind beyond the margin, :data:`TIE` when some other kind is within the margin of it (none above beyond
    it), :data:`FAILS` when some other kind is above it beyond the margin; and the numbers."""
    c = lambda kind: t[(kind, r)]  # noqa: E731
    lead = max((c(k) for k in group), key=lambda x: x["mean"])
    others = {k: verdict(lead["mean"] - c(k)["mean"], _margin(lead, c(k), tol)) for k in KINDS if k not in group}
    above = [k for k, v in others.items() if v == FAILS]
    level = [k for k, v in others.items() if v == TIE]
    v = FAILS if above else (TIE if level else HOLDS)
    text = f"{lead['label']} {_fmt(lead)}; " + (
        "beaten by " + ", ".join(f"{k} {_fmt(c(k))}" for k in above) if above else
        "tied within the margin with " + ", ".join(f"{k} {_fmt(c(k))}" for k in level) if level else
        "every other method below it beyond the margin")
    return v, text


def _checks_a(t: dict, r0: float, tol: float) -> list[PaperCheck]:
    c = lambda kind, r: t[(kind, r)]  # noqa: E731
    names = _name_a(r0)
    wm, ifca = c("IFCA → MR-MTL", r0), c("IFCA", r0)
    m = _margin(wm, ifca, tol)
    out = [PaperCheck(names[0], HOLDS if abs(wm["mean"] - ifca["mean"]) <= m else FAILS,
                      f"{_fmt(wm)} vs {_fmt(ifca)} (margin {m:.3f})")]
    out.append(PaperCheck(names[1], *_best_of(t, r0, ("IFCA", "IFCA → MR-MTL"), tol)))
    wl, loc = c("IFCA → Local", r0), c("Local", r0)
    m = _margin(wl, loc, tol)
    out.append(PaperCheck(names[2], HOLDS if wl["mean"] - loc["mean"] <= m else FAILS,
                          f"IFCA → Local {_fmt(wl)} vs Local {_fmt(loc)} (margin {m:.3f})"))
    return out


def _check_b(t: dict, r: float, tol: float) -> PaperCheck:
    return PaperCheck(_name_b(r), *_best_of(t, r, ("MR-MTL", "IFCA → MR-MTL"), tol))


def _check_c(t: dict, ratios: Sequence[float], tol: float) -> PaperCheck:
    c = lambda kind, r: t[(kind, r)]  # noqa: E731
    r0, r_max = ratios[0], ratios[-1]
    gain = {r: c("IFCA → MR-MTL", r)["mean"] - c("MR-MTL", r)["mean"] for r in ratios}
    se = lambda r: math.sqrt(_se(c("IFCA → MR-MTL", r)) ** 2 + _se(c("MR-MTL", r)) ** 2)  # noqa: E731
    m = max(tol, 2 * math.sqrt(se(r0) ** 2 + se(r_max) ** 2)) if math.isfinite(se(r0) + se(r_max)) else tol
    return PaperCheck(_name_c(r0, r_max), verdict(gain[r0] - gain[r_max], m),
                      "gain over MR-MTL: " + ", ".join(f"{gain[r]:+.3f} at {r:g}" for r in ratios)
                      + f" (margin {m:.3f})")


def locate_lambda(cell: dict, low: tuple[str, dict], high: tuple[str, dict]) -> tuple[bool, str]:
    """Whether the best λ of a λ profile is located (the module docstring's check (d)), and the numbers.

    ``cell``: the profile's best cell (``lam``, ``lams`` the λ grid > 0, ``mean``); ``low``/``high``: the names and
    best cells of the runs at its ends, λ = 0 and λ → ∞ (:data:`LAMBDA_ENDS`).  Located: the best λ lies strictly
    inside the grid, or it is the grid's smallest (largest) λ and the λ = 0 (λ → ∞) end is at least as good."""
    lam, lams = cell["lam"], cell["lams"]
    if min(lams) < lam < max(lams):
        return True, f"λ = {lam:g}"
    (name, end), side = (low, "λ = 0") if lam == min(lams) else (high, "λ → ∞")
    if end["mean"] >= cell["mean"]:
        return True, f"{side} ({name} {end['mean']:.3f} ≥ λ = {lam:g}'s {cell['mean']:.3f})"
    return False, (f"λ = {lam:g}, the grid's {'smallest' if lam == min(lams) else 'largest'} of {list(lams)}, beats "
                   f"{side} ({name}): {cell['mean']:.3f} vs {end['mean']:.3f}")


def _check_d(t: dict, ratios: Sequence[float]) -> PaperCheck:
    unlocated, located = [], []
    for kind, (low, high) in LAMBDA_ENDS.items():
        for r in ratios:
            ok, text = locate_lambda(t[(kind, r)], (low, t[(low, r)]), (high, t[(high, r)]))
            (located if ok else unlocated).append(f"{kind} at mask {r:g}: {text}")
    return PaperCheck(NAME_D, FAILS if unlocated else HOLDS,
                      "; ".join(unlocated) if unlocated else "located: " + "; ".join(located), GRID_CHECK)


def fig6_checks(rows: Iterable["RunResult"], eps: float, *, tol: float = 0.01) -> list[PaperCheck]:
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
            + [_check_c(t, ratios, tol), _check_d(t, ratios)])


# --------------------------------------------------------------------------------------------------
# a grid still being computed
# --------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class CheckStatus:
    """A check of :func:`fig6_status`: ``status`` is :data:`HOLDS`, :data:`TIE`, :data:`FAILS` or :data:`PENDING`
    (the runs it needs are not all computed yet); ``detail`` gives the numbers, or what is missing; ``kind`` is
    :data:`PAPER_READING` or :data:`GRID_CHECK`."""

    name: str
    status: str
    detail: str
    kind: str = PAPER_READING

    @property
    def holds(self) -> "bool | None":
        """``True`` for a reading that holds, ``False`` for a tie or a failure, ``None`` while pending."""
        return None if self.status == PENDING else self.status == HOLDS


def _mask(c: Any) -> float:
    return float(c.dataset_options.get("mask_ratio", 0.0))


def complete_blocks(rows: Iterable["RunResult"], configs: Sequence["RunConfig"],
                    eps: float) -> "tuple[list[RunResult], dict[tuple[float, int], tuple[int, int]]]":
    """The runs at ``eps`` of the grid ``configs`` that lie in *complete blocks* — a (mask ratio, seed) whose every
    run of the grid is among ``rows`` — and ``{(mask ratio, seed): (runs present, runs in the grid)}`` for every
    block of the grid at ``eps``.  A Fig. 6 cell is read on complete blocks only, so that each method's best λ is
    chosen among the whole λ grid and every λ is averaged over the same seeds."""
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
                tol: float = 0.01) -> list[CheckStatus]:
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
    out: list[CheckStatus] = []
    as_status = lambda p: CheckStatus(p.name, p.verdict, p.detail, p.kind)  # noqa: E731
    if r0 in done:
        out += [as_status(p) for p in _checks_a(t, r0, tol)]
    else:
        out += [CheckStatus(n, PENDING, pending_detail([r0])) for n in _name_a(r0)]
    for r in ratios[1:]:
        out.append(as_status(_check_b(t, r, tol)) if r in done
                   else CheckStatus(_name_b(r), PENDING, pending_detail([r])))
    if r0 in done and r_max in done:
        out.append(as_status(_check_c(t, [r for r in ratios if r in done], tol)))
    else:
        out.append(CheckStatus(_name_c(r0, r_max), PENDING, pending_detail([r0, r_max])))
    if done:
        d = _check_d(t, done)
        rest = [r for r in ratios if r not in done]
        detail = d.detail + (f" (on mask {', '.join(f'{r:g}' for r in done)}; mask "
                             f"{', '.join(f'{r:g}' for r in rest)} pending)" if rest else "")
        out.append(CheckStatus(d.name, d.verdict, detail, GRID_CHECK))
    else:
        out.append(CheckStatus(NAME_D, PENDING, pending_detail(ratios), GRID_CHECK))
    return out


def fig6_status_html(columns: "dict[str, Sequence[CheckStatus]]") -> str:
    """An HTML table of :func:`fig6_status` results: a row per check, a column per entry of ``columns`` (e.g. one per
    privacy level: ``{"ε = 4": [...], "without DP": [...]}``, each list naming the same checks in the same order);
    a cell is the status in bold (holds / tie / does not hold / pending), then its numbers.  The paper's readings
    come first, under their own heading row, then the checks of the grid under theirs."""
    import html

    cols = list(columns.items())
    if not cols:
        raise ValueError("columns must hold at least one list of checks")
    names = [s.name for s in cols[0][1]]
    if any([s.name for s in v] != names for _, v in cols):
        raise ValueError("columns must name the same checks in the same order")
    head = "".join(f"<th>{html.escape(k)}</th>" for k, _ in cols)
    kinds = [cols[0][1][i].kind for i in range(len(names))]
    body = []
    for kind, title in ((PAPER_READING, "the paper's readings"), (GRID_CHECK, "checks of this project's grid")):
        rows = [i for i, k in enumerate(kinds) if k == kind]
        if not rows:
            continue
        body.append(f'<tr><th colspan="{len(cols) + 1}">{html.escape(title)}</th></tr>')
        for i in rows:
            cells = "".join(f"<td><b>{html.escape(v[i].status)}</b>: {html.escape(v[i].detail)}</td>" for _, v in cols)
            body.append(f"<tr><td>{html.escape(names[i])}</td>{cells}</tr>")
    return f"<table><thead><tr><th>check</th>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
