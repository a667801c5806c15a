"""A small Sphinx extension (``_config.yml``: ``sphinx.local_extensions``) for the book as one PDF (``make pdf``,
Jupyter Book's LaTeX builder, :mod:`tools.build_pdf`):

* **widgets as their static figures (LaTeX only).**  A widget's notebook output is a MIME bundle of the
  ipywidgets view and the HTML of its static version (:mod:`fedtheory.widgets`); LaTeX can draw neither, and
  would fall back to the text ``interactive(children=...)``.  The figure the widget drew when the notebook ran
  (its first setting, drawn by the chapter's plotting function) is kept in the notebook's widget state, in the
  output of the widget's ``Output`` model; here each widget's bundle is replaced by that PNG and a line saying
  that the HTML edition has the interactive version.  A widget without a stored figure is an error (the PDF
  would silently miss a figure).
* **SVG figures as PDF (LaTeX only)**, converted with ``rsvg-convert`` (Debian's librsvg2-bin, installed by
  ``tools/setup_pdf.sh``): LaTeX cannot include SVG and Sphinx would leave the figure out with a warning.
* **characters the fonts lack (LaTeX only)**: the superscript T and the subscripts k, n, p that the prose and the
  printed outputs use, and the ballot cross, have no glyph in the FreeFont faces; xelatex would drop them with
  only a log line, so they are typeset as super/subscripts (and a multiplication sign).
* **the HTML links the PDF when it exists.**  When ``_build/latex/fedbook.pdf`` is there at the time of an HTML
  build, it is copied next to the pages and every page's header gets a "PDF" download button (the book theme's
  header buttons); without the file, nothing is added.
"""
from __future__ import annotations

import base64
import hashlib
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util import logging

logger = logging.getLogger(__name__)

#: the PDF's file name (``_config.yml``: ``latex.latex_documents.targetname`` with ``.tex`` → ``.pdf``)
PDF_NAME = "fedbook.pdf"
#: where the widgets' figures are written for the LaTeX build (relative to the source folder, the repository)
FIGURE_DIR = "_build/pdf_widget_figures"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
_MODEL_ID = re.compile(r'"model_id"\s*:\s*"([^"]+)"')
_REF = "IPY_MODEL_"


def widget_figures(states: list[dict]) -> dict[str, bytes]:
    """``{model id: PNG}``: for every widget model of the notebooks' widget states, the first PNG that an
    ``Output`` model among it and its descendants holds (breadth first: the widget's own figure)."""
    models: dict[str, dict] = {}
    for state in states:
        models.update(state.get("state", {}))

    def children(model: dict) -> list[str]:
        refs = []
        for value in model.get("state", {}).values():
            for v in value if isinstance(value, list) else [value]:
                if isinstance(v, str) and v.startswith(_REF):
                    refs.append(v[len(_REF):])
        return refs

    def first_png(mid: str) -> bytes | None:
        queue, seen = [mid], set()
        while queue:
            m = queue.pop(0)
            if m in seen or m not in models:
                continue
            seen.add(m)
            model = models[m]
            if model.get("model_name") == "OutputModel":
                for out in model.get("state", {}).get("outputs", []):
                    png = out.get("data", {}).get("image/png")
                    if png:
                        return base64.b64decode(png if isinstance(png, str) else "".join(png))
            queue += children(model)
        return None

    out = {}
    for mid in models:
        png = first_png(mid)
        if png is not None:
            out[mid] = png
    return out


def _register(env: Any, config: Any, uri: str) -> str:
    """Add a file made at write time to the environment's images, which the builder copies (an image it does not
    know is left out of the LaTeX folder)."""
    if uri not in env.images:
        env.images.add_file(config.root_doc, uri)
    return uri


class WidgetFigures(SphinxPostTransform):
    """LaTeX: replace each widget's output by the figure it drew when the notebook ran (module docstring)."""

    default_priority = 3  # before myst-nb's SelectMimeType (4), which would keep the bundle's text/plain
    builders = ("latex",)

    def run(self, **kwargs: Any) -> None:
        bundles = [n for n in self.document.findall(nodes.container) if n.get("nb_element") == "mime_bundle"]
        widget_bundles = [(n, v) for n in bundles for v in n.children
                          if isinstance(v, nodes.container) and v.get("mime_type") == WIDGET_VIEW]
        if not widget_bundles:
            return
        states = []
        for meta in getattr(self.env, "nb_metadata", {}).values():
            js = meta.get("js_files", {}).get("ipywidgets_state")
            if js:
                states.append(json.loads(js[1]["body"]))
        figures = widget_figures(states)
        folder = Path(self.app.srcdir) / FIGURE_DIR
        folder.mkdir(parents=True, exist_ok=True)
        for bundle, view in widget_bundles:
            found = _MODEL_ID.search(view.astext() or "".join(n.astext() for n in view.findall(nodes.raw)))
            png = figures.get(found.group(1)) if found else None
            if png is None:
                logger.error("widget output without a stored figure (model %s): the PDF would miss it; run the "
                             "notebook with its widget state saved", found.group(1) if found else "?",
                             location=bundle)
                continue
            name = hashlib.sha256(png).hexdigest()[:24] + ".png"
            if not (folder / name).exists():
                (folder / name).write_bytes(png)
            uri = _register(self.env, self.config, f"{FIGURE_DIR}/{name}")
            image = nodes.image(uri=uri, candidates={"image/png": uri}, width="75%")
            note = nodes.paragraph(text="(A static frame of an interactive figure: the HTML edition lets the "
                                        "reader move its controls.)", classes=["fedbook-widget-note"])
            bundle.replace_self(nodes.container("", image, note, classes=["fedbook-widget-static"]))


class SvgAsPdf(SphinxPostTransform):
    """LaTeX: an image whose only form is SVG is converted to PDF (vector) with ``rsvg-convert``."""

    default_priority = 5
    builders = ("latex",)

    def run(self, **kwargs: Any) -> None:
        folder = Path(self.app.srcdir) / FIGURE_DIR
        for node in self.document.findall(nodes.image):
            candidates = node.get("candidates", {})
            # an image named with its extension has the one candidate "*" (Sphinx's ImageCollector)
            svg = candidates.get("image/svg+xml") or next(
                (v for k, v in candidates.items() if k == "*" and str(v).lower().endswith(".svg")), None)
            if svg is None or set(candidates) & {"application/pdf", "image/png", "image/jpeg"}:
                continue
            source = Path(self.app.srcdir) / svg
            if shutil.which("rsvg-convert") is None:
                logger.error("%s is an SVG and rsvg-convert is missing (tools/setup_pdf.sh installs librsvg2-bin): "
                             "the PDF would miss it", svg, location=node)
                continue
            folder.mkdir(parents=True, exist_ok=True)
            target = folder / (hashlib.sha256(source.read_bytes()).hexdigest()[:24] + ".pdf")
            if not target.exists():
                subprocess.run(["rsvg-convert", "-f", "pdf", "-o", str(target), str(source)], check=True)
            uri = _register(self.env, self.config, f"{FIGURE_DIR}/{target.name}")
            node["uri"], node["candidates"] = uri, {"application/pdf": uri}


#: characters without a glyph in the fonts of Sphinx's xelatex set-up (FreeSerif, FreeSans, FreeMono), as LaTeX
#: text commands (they work in code blocks too: Sphinx's Verbatim keeps \\, { and } as command characters)
UNICODE_FALLBACKS = {"\u1d40": r"\textsuperscript{T}", "\u2096": r"\textsubscript{k}", "\u2099": r"\textsubscript{n}",
                     "\u209a": r"\textsubscript{p}", "\u2717": "\u00d7"}


def _latex_preamble(app: Any, config: Any) -> None:
    lines = [r"\usepackage{newunicodechar}"] + [f"\\newunicodechar{{{c}}}{{{tex}}}" for c, tex in
                                                UNICODE_FALLBACKS.items()]
    elements = dict(config.latex_elements or {})
    elements["preamble"] = (elements.get("preamble", "") + "\n" + "\n".join(lines)).lstrip("\n")
    config.latex_elements = elements


def _pdf_path(app: Any) -> Path:
    return Path(app.outdir).parent / "latex" / PDF_NAME


def _pdf_link(app: Any, pagename: str, templatename: str, context: dict, doctree: Any) -> None:
    """HTML: a header button to the PDF on every page, when the PDF exists."""
    if app.builder.format != "html" or not _pdf_path(app).is_file():
        return
    buttons = context.get("header_buttons")
    if not isinstance(buttons, list):
        return
    url = context["pathto"](PDF_NAME, 1)
    buttons.insert(0, {"type": "link", "url": url, "tooltip": "Download the whole book as one PDF",
                       "icon": "fas fa-book", "label": "pdf-book-button", "classes": "pst-navbar-icon"})
    for group in buttons:  # and first in the "download this page" menu
        if group.get("label") == "download-buttons":
            group["buttons"].insert(0, {"type": "link", "url": url, "text": "book .pdf", "icon": "fas fa-book",
                                        "tooltip": "Download the whole book as one PDF",
                                        "label": "download-book-pdf-button"})


def _copy_pdf(app: Any, exception: Exception | None) -> None:
    if exception is None and app.builder.format == "html" and _pdf_path(app).is_file():
        shutil.copyfile(_pdf_path(app), Path(app.outdir) / PDF_NAME)


def setup(app: Any) -> dict:
    app.connect("config-inited", _latex_preamble)
    app.add_post_transform(WidgetFigures)
    app.add_post_transform(SvgAsPdf)
    app.connect("html-page-context", _pdf_link, priority=600)  # after the book theme adds its header buttons
    app.connect("build-finished", _copy_pdf)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
