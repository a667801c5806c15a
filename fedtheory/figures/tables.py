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

__all__ = ["checks_markdown", "checks_summary", "display_checks", "display_table", "format_noise", "markdown_table",
           "visible_width", "latex_lines", "wrapped_latex"]

#: Expressions wider than this many visible symbols (see :func:`visible_width`) go into a dropdown below
#: the table instead of a table cell, so that the table fits the text column.  Measured in the built book
#: (740 px column, 1280 px window): a display-style formula takes up to about 14 px per visible symbol, and
#: the expression column has about 500 px beside the wrapped check names.
MAX_WIDTH = 34

_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>|#$])")


def _escape(text: str) -> str:
    """Escape Markdown's inline syntax in plain text (check names such as ``λ*_np`` or ``ŵ_\\k``)."""
    return _MD_SPECIAL.sub(r"\\\1", text)


def _latex(expr) -> str:
    latex = sp.latex(sp.sympify(expr))
    # a bare '|' would split a Markdown table cell
    return latex.replace(r"\|", r"\Vert ").replace("|", r"\vert ")


def visible_width(latex: str) -> int:
    """Rough number of symbols a LaTeX formula shows: commands count as one symbol, braces, sub- and
    superscript markers and spacing as none (a fraction counts numerator plus denominator).

    Examples
    --------
    >>> visible_width(r"\\frac{\\alpha^{2}}{\\tau^{2}}")
    4
    """
    t = re.sub(r"\\(left|right|displaystyle|frac|[,;!]|quad)", "", latex)
    t = re.sub(r"\\[a-zA-Z]+", "x", t)
    return len(re.sub(r"[{}^_\s]", "", t))


#: the widest line (in visible symbols, :func:`visible_width`) of a formula broken by :func:`wrapped_latex`:
#: measured in the built book at a 1,280 px window, display math in the text column holds about 32 (operators
#: with their spacing, sub- and superscripts make a symbol up to 20 px wide), inside a dropdown about 28.
WRAP_WIDTH = 30


def _group_end(latex: str, start: int) -> int:
    """Index just past the brace group that opens at ``latex[start] == "{"`` (``-1`` when unbalanced)."""
    depth = 0
    for i in range(start, len(latex)):
        depth += {"{": 1, "}": -1}.get(latex[i], 0)
        if depth == 0:
            return i + 1
    return -1


def _shown_width(latex: str) -> int:
    """Width of a formula on the page: a formula that is one fraction is as wide as the wider of its two parts."""
    latex = latex.strip()
    if latex.startswith("\\frac{"):
        mid = _group_end(latex, len("\\frac"))
        if 0 < mid < len(latex) and latex[mid] == "{" and _group_end(latex, mid) == len(latex):
            return max(visible_width(latex[len("\\frac") + 1:mid - 1]), visible_width(latex[mid + 1:-1]))
    return visible_width(latex)


def latex_lines(expr, width: int = WRAP_WIDTH) -> list[str]:
    """The LaTeX of a sympy expression cut into lines of at most about ``width`` visible symbols.

    A sum is cut between its terms, a product between its factors (a sum factor keeps its parentheses across
    the cut), a fraction too wide for one line becomes ``(numerator) / (denominator)`` with each part cut in
    turn.  Lines that cannot be cut further (a single long symbol) are kept whole.  The lines joined end to end
    read as the expression.

    Examples
    --------
    >>> import sympy as sp
    >>> x, y = sp.symbols("x y")
    >>> latex_lines(x + y, width=1)
    ['x', '+ y']
    """
    if width < 1:
        raise ValueError(f"width must be a positive number of symbols (got {width!r})")
    expr = sp.sympify(expr)
    tex = sp.latex(expr)
    if _shown_width(tex) <= width:
        return [tex]
    if expr.is_Add:
        lines: list[str] = []
        for i, term in enumerate(expr.as_ordered_terms()):
            negative = term.could_extract_minus_sign()
            body = -term if negative else term
            parts = latex_lines(body, width)
            sign = "- " if negative else ("+ " if i else "")
            if body.is_Add:
                parts = ["\\bigl(" + parts[0]] + parts[1:-1] + [parts[-1] + "\\bigr)"] if len(parts) > 1 \
                    else ["\\left(" + parts[0] + "\\right)"]
            first = sign + parts[0]
            if lines and len(parts) == 1 and visible_width(lines[-1] + first) <= width:
                lines[-1] += " " + first
            else:
                lines.append(first)
            lines += parts[1:]
        return lines
    num, den = sp.fraction(expr)
    if den != 1:
        top, bottom = latex_lines(num, width), latex_lines(den, width)
        if len(top) == 1 and len(bottom) == 1:
            return [f"\\frac{{{top[0]}}}{{{bottom[0]}}}"]
        wrap = lambda ls: ["\\bigl(" + ls[0]] + ls[1:-1] + [ls[-1] + "\\bigr)"] if len(ls) > 1 \
            else ["\\left(" + ls[0] + "\\right)"]  # noqa: E731
        return wrap(top) + ["\\big/ " + line for line in wrap(bottom)[:1]] + wrap(bottom)[1:]
    if expr.is_Mul and expr.could_extract_minus_sign():
        parts = latex_lines(-expr, width)
        return ["- " + parts[0]] + parts[1:]
    if expr.is_Mul:
        lines = []
        for factor in expr.as_ordered_factors():
            parts = latex_lines(factor, width)
            if factor.is_Add:
                parts = ["\\bigl(" + parts[0]] + parts[1:-1] + [parts[-1] + "\\bigr)"] if len(parts) > 1 \
                    else ["\\left(" + parts[0] + "\\right)"]
            if lines and len(parts) == 1 and visible_width(lines[-1] + parts[0]) <= width:
                lines[-1] += " " + parts[0]
            else:
                lines += [("\\cdot " if lines else "") + parts[0]] + parts[1:]
        return lines
    if expr.is_Pow and expr.exp.is_Integer and expr.exp > 0 and expr.base.is_Add:
        parts = latex_lines(expr.base, width)
        return ["\\bigl(" + parts[0]] + parts[1:-1] + [parts[-1] + f"\\bigr)^{{{sp.latex(expr.exp)}}}"]
    return [tex]


def wrapped_latex(expr, width: int = WRAP_WIDTH, lhs: str = "") -> str:
    """:func:`latex_lines` as one ``aligned`` environment (a single line when the expression fits).

    ``lhs`` (LaTeX) is set before the first line with an ``=``, e.g. ``lhs=r"\\lambda^*"``; when it leaves too
    little room, it stands alone on the first row.  Continuation rows are indented by a ``\\quad`` from the left
    edge, so that every row stays within about ``width`` visible symbols.
    """
    lines = latex_lines(expr, width)
    room = _shown_width(lhs) + 1 if lhs else 0
    if len(lines) == 1 and room + _shown_width(lines[0]) <= width:
        return f"{lhs} = {lines[0]}" if lhs else lines[0]
    if not lhs:
        rows = ["&" + lines[0]] + ["&\\quad " + line for line in lines[1:]]
    elif room + _shown_width(lines[0]) <= width:
        rows = [f"&{lhs} = {lines[0]}"] + ["&\\quad " + line for line in lines[1:]]
    else:
        rows = [f"&{lhs} ="] + ["&\\quad " + line for line in lines]
    return "\\begin{aligned}" + " \\\\\n".join(rows) + "\\end{aligned}"


def format_noise(x, tol: float = 1e-15, fmt: str = "{:.4g}") -> str:
    """Format a number that should be zero up to floating-point noise.

    Values with ``|x| < tol`` print as ``"0 (to 1e-15)"`` instead of a noise figure such as
    ``2.194e-16``; larger values use ``fmt``.

    Examples
    --------
    >>> format_noise(2.194e-16)
    '0 (to 1e-15)'
    >>> format_noise(0.0123)
    '0.0123'
    >>> format_noise(3e-13, tol=1e-12)
    '0 (to 1e-12)'
    """
    if not tol > 0:
        raise ValueError(f"tol must be > 0 (got {tol!r})")
    x = float(x)
    if abs(x) < tol:
        return f"0 (to {tol:.0e})".replace("e-0", "e-").replace("e+0", "e+")
    return fmt.format(x)


_PROVED = "sympy.simplify proves the identity"


def _verdict(check, expected_failure: bool) -> str:
    if check.holds:
        text = "✓ equal" if check.method == _PROVED else "✓ equal (exact evaluation)"
    else:
        text = "✗ **differs** (expected: a typo in the paper)" if expected_failure else "✗ **differs**"
        if check.counterexample:
            # one formula per coordinate, so that a long point wraps within its cell
            point = ", ".join(f"${sp.latex(s)}={sp.latex(v)}$" for s, v in check.counterexample.items())
            text += f" at {point}"
    if check.note:
        text += f". *{_escape(check.note)}*"
    return text


def checks_summary(checks: Iterable, expected_failures: Iterable[str] = ()) -> str:
    """One paragraph: how many checks, how many agree, and which fail (expected typos or not).

    Examples
    --------
    >>> import sympy as sp
    >>> from fedtheory.checks import compare
    >>> x = sp.Symbol("x", positive=True)
    >>> rows = [compare("square", x**2, x*x), compare("typo", 2*x, 3*x)]
    >>> print(checks_summary(rows, expected_failures=["typo"]))
    **2 checks: 1 agrees, 1 differs.** 1 proved by `sympy.simplify`. The row that differs is a known typo in the paper (the check is expected to fail): typo.
    """
    checks = list(checks)
    expected = set(expected_failures)
    unknown = expected - {c.name for c in checks}
    if unknown:
        raise ValueError(f"expected_failures names rows that are not among the checks: {sorted(unknown)}")
    n, agree = len(checks), sum(bool(c) for c in checks)
    proved = sum(bool(c) and c.method == _PROVED for c in checks)
    differ = [c.name for c in checks if not c]
    text = (f"**{n} check{'' if n == 1 else 's'}: {agree} agree{'s' if agree == 1 else ''}, "
            f"{len(differ)} differ{'s' if len(differ) == 1 else ''}.** {proved} proved by `sympy.simplify`")
    if agree > proved:
        text += f", {agree - proved} equal by exact evaluation at random rational points"
    text += "."
    typos = [name for name in differ if name in expected]
    surprises = [name for name in differ if name not in expected]
    if typos:
        one = len(typos) == 1
        text += (f" The row{'' if one else 's'} that differ{'s' if one else ''} "
                 f"{'is a known typo' if one else 'are known typos'} in the paper (the check is expected to fail): "
                 + "; ".join(_escape(t) for t in typos) + ".")
    if surprises:
        text += " **Unexpected failures:** " + "; ".join(_escape(t) for t in surprises) + "."
    agreeing_expected = sorted(expected & {c.name for c in checks if c})
    if agreeing_expected:
        text += " **Expected to fail but agree:** " + "; ".join(_escape(t) for t in agreeing_expected) + "."
    return text


def checks_markdown(checks: Iterable, *, expected_failures: Iterable[str] = (),
                    max_width: int = MAX_WIDTH, wrap: int | None = None, collapsed: str | None = None) -> str:
    """Derived-vs-printed checks as MyST Markdown: a summary, a table, and dropdowns for long formulas.

    ``checks`` are :class:`fedtheory.checks.Check` objects; ``expected_failures`` names the rows that
    are known typos in the paper (the summary lists them as expected failures, any other failing row as
    unexpected).  The table has two columns and two rows per check, so that it fits the text column: the
    first row holds the check's number and name and the derived (sympy) expression, the second its verdict
    (✓ equal / ✗ differs) and the printed (paper) expression, stacked under the derived one.  An expression
    wider than ``max_width`` visible symbols (:func:`visible_width`) is shown in full in a dropdown (an HTML
    ``<details>``) under the table, and its cell points there.  A failing row gives the rational point
    where the two sides differ.

    ``wrap`` (a width in visible symbols) breaks the formulas shown in full in the dropdowns into lines of about
    that width (:func:`wrapped_latex`), so that they fit the column; ``collapsed`` (a title) puts the whole output,
    summary included, into one dropdown with that title.
    """
    if wrap is not None and wrap < 1:
        raise ValueError(f"wrap must be a positive number of symbols or None (got {wrap!r})")
    if max_width < 1:
        raise ValueError(f"max_width must be a positive number of symbols (got {max_width!r})")
    checks = list(checks)
    expected = set(expected_failures)
    # the table directive gives the table a class: fedbook.css stripes each check's pair of rows alike
    lines = [checks_summary(checks, expected), "", "````{table}", ":class: fedbook-checks", "",
             "| # check and result | derived (sympy) over printed (paper) |", "|---|---|"]
    long_rows = []
    for i, c in enumerate(checks, 1):
        d, p = _latex(c.derived), _latex(c.printed)
        cells = [f"{side}: $\\displaystyle {tex}$" if visible_width(tex) <= max_width
                 else f"{side}: long ({sp.count_ops(expr)} operations), see dropdown {i} below"
                 for side, tex, expr in (("derived", d, c.derived), ("printed", p, c.printed))]
        if max(visible_width(d), visible_width(p)) > max_width:
            long_rows.append((i, c, d, p))
        lines.append(f"| **{i}.** {_escape(c.name)} | {cells[0]} |")
        lines.append(f"| {_verdict(c, c.name in expected)} | {cells[1]} |")
    lines.append("````")
    for i, c, _, _ in long_rows:
        mark = "✓" if c else "✗"
        if wrap is not None:
            d, p = wrapped_latex(c.derived, wrap), wrapped_latex(c.printed, wrap)
        else:
            d, p = break_latex(c.derived), break_latex(c.printed)
        lines += ["", f"````{{dropdown}} {i}. {mark} {_escape(c.name)}: derived and printed in full",
                  "**Derived (sympy):**", "", "$$", d, "$$", "", "**Printed (paper):**", "", "$$", p, "$$", "````"]
    if collapsed is not None:
        lines = [f"`````{{dropdown}} {_escape(collapsed)}", *lines, "`````"]
    return "\n".join(lines)


#: visible symbols per line of a formula shown in full (a display line of the text column at 1,280 px)
LINE_WIDTH = 36


def _terms_latex(expr, width: int) -> list[str]:
    """The terms of a sum as LaTeX lines of at most ``width`` visible symbols (one term per line at least).

    A term that is wider than ``width`` on its own and is a fraction is written as its numerator over its
    denominator, one factor of the denominator per line."""
    lines, cur = [], ""
    for i, term in enumerate(sp.Add.make_args(expr) if not isinstance(expr, sp.Add) else expr.as_ordered_terms()):
        neg = term.could_extract_minus_sign()
        body = -term if neg else term
        sign = "- " if neg else ("+ " if i else "")
        tex = _latex(body)
        num, den = sp.fraction(body)
        if visible_width(tex) > width and den != 1 and len(sp.Mul.make_args(den)) > 1:
            if cur:
                lines.append(cur)
            factors = [r"\left(" + _latex(f) + r"\right)" if isinstance(f, sp.Add) else _latex(f)
                       for f in sp.Mul.make_args(den)]
            lines.append(sign + _latex(num) + r"\;\Big/\;\Big[" + factors[0])
            lines += [r"\qquad\cdot " + f for f in factors[1:]]
            lines[-1] += r"\Big]"
            cur = ""
            continue
        piece = sign + tex
        if cur and visible_width(cur + piece) > width:
            lines.append(cur)
            cur = piece
        else:
            cur = f"{cur} {piece}".strip()
    return lines + ([cur] if cur else [])


def break_latex(expr, width: int = LINE_WIDTH) -> str:
    """LaTeX of ``expr`` broken into an ``aligned`` block of lines of about ``width`` visible symbols.

    A formula that fits is returned as :func:`sympy.latex` writes it.  A wider one is written as its numerator
    over its denominator (``(…) / (…)``), each a sum split between its terms; the expression is the same, only
    the layout differs.  ``width`` >= 1.
    """
    if width < 1:
        raise ValueError(f"width must be a positive number of symbols (got {width!r})")
    expr = sp.sympify(expr)
    tex = _latex(expr)
    if visible_width(tex) <= width:
        return tex
    num, den = sp.fraction(expr)
    rows = [r"\big(" + ln if i == 0 else r"\quad " + ln for i, ln in enumerate(_terms_latex(num, width))]
    if den != 1:
        rows[-1] += r"\big)"
        drows = _terms_latex(den, width)
        rows += [r"\Big/\,\big(" + ln if i == 0 else r"\quad " + ln for i, ln in enumerate(drows)]
        rows[-1] += r"\big)"
    else:  # a sum (not a fraction): its terms, without the parentheses
        rows = [ln.replace(r"\big(", "", 1) if i == 0 else ln for i, ln in enumerate(rows)]
    return r"\begin{aligned}&" + r"\\&".join(rows) + r"\end{aligned}"


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
