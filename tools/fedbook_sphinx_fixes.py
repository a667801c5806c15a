"""A small Sphinx extension (``_config.yml``: ``sphinx.local_extensions``) with the book's build-level fixes:

* ``Identifier 'THEBE_JS_URL' has already been declared``: sphinx-thebe's configuration script
  (``const THEBE_JS_URL = ...``) is registered twice in this stack, and a second ``const`` of the same
  name is a SyntaxError.  Identical scripts are dropped from each page's list, keeping the first.
* ``Got invalid theme mode: . Resetting to auto.`` (pydata-sphinx-theme, on a reader's first visit):
  the theme reads its mode from the page context's ``default_mode``, which Jupyter Book leaves empty;
  it is set to ``light`` (the figures have white backgrounds); the reader can still switch.
* **alt text that says what an image shows.**  A notebook's figure output has no alt text, and Sphinx
  then writes the image's file path as its alt.  Every image without one gets its figure's caption
  (the caption's first paragraph, without the legend: provenance and the command that redraws it); an
  image outside a figure gets the text of the figure that the cell's output is glued into, or else a
  description of what the cell drew (:func:`alt_for`).
* **version and build date on every page.**  ``_config.yml``'s ``html.extra_footer`` may hold
  ``{version}`` (the ``fedbook`` package's version, from ``pyproject.toml``) and ``{date}`` (the build's
  UTC date; ``SOURCE_DATE_EPOCH`` when set, for reproducible builds); they are filled in here, and the
  version is also Sphinx's ``version``/``release``.
* **no saved ipywidgets state.**  A notebook that Jupyter Book executes itself (``make book``) comes back
  with its ipywidgets' state in its metadata (nbclient's ``store_widget_state``), and MyST-NB would write
  that state into the page as a ``application/vnd.jupyter.widget-state+json`` script: 90 to 270 kB per
  widget chapter that nothing reads, since the static book draws its widgets with its own script
  (``fedtheory.widgets``) and loads no ipywidgets manager (``nb_ipywidgets_js: {}``).  The entry is
  dropped when the page is read, so the pages are the same whether nbval or the build executed them.
"""
from __future__ import annotations

import datetime as _dt
import os
import re
from pathlib import Path

from docutils import nodes

#: an alt text that names a file or a function rather than what the image shows
PATHLIKE_ALT = re.compile(r"^\S*/\S*$|\.(png|jpe?g|svg|gif|webp)$|^data:|^\w+([._]\w+)+(\(\))?$")


def package_version(root: Path) -> str:
    """The version in ``root/pyproject.toml`` (``[project] version``)."""
    import tomllib

    with open(root / "pyproject.toml", "rb") as f:
        return str(tomllib.load(f)["project"]["version"])


def build_date() -> str:
    """Today's UTC date (``YYYY-MM-DD``), or ``SOURCE_DATE_EPOCH``'s when set."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    when = _dt.datetime.fromtimestamp(int(epoch), _dt.timezone.utc) if epoch else _dt.datetime.now(_dt.timezone.utc)
    return when.strftime("%Y-%m-%d")


def _config_inited(app, config) -> None:
    root = Path(app.confdir)
    while not (root / "pyproject.toml").exists() and root.parent != root:
        root = root.parent
    version = package_version(root)
    config.version = config.release = version
    options = dict(config.html_theme_options or {})
    footer = options.get("extra_footer")
    if footer and ("{version}" in footer or "{date}" in footer):
        options["extra_footer"] = footer.replace("{version}", version).replace("{date}", build_date())
        config.html_theme_options = options


_SYMBOLS = {
    "alpha": "α", "beta": "β", "gamma": "γ", "Gamma": "Γ", "delta": "δ", "Delta": "Δ", "epsilon": "ε",
    "varepsilon": "ε", "zeta": "ζ", "eta": "η", "theta": "θ", "kappa": "κ", "lambda": "λ", "Lambda": "Λ", "mu": "μ",
    "nu": "ν", "xi": "ξ", "pi": "π", "rho": "ρ", "sigma": "σ", "Sigma": "Σ", "tau": "τ", "phi": "φ", "varphi": "φ",
    "chi": "χ", "psi": "ψ", "omega": "ω", "Omega": "Ω", "sum": "Σ", "infty": "∞", "le": "≤", "leq": "≤", "ge": "≥",
    "geq": "≥", "ne": "≠", "approx": "≈", "cdot": "·", "times": "×", "pm": "±", "in": "∈", "to": "→", "mid": "|",
    "ldots": "…", "cdots": "…", "sqrt": "√", "star": "*", "ast": "*", "top": "ᵀ", ",": " ", ";": " ", "!": "",
    "quad": " ", "qquad": " ", "{": "\x01", "}": "\x02", "%": "%"}
_DROP = {"mathcal", "mathrm", "mathbf", "mathbb", "boldsymbol", "operatorname", "text", "textrm", "mathit", "left",
         "right", "big", "Big", "bigg", "Bigg", "displaystyle", "hat", "bar", "tilde", "widehat", "overline"}
_SUPER = {"2": "²", "3": "³", "*": "*", "-1": "⁻¹", "T": "ᵀ", "\\top": "ᵀ", "\\ast": "*", "\\star": "*"}


def tex_to_plain(tex: str) -> str:
    """TeX source as plain symbols for alt text (``\\lambda^*`` -> ``λ*``): the common commands only, the same
    rules as the search snippets' (``book/_static/fedbook_search.js``)."""
    s = re.sub(r"\\[dt]?frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}", r"(\1)/(\2)", tex.strip())
    s = re.sub(r"\^\{([^{}]*)\}|\^(\\?[A-Za-z0-9*]|-1)",
               lambda m: _SUPER.get((m.group(1) or m.group(2)).strip(), "^" + (m.group(1) or m.group(2)).strip()), s)
    s = re.sub(r"\\([A-Za-z]+|[,;!{}%])",
               lambda m: "" if m.group(1) in _DROP else _SYMBOLS.get(m.group(1), m.group(1)), s)
    s = re.sub(r"\(([^()\s]{1,3})\)/\(([^()\s]{1,3})\)", r"\1/\2", s.replace("{", "").replace("}", ""))
    return " ".join(s.replace("\x01", "{").replace("\x02", "}").split())


def _plain(node: nodes.Node) -> str:
    if isinstance(node, nodes.math):
        return tex_to_plain(node.astext())
    if isinstance(node, nodes.Text):
        return node.astext()
    return "".join(_plain(c) for c in node.children)


#: a sentence's end: ., ! or ? before a space and a capital letter, not after an abbreviation (Props. 6.5, Fig. 3)
_SENTENCE_END = re.compile(r"(?<!\bProps)(?<!\bProp)(?<!\bFigs)(?<!\bFig)(?<!\bEqs)(?<!\bEq)(?<!\bThm)(?<!\bCor)"
                           r"(?<!\bApp)(?<!\bSec)(?<!\be\.g)(?<!\bi\.e)(?<!\bcf)(?<!\bvs)[.!?](?=\s+[A-Z“\"(])")
#: alt text is the caption's first sentences, up to about this many characters
ALT_CHARS = 250


def caption_text(figure: nodes.Element, limit: int = ALT_CHARS) -> str:
    """``figure``'s caption as plain text (math as symbols; no legend, no "Figure 3" number): its first
    sentences, ending at a sentence end within ``limit`` characters where one is (else cut at a word)."""
    for cap in figure.findall(nodes.caption):
        text = " ".join(_plain(cap).split())
        if len(text) <= limit:
            return text
        ends = [m.end() for m in _SENTENCE_END.finditer(text[:limit + 1])]
        if ends and ends[-1] > 40:
            return text[:ends[-1]]
        return text[:limit].rsplit(" ", 1)[0] + "…"
    return ""


def _meaningful(alt: str | None) -> bool:
    return bool(alt and alt.strip()) and not PATHLIKE_ALT.search(alt.strip())


def alt_for(image: nodes.image) -> str:
    """The alt text of an image without one: its figure's caption, or its cell's glued figure caption,
    or a description by position ("Output figure of a code cell")."""
    for parent in _ancestors(image):
        if isinstance(parent, nodes.figure):
            text = caption_text(parent)
            if text:
                return text
    return "Figure drawn by the code cell above; the text around it describes it"


def _ancestors(node: nodes.Node):
    node = node.parent
    while node is not None:
        yield node
        node = node.parent


def _set_alt_text(app, doctree, docname) -> None:
    for image in doctree.findall(nodes.image):
        if not _meaningful(image.get("alt")):
            image["alt"] = alt_for(image)


#: MyST-NB's key for a page's saved ipywidgets state among the page's JavaScript entries
#: (``myst_nb.core.render``: ``render_nb_finalise``)
IPYWIDGETS_STATE_KEY = "ipywidgets_state"


def _drop_ipywidgets_state(app, doctree) -> None:
    # after the parse: MyST-NB has moved the notebook's JavaScript entries into the environment
    js_files = getattr(app.env, "nb_metadata", {}).get(app.env.docname, {}).get("js_files")
    if js_files:
        js_files.pop(IPYWIDGETS_STATE_KEY, None)


def _drop_duplicate_scripts(app, pagename, templatename, context, doctree) -> None:
    scripts = context.get("script_files")
    if not scripts:
        return
    seen, unique = set(), []
    for js in scripts:
        # a body-only script is registered with filename None by one extension and "" by another
        key = (getattr(js, "filename", None) or "", tuple(sorted((getattr(js, "attributes", None) or {}).items())))
        if key not in seen:
            seen.add(key)
            unique.append(js)
    scripts[:] = unique


def _page_fixes(app, pagename, templatename, context, doctree) -> None:
    _drop_duplicate_scripts(app, pagename, templatename, context, doctree)
    if not context.get("default_mode"):
        context["default_mode"] = "light"


def setup(app):
    app.connect("config-inited", _config_inited)
    app.connect("doctree-resolved", _set_alt_text)
    app.connect("doctree-read", _drop_ipywidgets_state)
    # html-page-context is emitted "first result": run before the theme handlers, return None
    app.connect("html-page-context", _page_fixes, priority=100)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
