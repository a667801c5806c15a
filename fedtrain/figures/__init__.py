"""The book's experiment figures: the style every plot shares, one module of plots per chapter, and the catalogue.

- :mod:`fedtrain.figures.style`: the column width, :func:`~fedtrain.figures.style.use_book_style`, ε line styles and axes, method colours,
  caption texts;
- :mod:`fedtrain.figures.empirical`: the empirical chapters' plots (MR-MTL paper, Figs. 2-5);
- :mod:`fedtrain.figures.theory`: theory meets training (the closed-form E(λ) next to trained MR-MTL);
- :mod:`fedtrain.figures.deep`: the deep-models chapter (Fig. 6, Fig. A1's example images, Fig. 6's λ profile);
- :mod:`fedtrain.figures.privacy_audit`: the one-run audit's canary scores;
- :mod:`fedtrain.figures.catalogue`: every experiment figure of the book by name (:data:`~fedtrain.figures.catalogue.CATALOGUE`), each
  redrawn by :func:`~fedtrain.figures.catalogue.book_figure` or ``python -m fedtrain.figures NAME`` (``--list`` lists them).

Every plot takes :class:`~fedtrain.engine.RunResult` objects (as returned by :func:`fedtrain.sweep.run_sweep`) or
arrays and returns a matplotlib :class:`~matplotlib.figure.Figure`; what is plotted is computed by
:mod:`fedtrain.analysis`.  The names below are re-exported here, so ``from fedtrain.figures import plot_fig6`` works.
"""
from __future__ import annotations

from fedtrain.analysis import (  # noqa: F401  (re-exported for older imports)
    TheorySummary,
    best_by_label,
    best_lambda_by_eps,
    best_lambda_table,
    curves_by_method,
    group_rows,
    lambda_curve,
    lower_is_better,
    method_label,
    paired_z,
    privacy_table,
    theory_summary,
)
from fedtrain.figures.catalogue import BOOK_FIGURES, CATALOGUE, BookFigure, BookTable, CatalogueEntry, book_figure, main
from fedtrain.figures.deep import (fig6_setting_text, plot_fig6, plot_fig6_lambda_profile, plot_mask_ratio_sweep,
                                   plot_rotated_masked_examples)
from fedtrain.figures.empirical import (plot_lambda_sweep, plot_privacy_utility, plot_privacy_utility_panels,
                                        plot_training_curves)
from fedtrain.figures.privacy_audit import plot_audit_scores
from fedtrain.figures.style import (COLUMN_WIDTH_IN, data_label, eps_axis, eps_positions, eps_style, method_color,
                                    metric_label, readable_log_axis, runs_text, settings_text, use_book_style)
from fedtrain.figures.theory import plot_theory_meets_training, plot_theory_vs_training

__all__ = [
    "COLUMN_WIDTH_IN",
    "use_book_style",
    "eps_style",
    "readable_log_axis",
    "settings_text",
    "BookFigure",
    "BookTable",
    "CatalogueEntry",
    "CATALOGUE",
    "BOOK_FIGURES",
    "book_figure",
    "plot_audit_scores",
    "plot_mask_ratio_sweep",
    "plot_fig6",
    "plot_fig6_lambda_profile",
    "fig6_setting_text",
    "method_color",
    "metric_label",
    "data_label",
    "runs_text",
    "eps_positions",
    "eps_axis",
    "plot_training_curves",
    "plot_privacy_utility",
    "plot_privacy_utility_panels",
    "plot_lambda_sweep",
    "plot_theory_vs_training",
    "plot_theory_meets_training",
    "plot_rotated_masked_examples",
]
