"""A small Sphinx extension (``_config.yml``: ``sphinx.local_extensions``) fixing two console errors
that every page of the Jupyter Book 1 build raised in the browser (found by ``tools/browser_check.py``):

* ``Identifier 'THEBE_JS_URL' has already been declared``: sphinx-thebe's configuration script
  (``const THEBE_JS_URL = ...``) is registered twice in this stack, and a second ``const`` of the same
  name is a SyntaxError.  Identical scripts are dropped from each page's list, keeping the first.
* ``Got invalid theme mode: . Resetting to auto.`` (pydata-sphinx-theme, on a reader's first visit):
  the theme reads its mode from the page context's ``default_mode``, which Jupyter Book leaves empty;
  it is set to ``light`` (the figures have white backgrounds); the reader can still switch.
"""
from __future__ import annotations


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
    # html-page-context is emitted "first result": run before the theme handlers, return None
    app.connect("html-page-context", _page_fixes, priority=100)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
