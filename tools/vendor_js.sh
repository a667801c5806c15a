#!/usr/bin/env bash
# Vendor MathJax 3 and the ipywidgets HTML manager from the npm registry into _vendor/ so the
# built book typesets math and draws widgets from their saved state without any CDN.
# (Not named _static: Jupyter Book 1 injects every .js under a root _static/ into every page.)
set -euo pipefail
cd "$(dirname "$0")/.."
DEST=_vendor
if [ -f "$DEST/widgets/embed.js" ] && [ -f "$DEST/mathjax/tex-mml-chtml.js" ]; then
    exit 0
fi
command -v npm >/dev/null || { echo "vendor_js: npm is needed to fetch MathJax and the widget manager (apt-get install npm)" >&2; exit 1; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
(cd "$TMP" && npm pack --silent @jupyter-widgets/html-manager@1.0.6 mathjax@3.2.2 >/dev/null)
mkdir -p "$TMP/hm" "$TMP/mj"
tar xzf "$TMP"/jupyter-widgets-html-manager-1.0.6.tgz -C "$TMP/hm"
tar xzf "$TMP"/mathjax-3.2.2.tgz -C "$TMP/mj"
rm -rf "$DEST.tmp" && mkdir -p "$DEST.tmp/widgets" "$DEST.tmp/mathjax/output/chtml/fonts"
cp "$TMP"/hm/package/dist/*.js "$DEST.tmp/widgets/"
for ext in eot svg ttf woff woff2; do cp "$TMP"/hm/package/dist/*.$ext "$DEST.tmp/widgets/" 2>/dev/null || true; done
cp "$TMP"/mj/package/es5/tex-mml-chtml.js "$DEST.tmp/mathjax/"
cp -r "$TMP"/mj/package/es5/output/chtml/fonts/woff-v2 "$DEST.tmp/mathjax/output/chtml/fonts/"
rm -rf "$DEST" && mv "$DEST.tmp" "$DEST"
echo "vendor_js: wrote $DEST/ (MathJax 3.2.2, @jupyter-widgets/html-manager 1.0.6)"
