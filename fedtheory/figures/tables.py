"""Markdown tables for the book's outputs.

Jupyter Book typesets math only in Markdown, not inside raw HTML outputs, so a derived-vs-printed
table must reach the page as Markdown (``IPython.display.Markdown``) for its LaTeX to render.  The
notebooks that use these tables set ``"mystnb": {"render_markdown_format": "myst"}`` in their
metadata so that Markdown outputs are parsed with tables and ``$...$`` math (myst-nb's default,
``commonmark``, knows neither).

:func:`checks_markdown` renders :class:`fedtheory.checks.Check` objects; :func:`markdown_table`
renders rows of numbers.
"""
from __future__ import annotations

import re
from typing import Iterable, Sequence

import numpy as np
import sympy as sp

__all__ = ["checks_markdown", "display_checks", "display_table", "markdown_table"]

#: Expressions whose LaTeX is longer than this are summarised instead of printed in a table cell.
MAX_LATEX_CHARS = 400

_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>|#$])")


def _escape(text: str) -> str:
    """Escape Markdown's inline syntax in plain text (check names such as ``λ*_np`` or ``ŵ_\\k``)."""
    return _MD_SPECIAL.sub(r"\\\1", text)


def _math_cell(expr, max_chars: int) -> str:
    latex = sp.latex(sp.sympify(expr))
    if len(latex) > max_chars:
        ops = sp.count_ops(expr)
        return f"*long expression ({ops} operations), not shown*"
    # a bare '|' would split the Markdown table cell
    latex = latex.replace(r"\|", r"\Vert ").replace("|", r"\vert ")
    return f"$\\displaystyle {latex}$"


_PROVED = "sympy.simplify proves the identity"


def _verdict(check) -> str:
    if check.holds:
        text = "✓ equal" if check.method == _PROVED else "✓ equal (exact evaluation)"
    else:
        text = "✗ **differ**"
        if check.counterexample:
            point = ", ".join(f"{sp.latex(s)}={sp.latex(v)}" for s, v in check.counterexample.items())
            text += f" at ${point}$"
    if check.note:
        text += f". *{_escape(check.note)}*"
    return text


def checks_markdown(checks: Iterable, *, max_latex_chars: int = MAX_LATEX_CHARS) -> str:
    """Markdown table of derived-vs-printed checks with typeset math, preceded by a one-line tally.

    ``checks`` are :class:`fedtheory.checks.Check` objects.  Expressions whose LaTeX exceeds
    ``max_latex_chars`` characters are summarised (their size in operations).  The tally says how
    equality was decided; a row that is not proved symbolically says so, and a failing row gives the
    rational point where the two sides differ.
    """
    checks = list(checks)
    proved = sum(bool(c) and c.method == _PROVED for c in checks)
    equal = sum(bool(c) for c in checks)
    tally = (f"{len(checks)} check{'' if len(checks) == 1 else 's'}: {equal} equal ({proved} proved by `sympy.simplify`"
             + (f", {equal - proved} by exact evaluation at random rational points" if equal > proved else "")
             + f"), {len(checks) - equal} differ (a non-zero difference at an exact rational point).")
    # the verdict comes second so that it stays visible when wide formulas make the table scroll
    lines = [tally, "", "| result | verdict | derived (sympy) | printed (paper) |", "|---|---|---|---|"]
    for c in checks:
        lines.append(f"| {_escape(c.name)} | {_verdict(c)} | {_math_cell(c.derived, max_latex_chars)} | "
                     f"{_math_cell(c.printed, max_latex_chars)} |")
    return "\n".join(lines)


def display_checks(checks: Iterable, **kwargs):
    """:func:`checks_markdown` wrapped in ``IPython.display.Markdown`` (for ``display(...)`` in a notebook)."""
    from IPython.display import Markdown

    return Markdown(checks_markdown(checks, **kwargs))


def markdown_table(headers: Sequence, rows: Iterable[Sequence], fmt="{:.4g}") -> str:
    """A Markdown table; floats are formatted with ``fmt``, everything else with ``str``.

    ``fmt`` is one format string for every column or a sequence with one per column (``None`` keeps the
    default ``"{:.4g}"``).  ``None`` and NaN cells are shown as an en dash.  Cells may hold Markdown and
    ``$...$`` math; a bare ``|`` in a cell is escaped so that it does not split the row.
    """
    headers = list(headers)
    fmts = [fmt] * len(headers) if isinstance(fmt, str) else [f or "{:.4g}" for f in fmt]
    if len(fmts) != len(headers):
        raise ValueError(f"fmt must be one format string or one per column ({len(headers)}), got {len(fmts)}")

    def cell(x, f):
        if x is None or (isinstance(x, (float, np.floating)) and np.isnan(x)):
            return "–"
        text = f.format(x) if isinstance(x, (float, np.floating)) else str(x)
        return re.sub(r"(?<!\\)\|", r"\\|", text)

    lines = ["| " + " | ".join(map(str, headers)) + " |", "|" + "---|" * len(headers)]
    for row in rows:
        row = list(row)
        if len(row) != len(headers):
            raise ValueError(f"every row must have {len(headers)} cells (one per header), got {len(row)}: {row}")
        lines.append("| " + " | ".join(cell(x, f) for x, f in zip(row, fmts)) + " |")
    return "\n".join(lines)


def display_table(headers: Sequence, rows: Iterable[Sequence], fmt="{:.4g}"):
    """:func:`markdown_table` wrapped in ``IPython.display.Markdown`` (for ``display(...)`` in a notebook)."""
    from IPython.display import Markdown

    return Markdown(markdown_table(headers, rows, fmt))
