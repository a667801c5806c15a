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


def _align_to_value(control: Any) -> None:
    """Shift a float slider's ``min`` so that its initial value lies exactly on the step grid.

    The browser snaps a slider's value to ``min + k·step`` (in log space for ``FloatLogSlider``), so
    a default such as τ = 0.08 on a log grid starting at 10^-2.5 with step 0.05 would read out as
    0.0794 in the static HTML while the figure was drawn at 0.08.  Moving ``min`` by less than one
    step keeps the range and makes the readout show the value the figure was drawn with.
    """
    import math

    import ipywidgets as widgets

    if isinstance(control, widgets.FloatLogSlider):
        if control.value <= 0 or not control.step:
            return
        position = math.log(control.value, control.base)
        k = round((position - control.min) / control.step)
        control.min = position - k * control.step
    elif isinstance(control, widgets.FloatSlider) and control.step:
        k = round((control.value - control.min) / control.step)
        control.min = control.value - k * control.step


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

    for control in controls.values():
        _align_to_value(control)

    def _draw(**values: Any) -> None:
        fig = plot(**values)
        display(fig)
        plt.close(fig)

    # ``interactive`` draws once on construction, so the saved widget state holds a figure.
    return widgets.interactive(_draw, **controls)
