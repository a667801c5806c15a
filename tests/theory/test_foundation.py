"""Tests of the shared foundation: argument validation, derived-vs-printed checks, widgets."""
from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

from fedtheory import validation as v
from fedtheory.checks import checks_table, compare
from fedtheory.privacy.gaussian import gaussian_sigma


class TestValidation:
    def test_accepts_valid_values_and_returns_arrays(self):
        assert v.check_positive("eps", 0.5) == 0.5
        np.testing.assert_array_equal(v.check_nonnegative("tau2", [0.0, 1.0]), [0.0, 1.0])
        assert v.check_open_interval("delta", 1e-5, 0, 1) == 1e-5
        assert v.check_integer_at_least("K", 2, 2) == 2
        assert v.check_choice("accountant", "rdp", ("rdp", "pld")) == "rdp"

    @pytest.mark.parametrize("call, match", [
        (lambda: v.check_positive("eps", 0.0), r"eps must be > 0 \(got 0.0\)"),
        (lambda: v.check_positive("eps", [1.0, -2.0]), r"eps must be > 0 \(got -2.0\)"),
        (lambda: v.check_nonnegative("tau2", -1), r"tau2 must be >= 0"),
        (lambda: v.check_open_interval("delta", 1.0, 0, 1), r"delta must lie in the open interval \(0, 1\)"),
        (lambda: v.check_integer_at_least("K", 1, 2), r"K must be an integer >= 2 \(got 1\)"),
        (lambda: v.check_integer_at_least("K", 2**63, 2), r"K must be an integer in \[2, 2\^53\) \(got 9223372036854775808\)"),
        (lambda: v.check_integer_at_least("K", 2**53 + 1, 2), r"K must be an integer in \[2, 2\^53\)"),
        (lambda: v.check_integer_at_least("K", 1e300, 2), r"K must be an integer in \[2, 2\^53\)"),
        (lambda: v.check_integer_at_least("n", 2.5, 1), r"n must be an integer >= 1"),
        (lambda: v.check_positive("eps", float("nan")), r"eps must not contain NaN"),
        (lambda: v.check_positive("eps", "abc"), r"eps must be a real number"),
        (lambda: v.check_choice("accountant", "gdp", ("rdp", "pld")), r"accountant must be one of 'rdp', 'pld'"),
    ])
    def test_errors_name_the_argument_and_range(self, call, match):
        with pytest.raises(ValueError, match=match):
            call()


class TestCompare:
    def test_identity_is_proved(self):
        x, y = sp.symbols("x y", positive=True)
        c = compare("expand", (x + y) ** 2, x**2 + 2 * x * y + y**2)
        assert c.holds and bool(c) and "simplify" in c.method

    def test_difference_is_detected_with_counterexample(self):
        x, n = sp.symbols("x n", positive=True)
        c = compare("typo", x / n, x / (n + 1))
        assert not c.holds and not bool(c)
        assert c.counterexample  # a concrete point where the two differ
        assert sp.simplify((x / n - x / (n + 1)).subs(c.counterexample)) != 0

    def test_integer_domain_is_respected(self):
        K = sp.symbols("K", positive=True)
        c = compare("same", K * (K - 1) / 2, sp.binomial(K, 2), domain={K: (2, 30)})
        assert c.holds

    def test_table_renders_every_row(self):
        x = sp.symbols("x")
        text = checks_table([compare("a", x, x), compare("b", x, 2 * x)]).data
        rows = [line for line in text.splitlines() if line.startswith("| ")]
        assert len(rows) == 5  # header and two rows per check (derived over printed)
        assert "equal" in rows[2] and "differ" in rows[4]


def test_gaussian_sigma_classic_calibration():
    # sigma = sqrt(2 ln(1.25/delta)) / eps, computed independently with sympy's exact arithmetic
    expected = float(sp.sqrt(2 * sp.log(sp.Rational(125, 100) / sp.Rational(1, 10**5))) / sp.Rational(1, 4))
    assert gaussian_sigma(0.25, 1e-5) == pytest.approx(expected, rel=1e-12)
    np.testing.assert_allclose(gaussian_sigma(np.array([0.5, 1.0]), 1e-5, 2.0),
                               2.0 * np.sqrt(2 * np.log(1.25e5)) / np.array([0.5, 1.0]))
    with pytest.raises(ValueError, match="delta"):
        gaussian_sigma(1.0, 1.5)


def test_figure_widget_draws_once_and_redraws():
    import ipywidgets as widgets
    import matplotlib.pyplot as plt

    from fedtheory.widgets import figure_widget

    calls = []

    def plot(a: float):
        calls.append(a)
        fig, ax = plt.subplots()
        ax.plot([0, 1], [0, a])
        return fig

    before = plt.get_fignums()  # figures another test of this process left open are not this widget's
    box = figure_widget(plot, a=widgets.FloatSlider(value=1.0, min=0.0, max=2.0))
    assert calls == [1.0]
    box.children[0].value = 1.5
    assert calls[-1] == 1.5
    assert plt.get_fignums() == before  # the widget's figures are closed after display


def test_figure_widget_puts_initial_values_on_the_slider_grid():
    import math

    import ipywidgets as widgets
    import matplotlib.pyplot as plt

    from fedtheory.widgets import figure_widget

    def plot(tau: float, sigma: float):
        fig, ax = plt.subplots()
        ax.plot([0, 1], [tau, sigma])
        return fig

    tau = widgets.FloatLogSlider(value=0.08, base=10, min=-2.5, max=0, step=0.05)
    sigma = widgets.FloatSlider(value=0.42, min=0.05, max=2.0, step=0.05)
    figure_widget(plot, tau=tau, sigma=sigma)
    # the browser snaps to min + k*step: the initial value must be such a point (within float error)
    k = (math.log10(tau.value) - tau.min) / tau.step
    assert abs(k - round(k)) < 1e-9 and tau.value == 0.08 and -2.55 < tau.min <= -2.45
    k = (sigma.value - sigma.min) / sigma.step
    assert abs(k - round(k)) < 1e-9 and sigma.value == 0.42


def test_huge_silo_counts_are_rejected_not_wrapped():
    """K >= 2^63 is rejected, not wrapped to a negative int64 (which would give a negative MSE)."""
    from fedtheory.mean_estimation import mse

    with pytest.raises(ValueError, match=r"K must be an integer in \[2, 2\^53\)"):
        mse(1.0, 0.1, 0.01, 2**63)
    assert mse(1.0, 0.1, 0.01, 2**40) > 0


def test_fedtrain_imports_no_private_fedtheory_module():
    """fedtrain uses fedtheory's public API only (the shared validation is public: fedtheory.validation)."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "fedtrain"
    pattern = re.compile(r"fedtheory(\.\w+)*\._\w+|from fedtheory(\.\w+)* import .*\b_\w+")
    bad = [f"{p.relative_to(root.parent)}:{i}: {line.strip()}" for p in sorted(root.rglob("*.py"))
           for i, line in enumerate(p.read_text().splitlines(), 1)
           if pattern.search(line) and ("import" in line or "fedtheory" in line)]
    assert bad == [], "\n".join(bad)


@pytest.mark.parametrize("text", ["1e309", "-1e400", ["0.5", "1e999"]])
def test_a_number_that_overflows_a_float_is_refused_only_the_word_inf_means_infinity(text):
    from fedtheory.validation import as_float_array, check_positive

    with pytest.raises(ValueError, match="finite number or the word inf"):
        as_float_array("eps", text)
    with pytest.raises(ValueError, match="eps must be a finite number"):
        check_positive("eps", text)
    assert np.isinf(as_float_array("eps", "inf")) and np.isinf(as_float_array("eps", ["1", "-Infinity"])).any()
