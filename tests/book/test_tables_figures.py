"""fedtheory.figures.tables: derived-vs-printed checks rendered as Markdown with typeset math."""
import pytest
import sympy as sp

from fedtheory.checks import compare
from fedtheory.figures.tables import (checks_markdown, checks_summary, display_checks, format_noise, latex_lines,
                                     markdown_table, visible_width, wrapped_latex)

x, y = sp.symbols("x y", positive=True)


def test_checks_markdown_rows_verdicts_and_summary():
    md = checks_markdown([compare("λ*_np (eq. 1)", x / y, x * y**-1), compare("typo", x, 2 * x, note="should be 2x")])
    lines = md.splitlines()
    assert lines[0].startswith("**2 checks: 1 agrees, 1 differs.**") and "**Unexpected failures:** typo." in lines[0]
    assert lines[2:5] == ["````{table}", ":class: fedbook-checks", ""] and lines[-1] == "````"
    lines = lines[5:-1]
    assert lines[0] == "| # check and result | derived (sympy) over printed (paper) |"
    # two rows per check: number and name beside the derived expression, verdict beside the printed one
    assert lines[2] == r"| **1.** λ\*\_np (eq. 1) | derived: $\displaystyle \frac{x}{y}$ |"
    assert lines[3].startswith("| ✓ equal") and lines[3].endswith(r"| printed: $\displaystyle \frac{x}{y}$ |")
    assert lines[4] == r"| **2.** typo | derived: $\displaystyle x$ |"
    assert lines[5].startswith("| ✗ **differs** at $") and "*should be 2x*" in lines[5]
    assert all(line.count("|") - line.count(r"\|") == 3 for line in lines)  # 2 cells per row


def test_a_counterexample_point_wraps_one_coordinate_per_formula():
    row = checks_markdown([compare("typo", x + y, x + 2 * y)]).splitlines()[8]
    assert " at $x=" in row and "$, $y=" in row  # x and y in separate formulas: the text can wrap between them


def test_expressions_wider_than_the_column_share_go_to_the_dropdown():
    import pytest

    from fedtheory.figures.tables import MAX_WIDTH, visible_width

    wide = sum(sp.Symbol(f"b{i}") for i in range(MAX_WIDTH))  # MAX_WIDTH terms, > MAX_WIDTH visible symbols
    narrow = sum(sp.Symbol(f"b{i}") for i in range(MAX_WIDTH // 3))
    assert visible_width(sp.latex(wide)) > MAX_WIDTH >= visible_width(sp.latex(narrow))
    md = checks_markdown([compare("narrow", narrow, narrow), compare("wide", wide, wide + x - x)])
    rows = [ln for ln in md.splitlines() if ln.startswith("| ")][1:]  # after the header
    assert "$" in rows[0] and "$" in rows[1] and "dropdown" not in rows[0] + rows[1]
    assert "see dropdown 2 below" in rows[2] and "see dropdown 2 below" in rows[3] and "$" not in rows[2] + rows[3]
    assert "````{dropdown} 2. ✓ wide" in md and "dropdown} 1." not in md
    with pytest.raises(ValueError, match="max_width"):
        checks_markdown([compare("c", x, x)], max_width=0)


def test_expected_failures_are_named_in_the_summary_and_unknown_names_rejected():
    import pytest

    rows = [compare("ok", x, x), compare("typo", x, 2 * x)]
    md = checks_markdown(rows, expected_failures=["typo"])
    assert "known typo in the paper (the check is expected to fail): typo." in md.splitlines()[0]
    assert "Unexpected" not in md and "expected: a typo in the paper" in md
    assert "**Expected to fail but agree:** ok." in checks_summary(rows, expected_failures=["ok", "typo"])
    with pytest.raises(ValueError, match="expected_failures"):
        checks_summary(rows, expected_failures=["no such row"])


def test_pipes_in_latex_do_not_split_cells_and_long_expressions_go_to_a_dropdown():
    row = checks_markdown([compare("abs", sp.Abs(x - y), sp.Abs(y - x))]).splitlines()[-2]
    assert r"\vert" in row and row.count("|") == 3
    big = sum(sp.Symbol(f"a{i}") ** i for i in range(200))
    md = checks_markdown([compare("big", big, big + x - x)], max_width=100)
    lines = md.splitlines()
    table_row = lines[lines.index(r"| **1.** big | derived: long (" + str(sp.count_ops(big)) + " operations), see dropdown 1 below |")]
    assert "see dropdown 1 below" in table_row and "operations" in table_row and "$" not in table_row
    assert "````{dropdown} 1. ✓ big: derived and printed in full" in md
    assert md.count("$$") == 4 and "a_{199}^{199}" in md and md.rstrip().endswith("````")


def test_format_noise_rounds_float_noise_only():
    import pytest

    assert format_noise(2.194e-16) == "0 (to 1e-15)"
    assert format_noise(-3e-13, tol=1e-12) == "0 (to 1e-12)"
    assert format_noise(0.012345) == "0.01235"
    with pytest.raises(ValueError, match="tol"):
        format_noise(1.0, tol=0)


def test_display_checks_and_markdown_table():
    assert display_checks([compare("c", x, x)]).data.startswith("**1 check: 1 agrees, 0 differ.**")
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


def test_break_latex_splits_a_wide_formula_into_lines_and_keeps_a_narrow_one():
    from fedtheory.figures.tables import break_latex, visible_width
    from fedtheory.mean_estimation import symbolic as S

    narrow = S.tau2 / S.K
    assert break_latex(narrow) == sp.latex(narrow)
    wide = S.heterogeneous()["sigma_bar2"]
    tex = break_latex(wide, width=44)
    assert tex.startswith(r"\begin{aligned}") and tex.count(r"\\") >= 1
    assert all(visible_width(line) <= 60 for line in tex.split(r"\\"))
    with pytest.raises(ValueError, match="width"):
        break_latex(wide, width=0)


def _reassemble(lines):
    r"""The lines of :func:`latex_lines` joined back, without the sizing commands of the cut parentheses."""
    text = " ".join(lines)
    for cmd in (r"\bigl", r"\bigr", r"\big/", r"\left", r"\right", r"\cdot"):
        text = text.replace(cmd, "")
    return text.replace(" ", "")


def test_latex_lines_cut_long_sums_products_and_fractions_within_the_width():
    x = sp.symbols("x_1:13", positive=True)
    long_sum = sum(xi**2 * x[0] for xi in x)
    lines = latex_lines(long_sum, width=20)
    assert len(lines) > 1 and all(visible_width(line) <= 20 for line in lines)
    assert lines[1].startswith("+ ")                       # each continuation starts with its operator
    frac = long_sum / (1 + sum(x))
    lines = latex_lines(frac, width=20)
    assert any(line.startswith(r"\big/") for line in lines)  # numerator over denominator, each cut in turn
    assert all(visible_width(line) <= 24 for line in lines)  # a line may carry a cut parenthesis and the '/'
    short = x[0] / x[1]
    assert latex_lines(short, width=20) == [sp.latex(short)]
    neg = x[0] - x[1] - x[2]
    assert _reassemble(latex_lines(neg, width=2)) == sp.latex(neg).replace(" ", "")
    with pytest.raises(ValueError, match="width"):
        latex_lines(short, width=0)


def test_wrapped_latex_is_one_aligned_block_with_the_left_hand_side():
    x = sp.symbols("x_1:13", positive=True)
    tex = wrapped_latex(sum(x), width=10, lhs=r"\Sigma")
    assert tex.startswith(r"\begin{aligned}&\Sigma = ") and tex.endswith(r"\end{aligned}") and tex.count(r"\\") >= 2
    assert wrapped_latex(x[0], lhs="y") == "y = x_{1}"
    # a left-hand side that leaves no room stands alone on the first row
    tex = wrapped_latex(x[0] + x[1], width=6, lhs=r"\lambda_{long}")
    assert tex.startswith(r"\begin{aligned}&\lambda_{long} = \\") and r"&\quad x_{1} + x_{2}" in tex


def test_checks_markdown_wraps_dropdown_formulas_and_collapses_on_request():
    x = sp.symbols("x_1:13", positive=True)
    long = sum(xi**2 for xi in x)
    rows = [compare("long", long, long)]
    plain = checks_markdown(rows)
    wrapped = checks_markdown(rows, wrap=20, collapsed="Long: 1 check")
    assert r"\begin{aligned}" in wrapped and wrapped != plain  # plain: break_latex's default width
    assert wrapped.startswith("`````{dropdown} Long: 1 check\n") and wrapped.endswith("\n`````")
    with pytest.raises(ValueError, match="wrap"):
        checks_markdown(rows, wrap=0)
