"""Figures are legible at the book's column width: their text is drawn at least :data:`MIN_TEXT_PX` CSS pixels tall
once the figure is scaled to the column, and their lines have at least 3:1 contrast against the white page
(WCAG 2's non-text contrast).  A figure wider than the column (``fedtrain.figures.COLUMN_WIDTH_IN``, at 100 px per
inch) is shrunk to it with its text; these tests fail on the figures as they were (Fig. A1 of the rotated and
masked silos was 9.9 in wide, the heterogeneous-silos figure 10 in wide with a yellow line at 1.3:1).
"""
from __future__ import annotations

import matplotlib
import numpy as np
import pytest
from matplotlib import colors

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from fedtrain.figures import COLUMN_WIDTH_IN  # noqa: E402

#: the least height (CSS px) of a figure's text on the page: 8 pt at the column's 100 px per inch
MIN_TEXT_PX = 10.5
MIN_LINE_CONTRAST = 3.0


def text_px_at_column(fig) -> float:
    """The smallest font size of ``fig``'s visible text, in CSS px, once the figure (its tight bounding box, as
    the book saves it) is scaled to the column: 1 pt = 100/72 px, times min(1, column / figure width)."""
    fig.canvas.draw()
    width_in = fig.get_tightbbox(fig.canvas.get_renderer()).width
    scale = min(1.0, COLUMN_WIDTH_IN / width_in)
    sizes = [t.get_fontsize() for t in fig.findobj(matplotlib.text.Text) if t.get_visible() and t.get_text().strip()]
    return min(sizes) * 100 / 72 * scale


def contrast_on_white(color) -> float:
    rgb = np.array(colors.to_rgb(color))
    lin = np.where(rgb <= 0.03928, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)
    return 1.05 / (float(lin @ [0.2126, 0.7152, 0.0722]) + 0.05)


def line_contrasts(fig) -> list[float]:
    return [contrast_on_white(line.get_color()) for ax in fig.axes for line in ax.get_lines()
            if line.get_visible() and not line.get_label().startswith("_child")]


def test_heterogeneous_silos_figure_is_legible_at_column_width():
    from fedtheory.figures.mean_estimation import plot_heterogeneous

    fig = plot_heterogeneous([0.002, 0.004, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5], 0.08)
    try:
        assert text_px_at_column(fig) >= MIN_TEXT_PX
        assert min(line_contrasts(fig)) >= MIN_LINE_CONTRAST, line_contrasts(fig)
    finally:
        plt.close(fig)


def test_rotated_masked_examples_are_legible_at_column_width():
    from fedtrain.data import rotated_masked_standin
    from fedtrain.figures import plot_rotated_masked_examples

    d = rotated_masked_standin(num_silos=8, train_per_silo=3, test_per_silo=1, mask_ratio=0.4, image_size=12)
    fig = plot_rotated_masked_examples(d, per_silo=2, show_mask=True)
    try:
        assert text_px_at_column(fig) >= MIN_TEXT_PX
        # the images keep their square shape
        for ax in fig.axes:
            b = ax.get_window_extent()
            assert b.width == pytest.approx(b.height, rel=0.02)
    finally:
        plt.close(fig)


def test_tuning_cost_panel_lines_are_readable_on_white():
    from fedtheory.figures import tuning_cost as F

    fig = F.plot_widget()
    try:
        assert min(line_contrasts(fig)) >= MIN_LINE_CONTRAST, line_contrasts(fig)
    finally:
        plt.close(fig)


def test_gaps_against_epsilon_figure_is_legible_at_column_width():
    from fedtheory.figures.mean_estimation import plot_gaps_vs_eps

    fig = plot_gaps_vs_eps()
    try:
        assert text_px_at_column(fig) >= MIN_TEXT_PX
    finally:
        plt.close(fig)


def test_advisor_check_lines_are_readable_on_white():
    # the λ-advisor chapter's check figure: one colour per ε (viridis ran to 0.85, a 1.7:1 yellow-green)
    from pathlib import Path

    from fedtrain.advise import load_check, plot_check

    report = load_check(Path(__file__).resolve().parents[2] / "book" / "data" / "advisor_school_check.json")["advice"]
    assert len(report) >= 3
    fig = plot_check(report)
    try:
        assert min(line_contrasts(fig)) >= MIN_LINE_CONTRAST, line_contrasts(fig)
    finally:
        plt.close(fig)


def test_every_method_colour_and_named_palette_reads_on_white():
    """Lines drawn in the registry's method colours and the figures' named palettes keep >= 3:1 contrast on white
    (WCAG's minimum for graphics); matplotlib's tab:orange (2.5:1), tab:pink (2.7:1) and tab:olive (2.0:1) did not."""
    from matplotlib.colors import to_rgb

    from fedtheory.figures.secagg import COLORS
    from fedtrain.methods.registry import METHOD_REGISTRY

    def contrast(color) -> float:
        lin = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in to_rgb(color)]
        return 1.05 / (0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2] + 0.05)

    colours = {f"method {m}": spec.color for m, spec in METHOD_REGISTRY.items()}
    colours.update({f"secagg {k}": v for k, v in COLORS.items()})
    low = {k: round(contrast(v), 2) for k, v in colours.items() if contrast(v) < 3.0}
    assert not low, low
    assert contrast("tab:orange") < 3.0  # the check can fail
