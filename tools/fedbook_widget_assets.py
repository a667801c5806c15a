"""A small Sphinx extension (``_config.yml``: ``sphinx.local_extensions``) for the book's widgets
(:mod:`fedtheory.widgets`), run on each page as it is written:

* **frames as files, loaded lazily.**  A notebook output can only carry its figures inline, so a
  frames widget embeds its PNG frames (twice the screen resolution) as base64 in its HTML.  Here each
  frame is written once to ``_images/fedbook-frames/<sha256>.png`` and the page keeps only their
  URLs: the reader's browser fetches the first frame with the page and each other one only when a
  slider selects it, so the page stays light.  Pages opened outside the
  book (the planted pages of ``tests/book/test_browser_checker.py``) keep their inline frames; the
  widget's script reads both forms.
* **live widgets' scripts on their pages only.**  uPlot (vendored by ``tools/vendor_js.sh``) and
  ``book/_static/fedbook_live.js`` are added to the pages that hold a live widget
  (:mod:`fedtheory.widgets_live`), not to every page.
"""
from __future__ import annotations

import base64
import hashlib
import json
import re
from pathlib import Path

FRAMES_DIR = "_images/fedbook-frames"
_DATA = re.compile(r'(<script type="application/json" class="fedbook-widget-data">)(.*?)(</script>)', re.S)
_FIRST = re.compile(r'(<img class="fedbook-widget-figure"[^>]*?)src="data:image/png;base64,([A-Za-z0-9+/=]+)"')


def externalize_frames(body: str, pagename: str, outdir: Path) -> str:
    """``body`` with every frames widget's inline PNGs written under ``outdir/FRAMES_DIR`` and replaced
    by URLs relative to the page ``pagename``."""
    prefix = "../" * pagename.count("/") + FRAMES_DIR + "/"
    urls: dict[str, str] = {}

    def store(b64: str) -> str:
        if b64 not in urls:
            png = base64.b64decode(b64)
            name = hashlib.sha256(png).hexdigest()[:24] + ".png"
            folder = outdir / FRAMES_DIR
            folder.mkdir(parents=True, exist_ok=True)
            if not (folder / name).exists():
                tmp = folder / (name + ".tmp")
                tmp.write_bytes(png)
                tmp.replace(folder / name)
            urls[b64] = prefix + name
        return urls[b64]

    def data(m: re.Match) -> str:
        payload = json.loads(m.group(2).replace("<\\/", "</"))
        if "images" in payload:
            payload["urls"] = [store(b) for b in payload.pop("images")]
        return m.group(1) + json.dumps(payload, separators=(",", ":")).replace("</", "<\\/") + m.group(3)

    body = _DATA.sub(data, body)
    return _FIRST.sub(lambda m: f'{m.group(1)}src="{store(m.group(2))}"', body)


def _page(app, pagename, templatename, context, doctree) -> None:
    body = context.get("body")
    if not body or "fedbook-widget" not in body:
        return
    context["body"] = externalize_frames(body, pagename, Path(app.outdir))
    if "fedbook-live" in body:
        # added during html-page-context, these go to this page only
        app.add_css_file("uplot/uPlot.min.css")
        app.add_js_file("uplot/uPlot.iife.min.js")
        app.add_js_file("fedbook_live.js")


def setup(app):
    app.connect("html-page-context", _page, priority=100)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
