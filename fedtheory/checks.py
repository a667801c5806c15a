"""Derived-versus-printed comparisons: the one pattern every theory chapter uses.

A :class:`Check` holds an expression that :mod:`sympy` *derived* from a generative model and the
expression *printed* in a paper, and whether they are equal.  Equality is decided by
:func:`compare`, which can fail:

1. both sides are evaluated *exactly* at several random positive rational points (a
   Schwartz-Zippel style identity test for rational functions).  Any non-zero difference proves the
   expressions differ (and the point is kept as a counterexample);
2. if every sampled difference vanishes, ``sympy.simplify(derived - printed) == 0`` proves the
   identity; when simplify cannot reach zero the result is reported as equal "by exact evaluation".

Chapters display a list of checks with :func:`checks_table` and assert on them, so a typo in a paper
shows up as a failing row and a regression in a derivation fails the notebook.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Iterable, Mapping

import sympy as sp
from fedtheory.figures.tables import display_checks

__all__ = ["Check", "compare", "checks_table"]


@dataclass(frozen=True)
class Check:
    """Outcome of comparing a derived expression with a paper's printed one."""

    name: str
    derived: sp.Expr
    printed: sp.Expr
    holds: bool
    method: str
    note: str = ""
    counterexample: Mapping[sp.Symbol, sp.Rational] = field(default_factory=dict)

    def __bool__(self) -> bool:  # ``assert check`` reads naturally in notebooks
        return self.holds

    def _repr_markdown_(self) -> str:
        verdict = "equal" if self.holds else "**differ**"
        text = (f"**{self.name}**: derived ${sp.latex(self.derived)}$ vs printed ${sp.latex(self.printed)}$"
                f" → {verdict} ({self.method})")
        if self.note:
            text += f". {self.note}"
        return text


def _free_symbols(*exprs: sp.Expr) -> list[sp.Symbol]:
    syms: set[sp.Symbol] = set()
    for e in exprs:
        syms |= set(sp.sympify(e).free_symbols)
    return sorted(syms, key=lambda s: s.name)


def compare(name: str, derived: sp.Expr, printed: sp.Expr, *, note: str = "",
            points: int = 6, seed: int = 0,
            domain: Mapping[sp.Symbol, tuple[int, int]] | None = None) -> Check:
    """Compare ``derived`` with ``printed``; see the module docstring for the method.

    ``domain`` optionally maps a symbol to an integer range ``(lo, hi)`` used for the random exact
    evaluation (default: rationals in (0, 5] built from integers 1..20, so every symbol is
    positive, as variances, sample sizes and λ are).  Integer-valued symbols such as ``K`` or ``n``
    may be given a range like ``(2, 50)``.
    """
    derived = sp.sympify(derived)
    printed = sp.sympify(printed)
    difference = derived - printed
    # 1. Exact evaluation at random rational points first: a single non-zero value proves the
    #    expressions differ, and it is much cheaper than simplifying a non-zero difference.
    rng = random.Random(seed)
    domain = dict(domain or {})
    syms = _free_symbols(derived, printed)
    for _ in range(points):
        subs = {}
        for s in syms:
            if s in domain:
                lo, hi = domain[s]
                subs[s] = sp.Integer(rng.randint(lo, hi))
            else:
                subs[s] = sp.Rational(rng.randint(1, 20), rng.randint(4, 20))
        value = sp.nsimplify(sp.simplify(difference.subs(subs)))
        if value != 0:
            return Check(name, derived, printed, False,
                         "exact evaluation at a rational point gives a non-zero difference",
                         note, counterexample=subs)
    # 2. All sampled differences vanish: try to prove the identity symbolically.
    if sp.simplify(sp.together(difference)) == 0:
        return Check(name, derived, printed, True, "sympy.simplify proves the identity", note)
    return Check(name, derived, printed, True,
                 f"equal by exact evaluation at {points} random rational points", note)


def checks_table(checks: Iterable[Check], **kwargs):
    """Display checks as a Markdown table with typeset math (an ``IPython.display.Markdown`` object).

    Jupyter Book typesets math in Markdown outputs but not in raw HTML outputs, so the table is
    Markdown; see :func:`fedtheory.figures.tables.checks_markdown` for the layout and the keyword
    arguments (``expected_failures``, ``max_width``).
    """
    return display_checks(checks, **kwargs)
