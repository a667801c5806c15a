#!/usr/bin/env bash
# Vendor the book's offline JavaScript from the npm registry into _vendor/ (nothing downloads at
# book-build or reading time):
#   - MathJax 3 (typesets the math without any CDN);
#   - uPlot (a ~50 kB plotting library, MIT) that draws the live widgets, whose formulas are
#     JavaScript generated from the sympy derivations (fedtheory.jsgen, fedtheory.widgets_live).
# (Not named _static: Jupyter Book 1 injects every .js under a root _static/ into every page.)
set -euo pipefail
cd "$(dirname "$0")/.."
DEST=_vendor
MATHJAX=3.2.2
UPLOT=1.6.32
if [ -f "$DEST/mathjax/tex-mml-chtml.js" ] && [ -f "$DEST/uplot/uPlot.iife.min.js" ] \
   && grep -qs "uplot@$UPLOT" "$DEST/VERSIONS" && [ ! -d "$DEST/widgets" ]; then
    exit 0
fi
command -v npm >/dev/null || { echo "vendor_js: npm is needed to fetch MathJax and uPlot (apt-get install npm)" >&2; exit 1; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
(cd "$TMP" && npm pack --silent "mathjax@$MATHJAX" >/dev/null && npm pack --silent "uplot@$UPLOT" >/dev/null)
mkdir -p "$TMP/mj" "$TMP/up"
tar xzf "$TMP/mathjax-$MATHJAX.tgz" -C "$TMP/mj"
tar xzf "$TMP/uplot-$UPLOT.tgz" -C "$TMP/up"
rm -rf "$DEST.tmp" && mkdir -p "$DEST.tmp/mathjax/output/chtml/fonts" "$DEST.tmp/uplot"
cp "$TMP"/mj/package/es5/tex-mml-chtml.js "$DEST.tmp/mathjax/"
cp -r "$TMP"/mj/package/es5/output/chtml/fonts/woff-v2 "$DEST.tmp/mathjax/output/chtml/fonts/"
cp "$TMP"/up/package/dist/uPlot.iife.min.js "$TMP"/up/package/dist/uPlot.min.css "$TMP"/up/package/LICENSE "$DEST.tmp/uplot/"
printf 'mathjax@%s\nuplot@%s\n' "$MATHJAX" "$UPLOT" > "$DEST.tmp/VERSIONS"
rm -rf "$DEST" && mv "$DEST.tmp" "$DEST"
echo "vendor_js: wrote $DEST/ (MathJax $MATHJAX, uPlot $UPLOT)"
