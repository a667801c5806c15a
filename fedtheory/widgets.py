"""Interactive figures for the book: one helper so every chapter's widgets behave the same.

A chapter's widget is a *plain plotting function* (tested directly in ``tests/``) that takes the
slider values as keyword arguments and returns a :class:`matplotlib.figure.Figure`.
:func:`figure_widget` wires it to sliders and returns a :class:`FigureWidget`, which is two things:

* **live** (a Jupyter front end with a kernel, e.g. ``make lab``): an ``ipywidgets`` box that calls
  the plotting function again whenever a slider moves, over the sliders' full ranges;
* **static** (the HTML book, no kernel), in one of two forms:

  - *live* (``live="name"``, for figures whose quantities are closed forms): the sliders, over their
    full ranges, recompute the figure in the reader's browser with JavaScript generated from the sympy
    derivations (:mod:`fedtheory.widgets_live`, :mod:`fedtheory.jsgen`; drawn by the vendored uPlot);
  - *frames* (accounting, tuning cost and other numeric results): HTML controls over a grid of
    round values; every grid point's figure is drawn by the plotting function when the notebook runs
    (so the numbers come from ``fedtheory``) and embedded as a PNG at twice the screen resolution (the
    book's build moves the frames to files that the page fetches only when a slider selects them:
    ``tools/fedbook_widget_assets.py``); a few lines of inline JavaScript show the selected frame.  Controls that do not
    move in the grid are shown as text, and the caption names what moves.

  No CDN, no kernel.

Both live in one output (a MIME bundle with the widget view and ``text/html``): Jupyter front ends
with the widget manager show the live widget, the book's HTML builder is told to prefer
``text/html`` (``nb_mime_priority_overrides`` in ``_config.yml``), so the page shows one figure per
widget.  Set the environment variable ``FEDBOOK_WIDGET_FRAMES=0`` to skip drawing the static frames
(``make lab`` does: a live reader does not need them).
"""
from __future__ import annotations

import base64
import hashlib
import html
import io
import itertools
import json
import math
import os
import uuid
from typing import Any, Callable

import ipywidgets as widgets
import numpy as np

__all__ = ["figure_widget", "FigureWidget", "figure_data", "describe_figure", "static_grid", "round_value"]

#: default cap on the number of grid points (figures) drawn for one widget's static version
DEFAULT_MAX_FRAMES = 25
#: resolution of the static frames: twice DISPLAY_DPI, so that they stay sharp on high-density
#: screens.  The notebook output embeds them; the book's build writes them to files that the page
#: fetches when a slider selects them (tools/fedbook_widget_assets.py), so they add little to its weight
FRAME_DPI = 160
#: the resolution at which a frame is laid out in the page
DISPLAY_DPI = 80


def _align_to_value(control: Any) -> None:
    """Shift a float slider's ``min`` so that its initial value lies exactly on the step grid.

    The browser snaps a slider's value to ``min + k·step`` (in log space for ``FloatLogSlider``), so
    a default such as τ = 0.08 on a log grid starting at 10^-2.5 with step 0.05 would read out as
    0.0794 in the static HTML while the figure was drawn at 0.08.  Moving ``min`` by less than one
    step keeps the range and makes the readout show the value the figure was drawn with.
    """
    if isinstance(control, widgets.FloatLogSlider):
        if control.value <= 0 or not control.step:
            return
        position = math.log(control.value, control.base)
        k = round((position - control.min) / control.step)
        control.min = position - k * control.step
    elif isinstance(control, widgets.FloatSlider) and control.step:
        k = round((control.value - control.min) / control.step)
        control.min = control.value - k * control.step


def figure_data(fig: Any) -> list[np.ndarray]:
    """The numbers a figure draws: every line's x and y data, every collection's offsets and paths,
    every patch's vertices and every text, axes by axes (used to test that a slider changes the figure)."""
    out: list[np.ndarray] = []
    for ax in fig.axes:
        for line in ax.lines:
            out.append(np.asarray(line.get_xdata(), dtype=float))
            out.append(np.asarray(line.get_ydata(), dtype=float))
        for coll in ax.collections:
            out.append(np.asarray(coll.get_offsets(), dtype=float).ravel())
            for path in coll.get_paths():
                out.append(np.asarray(path.vertices, dtype=float).ravel())
        for patch in ax.patches:
            out.append(np.asarray(patch.get_verts(), dtype=float).ravel())
        out.append(np.array([float(v) for v in ax.get_xlim() + ax.get_ylim()]))
    texts = [t.get_text() for t in fig.findobj(lambda a: hasattr(a, "get_text") and callable(a.get_text))]
    out.append(np.frombuffer("\n".join(texts).encode(), dtype=np.uint8).astype(float))
    return out


def _clean(text: str) -> str:
    """A matplotlib label as plain text: mathtext ``$...$`` markers and backslashes dropped, one line."""
    return " ".join(text.replace("$", "").replace("\\", "").replace("{", "").replace("}", "").split())


def describe_figure(fig: Any, max_entries: int = 6) -> str:
    """What a matplotlib figure shows, in words (the alt text of a widget's frames): its title, and per
    panel the y label against the x label, the panel's title and its legend's first ``max_entries``
    entries.  Built from the figure's own labels, so it names what is drawn, not the function drawing it."""
    parts = []
    for ax in fig.axes:
        xl, yl = _clean(ax.get_xlabel()), _clean(ax.get_ylabel())
        labels = [_clean(lb) for lb in ax.get_legend_handles_labels()[1] if lb and not lb.startswith("_")]
        if not (xl or yl or labels):
            continue
        text = f"{yl or 'value'} against {xl or 'position'}"
        title = _clean(ax.get_title())
        if title:
            text = f"{title}: {text}"
        if labels:
            more = f" and {len(labels) - max_entries} more" if len(labels) > max_entries else ""
            text += " (" + ", ".join(labels[:max_entries]) + more + ")"
        parts.append(text)
    legend = [_clean(t.get_text()) for leg in getattr(fig, "legends", []) for t in leg.get_texts()]
    head = _clean(fig._suptitle.get_text()) if getattr(fig, "_suptitle", None) is not None else ""
    n = len(parts)
    if not n:
        return (f"{head}: " if head else "") + f"figure with {len(fig.axes)} unlabelled panel(s)."
    out = (f"{head}. " if head else "") + ("Plot of " if n == 1 else f"{n} panels: ") + "; ".join(parts)
    if legend:
        out += "; legend: " + ", ".join(legend[:max_entries]) + (" and more" if len(legend) > max_entries else "")
    return out + "."


def _slider_values(control: Any) -> list[Any]:
    """Every value a control can take in the browser (its step grid), in order."""
    if hasattr(control, "options") and not isinstance(control, widgets.fixed):
        values = getattr(control, "_options_values", None)
        return list(values if values is not None else control.options)
    if isinstance(control, widgets.FloatLogSlider):
        k = int(math.floor((control.max - control.min) / control.step + 1e-9))
        return [float(control.base ** (control.min + i * control.step)) for i in range(k + 1)]
    if isinstance(control, (widgets.IntSlider, widgets.FloatSlider)):
        step = control.step or 1
        k = int(math.floor((control.max - control.min) / step + 1e-9))
        values = [control.min + i * step for i in range(k + 1)]
        return [int(v) for v in values] if isinstance(control, widgets.IntSlider) else [float(v) for v in values]
    if isinstance(control, widgets.Checkbox):
        return [False, True]
    raise TypeError(f"figure_widget: no static grid for a {type(control).__name__} control")


def _index_of(values: list[Any], value: Any) -> int:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return int(np.argmin([abs(float(v) - float(value)) for v in values]))
    return values.index(value)


def round_value(value: Any, digits: int = 2) -> Any:
    """A float rounded to ``digits`` significant digits (ints, strings and other values unchanged):
    the values of an automatic static grid (``10**-2.5`` shows as 0.0032, not 0.003162)."""
    if isinstance(value, float) and value != 0 and math.isfinite(value):
        return float(f"{value:.{digits}g}")
    return value


def static_grid(controls: dict[str, Any], max_frames: int = DEFAULT_MAX_FRAMES,
                grid: dict[str, list[Any]] | None = None, per_control: int = 5) -> dict[str, list[Any]]:
    """The values of each control drawn for the static HTML: at most ``max_frames`` combinations.

    ``grid`` names the values of the controls that move in the static page, exactly as given (round
    values read out as typed; the control's current value is added); the other controls stay at
    their current values.  Without ``grid``, controls are taken in order, each with up to
    ``per_control`` values spread evenly over its range (in the slider's steps, so a log slider's
    values are spread in log, then rounded to two significant digits), while the number of
    combinations stays within ``max_frames``.
    """
    if max_frames < 1:
        raise ValueError(f"max_frames must be at least 1 (got {max_frames!r})")
    names = [n for n, c in controls.items() if not isinstance(c, widgets.fixed)]
    unknown = set(grid or {}) - set(names)
    if unknown:
        raise ValueError(f"grid names controls that the widget does not have: {sorted(unknown)}")
    full = {n: _slider_values(controls[n]) for n in names}
    current = {n: _index_of(full[n], controls[n].value) for n in names}
    if grid is not None:
        out = {}
        for n in names:
            values = list(grid.get(n, []))
            if not any(_same(v, controls[n].value) for v in values):
                values.append(controls[n].value)
            numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)
            out[n] = sorted(values) if numeric else [v for v in full[n] if v in values]
        total = math.prod(len(v) for v in out.values())
        if total > max_frames:
            raise ValueError(f"the static grid has {total} combinations, more than max_frames={max_frames}")
        return out
    picks: dict[str, set[int]] = {n: {current[n]} for n in names}
    product = 1
    for n in names:
        k = min(len(full[n]), per_control, max_frames // product)
        if k < 2:
            continue
        spread = set(np.linspace(0, len(full[n]) - 1, k).round().astype(int).tolist())
        spread.discard(min(spread, key=lambda i: abs(i - current[n])))
        picks[n] |= spread
        product *= len(picks[n])
    total = math.prod(len(p) for p in picks.values())
    if total > max_frames:
        raise ValueError(f"the static grid has {total} combinations, more than max_frames={max_frames}")
    # the current value itself; the others rounded to read as round numbers
    return {n: [controls[n].value if i == current[n] else round_value(full[n][i]) for i in sorted(picks[n])]
            for n in names}


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return math.isclose(float(a), float(b), rel_tol=1e-12, abs_tol=0.0) or a == b
    return a == b


def _label(control: Any, name: str) -> str:
    return getattr(control, "description", "") or name


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


_SCRIPT = """(function () {
  var root = document.getElementById(%(id)s);
  if (!root || root.dataset.ready) return;
  root.dataset.ready = "1";
  var data = null;  // parsed when a control first moves; frames are URLs in the book (fetched when shown)
  var img = root.querySelector("img.fedbook-widget-figure");
  var inputs = root.querySelectorAll("[data-control]");
  function redraw() {
    if (!data) data = JSON.parse(root.querySelector("script.fedbook-widget-data").textContent);
    var key = data.controls.map(function () { return 0; });
    inputs.forEach(function (el) {
      var j = parseInt(el.dataset.control, 10), i = parseInt(el.value, 10);
      key[j] = i;
      var out = el.parentNode.querySelector("output");
      if (out) out.textContent = data.controls[j].labels[i];
    });
    var frame = data.frames[key.join(",")];
    img.src = data.urls ? data.urls[frame] : "data:image/png;base64," + data.images[frame];
    img.alt = data.alt + " (" + data.controls.map(function (c, j) { return c.name + " = " + c.labels[key[j]]; }).join(", ") + ")";
  }
  inputs.forEach(function (el) { el.addEventListener("input", redraw); el.addEventListener("change", redraw); });
})();"""


def _small_png(png: bytes) -> bytes:
    """The PNG with a 256-colour palette: line plots look the same at a third of the bytes (a page
    embeds tens of frames)."""
    from PIL import Image  # a dependency of matplotlib

    image = Image.open(io.BytesIO(png)).convert("RGB").quantize(colors=256, method=Image.Quantize.MEDIANCUT)
    out = io.BytesIO()
    image.save(out, format="PNG", optimize=True)
    return out.getvalue()


def _static_html(plot: Callable[..., Any], controls: dict[str, Any], grid: dict[str, list[Any]]) -> str:
    """Draw ``plot`` at every grid point and return the self-contained HTML of the static widget."""
    import matplotlib.pyplot as plt

    fixed = {n: c.value for n, c in controls.items() if isinstance(c, widgets.fixed)}
    names = list(grid)
    images: list[str] = []
    alt = ""
    seen: dict[str, int] = {}
    frames: dict[str, int] = {}
    for combo in itertools.product(*(range(len(grid[n])) for n in names)):
        fig = plot(**fixed, **{n: grid[n][i] for n, i in zip(names, combo)})
        alt = alt or describe_figure(fig)
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=FRAME_DPI)
        plt.close(fig)
        png = _small_png(buf.getvalue())
        digest = hashlib.sha256(png).hexdigest()
        if digest not in seen:
            seen[digest] = len(images)
            images.append(base64.b64encode(png).decode("ascii"))
        frames[",".join(map(str, combo))] = seen[digest]
    current = [_index_of(grid[n], controls[n].value) for n in names]
    data = {
        "alt": alt,
        "controls": [{"name": n, "labels": [_fmt(v) for v in grid[n]]} for n in names],
        "frames": frames, "images": images,
    }
    uid = "fedbook-widget-" + uuid.uuid4().hex[:12]
    rows, moving, still = [], [], []
    for j, n in enumerate(names):
        label = html.escape(_label(controls[n], n))
        values = grid[n]
        if len(values) == 1:
            still.append(f"{label} = {html.escape(_fmt(values[0]))}")
            continue
        moving.append(f"{label} ({len(values)} values)")
        if all(isinstance(v, str) for v in values):
            opts = "".join(f'<option value="{i}"{" selected" if i == current[j] else ""}>{html.escape(v)}</option>'
                           for i, v in enumerate(values))
            rows.append(f'<label>{label} <select data-control="{j}">{opts}</select></label>')
        else:
            rows.append(f'<label>{label} <input type="range" data-control="{j}" min="0" max="{len(values) - 1}" '
                        f'step="1" value="{current[j]}"> <output>{html.escape(_fmt(values[current[j]]))}</output>'
                        f"</label>")
    still += [f"{html.escape(n)} = {html.escape(_fmt(v))}" for n, v in fixed.items()
              if isinstance(v, (int, float)) and not isinstance(v, bool)]
    first_png = base64.b64decode(images[frames[",".join(map(str, current))]])
    width, height = _png_size(first_png)
    scale = DISPLAY_DPI / FRAME_DPI
    n_points = len(frames)
    note = (f"Precomputed frames: {', '.join(moving)} move, {n_points} settings in all, each drawn by fedtheory "
            "when the book was built" + (f"; fixed here: {', '.join(still)}" if still else "")
            + ". Run the notebook with a kernel (<code>make lab</code>) for every value.")
    payload = json.dumps(data, separators=(",", ":")).replace("</", "<\\/")
    return (f'<div class="fedbook-widget" id="{uid}">'
            f'<div class="fedbook-widget-controls">{"".join(rows)}</div>'
            f'<img class="fedbook-widget-figure" width="{round(width * scale)}" height="{round(height * scale)}" '
            f'decoding="async" '
            f'src="data:image/png;base64,{images[frames[",".join(map(str, current))]]}" '
            f'alt="{html.escape(data["alt"])}">'
            f'<p class="fedbook-widget-note">{note}</p>'
            f'<script type="application/json" class="fedbook-widget-data">{payload}</script>'
            f"<script>{_SCRIPT % {'id': json.dumps(uid)}}</script></div>")


def _png_size(png: bytes) -> tuple[int, int]:
    """Width and height of a PNG, from its IHDR chunk."""
    return int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")


class FigureWidget(widgets.interactive):
    """The live ``ipywidgets`` box of :func:`figure_widget`, which also renders as a static widget.

    ``last_figure_data`` holds :func:`figure_data` of the figure drawn last (for tests);
    ``static_values`` the per-control values drawn for the static HTML (frames); ``live`` the name
    of the live figure (:data:`fedtheory.widgets_live.LIVE_FIGURES`) that replaces the frames.
    """

    def __init__(self, plot: Callable[..., Any], controls: dict[str, Any], max_frames: int,
                 grid: dict[str, list[Any]] | None, live: str | None = None,
                 live_sliders: tuple[list[dict], dict[str, Any]] | None = None):
        import matplotlib.pyplot as plt
        from IPython.display import display

        self.plot = plot
        self.controls = controls
        self.last_figure_data: list[np.ndarray] | None = None
        self.live = live
        self._live_sliders = live_sliders
        self.static_values = static_grid(controls, max_frames, grid)

        def _draw(**values: Any) -> None:
            fig = plot(**values)
            self.last_figure_data = figure_data(fig)
            display(fig)
            plt.close(fig)

        # ``interactive`` draws once on construction, so the live widget starts with a figure.
        super().__init__(_draw, **controls)

    def static_html(self) -> str:
        """The static widget's HTML: the live figure, or else the frames (drawn at every grid point: seconds)."""
        if self.live is not None:
            from fedtheory.widgets_live import live_html

            return live_html(self.live, self.controls, sliders=self._live_sliders)
        return _static_html(self.plot, self.controls, self.static_values)

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        bundle = super()._repr_mimebundle_(**kwargs)
        if os.environ.get("FEDBOOK_WIDGET_FRAMES", "1") != "0":
            bundle["text/html"] = self.static_html()
        return bundle


def figure_widget(plot: Callable[..., Any], /, *, max_frames: int = DEFAULT_MAX_FRAMES,
                  grid: dict[str, list[Any]] | None = None, live: str | None = None,
                  **controls: Any) -> FigureWidget:
    """Return a :class:`FigureWidget` that redraws ``plot(**values)`` whenever a control moves.

    ``controls`` are ipywidgets controls (``FloatLogSlider``, ``IntSlider``, ``SelectionSlider``,
    ``Dropdown``, ...) or fixed values wrapped in ``ipywidgets.fixed``; their names are ``plot``'s
    keyword arguments.  ``plot`` must return a matplotlib figure, which is displayed and then closed
    (no figure leaks, no duplicate inline rendering).  The static HTML version draws at most
    ``max_frames`` grid points (see :func:`static_grid`); ``grid`` fixes some controls' static values.
    ``live`` names a figure of :data:`fedtheory.widgets_live.LIVE_FIGURES` that computes the same
    quantities in the reader's browser: the static HTML is then that live figure (sliders over the
    controls' full ranges) instead of frames.
    """
    live_sliders = None
    if live is not None:
        from fedtheory.widgets_live import LIVE_FIGURES, live_controls

        if live not in LIVE_FIGURES:
            raise ValueError(f"live must be one of {sorted(LIVE_FIGURES)} (got {live!r})")
        # the controls' full ranges, before _align_to_value moves a min by up to one step
        live_sliders = live_controls(controls)
    for control in controls.values():
        _align_to_value(control)
    return FigureWidget(plot, controls, max_frames, grid, live, live_sliders)
