#!/usr/bin/env bash
# Vendor MathJax 3 from the npm registry into _vendor/ so the built book typesets math without any CDN.
# (Not named _static: Jupyter Book 1 injects every .js under a root _static/ into every page.)
# The book's widgets need no widget manager: their static version (fedtheory.widgets) is plain HTML
# with a few lines of inline JavaScript, so the ipywidgets HTML manager is no longer vendored.
set -euo pipefail
cd "$(dirname "$0")/.."
DEST=_vendor
if [ -f "$DEST/mathjax/tex-mml-chtml.js" ] && [ ! -d "$DEST/widgets" ]; then
    exit 0
fi
command -v npm >/dev/null || { echo "vendor_js: npm is needed to fetch MathJax (apt-get install npm)" >&2; exit 1; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
(cd "$TMP" && npm pack --silent mathjax@3.2.2 >/dev/null)
mkdir -p "$TMP/mj"
tar xzf "$TMP"/mathjax-3.2.2.tgz -C "$TMP/mj"
rm -rf "$DEST.tmp" && mkdir -p "$DEST.tmp/mathjax/output/chtml/fonts"
cp "$TMP"/mj/package/es5/tex-mml-chtml.js "$DEST.tmp/mathjax/"
cp -r "$TMP"/mj/package/es5/output/chtml/fonts/woff-v2 "$DEST.tmp/mathjax/output/chtml/fonts/"
rm -rf "$DEST" && mv "$DEST.tmp" "$DEST"
echo "vendor_js: wrote $DEST/ (MathJax 3.2.2)"
