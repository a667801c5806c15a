"""fedtheory.figures.tables: derived-vs-printed checks rendered as Markdown with typeset math."""
import sympy as sp

from fedtheory.checks import compare
from fedtheory.figures.tables import checks_markdown, display_checks, markdown_table

x, y = sp.symbols("x y", positive=True)


def test_checks_markdown_rows_verdicts_and_tally():
    md = checks_markdown([compare("λ*_np (eq. 1)", x / y, x * y**-1), compare("typo", x, 2 * x, note="should be 2x")])
    lines = md.splitlines()
    assert lines[0].startswith("2 checks: 1 equal") and "1 differ" in lines[0]
    assert lines[2] == "| result | verdict | derived (sympy) | printed (paper) |"
    assert r"λ\*\_np" in lines[4] and "✓ equal" in lines[4] and r"$\displaystyle \frac{x}{y}$" in lines[4]
    assert "✗ **differ** at $" in lines[5] and "*should be 2x*" in lines[5]
    assert all(line.count("|") - line.count(r"\|") == 5 for line in lines[2:])  # 4 cells per row


def test_pipes_in_latex_do_not_split_cells_and_long_expressions_are_summarised():
    row = checks_markdown([compare("abs", sp.Abs(x - y), sp.Abs(y - x))]).splitlines()[-1]
    assert r"\vert" in row and row.count("|") == 5
    big = sum(sp.Symbol(f"a{i}") ** i for i in range(200))
    row = checks_markdown([compare("big", big, big)], max_latex_chars=100).splitlines()[-1]
    assert "long expression" in row and "operations" in row


def test_display_checks_and_markdown_table():
    assert display_checks([compare("c", x, x)]).data.startswith("1 check: 1 equal")
    assert markdown_table(["a", "b"], [[1, 0.123456]]).splitlines() == ["| a | b |", "|---|---|", "| 1 | 0.1235 |"]


def test_markdown_table_per_column_formats_missing_cells_and_errors():
    import numpy as np
    import pytest

    from fedtheory.figures.tables import display_table

    lines = markdown_table(["η", "γ", "ε"], [["0", 0.123456, float("nan")], ["a|b", None, np.float64(0.25)]],
                           fmt=[None, "{:.3f}", "{:.2f}"]).splitlines()
    assert lines[2] == "| 0 | 0.123 | – |" and lines[3] == r"| a\|b | – | 0.25 |"
    with pytest.raises(ValueError, match="one per column"):
        markdown_table(["a", "b"], [[1, 2]], fmt=["{:.2f}"])
    with pytest.raises(ValueError, match="2 cells"):
        markdown_table(["a", "b"], [[1]])
    assert display_table(["a"], [[0.5]], "{:.1f}").data.endswith("| 0.5 |")
