"""One check of a paper's claim, or of this project's own grid, on stored results: :class:`ClaimCheck`.

Every check module of the book (:mod:`fedtrain.fig6_checks`, :mod:`fedtrain.fig3d_checks`,
:mod:`fedtrain.fedhdp.experiments`) returns these, so that a chapter counts and shows them one way.

A check has a **verdict**:

* :data:`HOLDS`: the claim is shown beyond its margin;
* :data:`TIE`: a claim that one thing beats another, where the difference lies within its margin (the data cannot
  tell the two apart: the claim is not contradicted, and not shown either).  A tie is never counted as a hold;
* :data:`FAILS`: the claim is contradicted beyond its margin;
* :data:`PENDING`: the runs it needs are not all computed yet (a grid still being computed).

The margin of a comparison is stated with it: two standard errors (SE over seeds) of the difference, and at least
a stated accuracy margin (``tol``), which is all there is with one seed (:func:`margin`).

A check has a **kind**, so that the paper's claims are counted apart from the checks that test something else:

* :data:`PAPER_READING`: a reading of one of the paper's figures (e.g. "MR-MTL stays the best as the masks grow");
* :data:`PAPER_CLAIM`: a claim of the paper's text (FedHDP's numbered claims);
* :data:`GRID_CHECK`: a check of this project's own grid, not of the paper (e.g. "every best λ lies inside the λ
  grid or at one of its ends");
* :data:`IMPLEMENTATION_CHECK`: a null test of the implementation (e.g. two methods that release the same
  aggregate by construction agree);
* :data:`PRIVACY_CHECK`: a check of the privacy ledger.

``scope`` says, where it matters, what a check can and cannot show.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable

__all__ = ["HOLDS", "TIE", "FAILS", "PENDING", "VERDICTS", "PAPER_READING", "PAPER_CLAIM", "GRID_CHECK",
           "IMPLEMENTATION_CHECK", "PRIVACY_CHECK", "KINDS", "PAPER_KINDS", "ClaimCheck", "verdict", "alike",
           "worst", "margin", "tally", "tally_text"]

HOLDS, TIE, FAILS, PENDING = "holds", "tie", "fails", "pending"
#: Every verdict, in the order a tally lists them.
VERDICTS = (HOLDS, TIE, FAILS, PENDING)
PAPER_READING, PAPER_CLAIM, GRID_CHECK = "paper reading", "paper claim", "grid check"
IMPLEMENTATION_CHECK, PRIVACY_CHECK = "implementation check", "privacy check"
#: Every kind of check.
KINDS = (PAPER_READING, PAPER_CLAIM, GRID_CHECK, IMPLEMENTATION_CHECK, PRIVACY_CHECK)
#: The kinds that are the paper's: a reading of its figures, a claim of its text.
PAPER_KINDS = (PAPER_READING, PAPER_CLAIM)


def verdict(difference: float, margin: float) -> str:
    """The verdict on "a beats b" from ``difference = a − b``: :data:`HOLDS` beyond ``margin``, :data:`FAILS` below
    ``−margin``, :data:`TIE` within it."""
    if not margin >= 0:
        raise ValueError(f"margin must be >= 0 (got {margin!r})")
    return HOLDS if difference > margin else (TIE if difference >= -margin else FAILS)


def alike(difference: float, margin: float) -> str:
    """The verdict on "a matches b" (a claim of likeness, for which a tie is what it claims): :data:`HOLDS` when
    ``|difference| <= margin``, :data:`FAILS` otherwise."""
    if not margin >= 0:
        raise ValueError(f"margin must be >= 0 (got {margin!r})")
    return HOLDS if abs(difference) <= margin else FAILS


def worst(*verdicts: str) -> str:
    """The verdict on a reading made of parts (each :data:`HOLDS`, :data:`TIE` or :data:`FAILS`): it holds only where
    every part holds, fails where any part fails, and is a tie otherwise."""
    return FAILS if FAILS in verdicts else (TIE if TIE in verdicts else HOLDS)


def margin(se: float, tol: float) -> float:
    """The margin of a comparison whose difference has standard error ``se``: ``max(tol, 2 se)``; ``tol`` alone
    when the SE is not finite (one seed)."""
    if not tol >= 0:
        raise ValueError(f"tol must be >= 0 (got {tol!r})")
    return max(tol, 2 * se) if math.isfinite(se) else tol


@dataclass(frozen=True)
class ClaimCheck:
    """One check on stored results: its ``name`` (what is claimed), ``verdict`` (:data:`HOLDS`, :data:`TIE`,
    :data:`FAILS` or :data:`PENDING`), ``detail`` (the numbers compared and the margin, or what is missing),
    ``kind`` (:data:`KINDS`) and ``scope`` (what it can and cannot show, where that needs saying)."""

    name: str
    verdict: str
    detail: str
    kind: str = PAPER_READING
    scope: str = ""

    def __post_init__(self):
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {', '.join(map(repr, VERDICTS))} (got {self.verdict!r})")
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(map(repr, KINDS))} (got {self.kind!r})")

    @property
    def holds(self) -> "bool | None":
        """``True`` only for :data:`HOLDS` (a tie is not a hold), ``None`` while :data:`PENDING`."""
        return None if self.verdict == PENDING else self.verdict == HOLDS

    @property
    def claim(self) -> str:
        """The ``name`` (FedHDP's checks call it the claim)."""
        return self.name

    @property
    def of_paper(self) -> bool:
        """Whether the check is one of the paper's readings or claims (:data:`PAPER_KINDS`)."""
        return self.kind in PAPER_KINDS


def tally(checks: Iterable[ClaimCheck], kinds: "Iterable[str]" = PAPER_KINDS) -> dict[str, int]:
    """``{verdict: count}`` (every verdict of :data:`VERDICTS`, in order) over the ``checks`` of the ``kinds`` given
    (default: the paper's readings and claims, so that checks of the grid or the implementation are counted apart)."""
    kinds = tuple(kinds)
    bad = [k for k in kinds if k not in KINDS]
    if bad:
        raise ValueError(f"kinds must be among {', '.join(map(repr, KINDS))} (got {bad})")
    checks = [c for c in checks if c.kind in kinds]
    return {v: sum(c.verdict == v for c in checks) for v in VERDICTS}


def tally_text(counts: "dict[str, int]") -> str:
    """A :func:`tally` in words, the verdicts with a count only: ``"3 hold, 7 are ties and 2 fail"``."""
    words = {HOLDS: ("holds", "hold"), TIE: ("is a tie", "are ties"), FAILS: ("fails", "fail"),
             PENDING: ("waits for runs", "wait for runs")}
    parts = [f"{n} {words[v][0] if n == 1 else words[v][1]}" for v, n in counts.items() if n]
    if not parts:
        return "none"
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
