"""fedtrain.deep_plots: the DP-cost figure and the two-model figure draw what they are given, in the stated order."""
from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from fedtrain.deep_plots import panel_order_text, plot_dp_costs, plot_two_models  # noqa: E402
from fedtrain.dp_costs import DPCosts  # noqa: E402


def test_dp_costs_figure_draws_three_bars_a_row_and_names_the_limit():
    costs = [DPCosts("Local", "mask 0", 4.0, 0.73, 0.55, 0.53, 1, "p"), DPCosts("Local", "mask 0.5", 4.0, 0.7, 0.6, 0.4, 2, "p")]
    fig = plot_dp_costs(costs, title="t")
    ax = fig.axes[0]
    widths = sorted(round(p.get_width(), 3) for p in ax.patches)
    assert widths == sorted([0.73, 0.55, 0.53, 0.7, 0.6, 0.4])
    texts = [t.get_text() for t in ax.texts]
    assert any("clipping-bound" in t for t in texts) and any("noise-bound" in t for t in texts)
    assert ax.get_xlabel().startswith("test accuracy") and "(1 seed)" in ax.get_yticklabels()[0].get_text()
    plt.close(fig)
    with pytest.raises(ValueError, match="at least one"):
        plot_dp_costs([])


def test_two_models_panels_follow_the_given_order():
    first = {("A", math.inf): 0.9, ("A", 8.0): 0.3, ("B", math.inf): 0.8, ("B", 8.0): 0.2}
    second = {("A", math.inf): 0.85, ("A", 8.0): 0.5}
    fig = plot_two_models(first, second, labels=["A", "B"], eps_values=[math.inf, 8.0], names=("x", "y"))
    assert [ax.get_title() for ax in fig.axes] == ["without privacy", "ε = 8 per silo"]
    assert panel_order_text([math.inf, 8.0]) == "left: without privacy, right: ε = 8 per silo"
    assert len(fig.axes[0].patches) == 3  # two bars of the first model, one of the second
    plt.close(fig)
