"""Interactive figures for the book: one helper so every chapter's widgets behave the same.

A chapter's widget is a *plain plotting function* (tested directly in ``tests/``) that takes the
slider values as keyword arguments and returns a :class:`matplotlib.figure.Figure`.
:func:`figure_widget` wires it to sliders.  The built HTML keeps the widget's last drawn state, but a
frozen widget cannot recompute, so every chapter also shows the same function's output at the
paper's defaults as a static figure next to the widget.
"""
from __future__ import annotations

from typing import Any, Callable

__all__ = ["figure_widget"]


def figure_widget(plot: Callable[..., Any], /, **controls: Any):
    """Return an ``ipywidgets`` box that redraws ``plot(**values)`` whenever a control moves.

    ``controls`` are ipywidgets controls (``FloatLogSlider``, ``IntSlider``, ...) or fixed values
    wrapped in ``ipywidgets.fixed``; their names are ``plot``'s keyword arguments.  ``plot`` must
    return a matplotlib figure, which is displayed and then closed (no figure leaks, no duplicate
    inline rendering).
    """
    import ipywidgets as widgets
    import matplotlib.pyplot as plt
    from IPython.display import display

    def _draw(**values: Any) -> None:
        fig = plot(**values)
        display(fig)
        plt.close(fig)

    # ``interactive`` draws once on construction, so the saved widget state holds a figure.
    return widgets.interactive(_draw, **controls)
