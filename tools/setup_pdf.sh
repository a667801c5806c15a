#!/usr/bin/env bash
# Set-up of `make pdf` (the book as one PDF through Jupyter Book's LaTeX builder and xelatex): installs
# Debian's TeX Live packages when something it needs is missing, as root through apt-get (as
# tools/setup_env.sh does for chromium).  The smallest set that builds the book:
#   texlive-xetex              xelatex (the book's prose has Unicode: λ, ε, δ, ≤) and fontspec
#   texlive-latex-recommended  Sphinx's LaTeX packages (fancyvrb, tabulary, needspace, ...)
#   texlive-latex-extra        the rest of them (fncychap, titlesec, framed, capt-of, sphinx-jupyterbook-latex's)
#   texlive-fonts-recommended  the Times/Helvetica/Courier metrics Sphinx's LaTeX asks for
#   fonts-freefont-otf         FreeSerif/FreeSans/FreeMono, Sphinx's xelatex fonts (Greek and math symbols)
#   latexmk                    the LaTeX Makefile's driver (reruns for references)
#   xindy                      the index, Sphinx's default with xelatex
#   librsvg2-bin               rsvg-convert: the SVG figures as PDF (tools/fedbook_pdf.py)
# Without root it prints the apt-get command and exits 1.  Idempotent: nothing is done when all are present.
set -euo pipefail
PACKAGES="texlive-xetex texlive-latex-recommended texlive-latex-extra texlive-fonts-recommended fonts-freefont-otf latexmk xindy librsvg2-bin"

missing=0
for cmd in xelatex latexmk xindy kpsewhich rsvg-convert; do
    command -v "$cmd" >/dev/null || missing=1
done
if [ "$missing" = 0 ]; then
    for sty in fontspec.sty fncychap.sty titlesec.sty tabulary.sty framed.sty capt-of.sty needspace.sty \
               wrapfig.sty float.sty; do
        kpsewhich "$sty" >/dev/null || { missing=1; break; }
    done
fi
if [ "$missing" = 0 ] && command -v fc-list >/dev/null && ! fc-list : family 2>/dev/null | grep FreeSerif >/dev/null; then
    missing=1
fi
[ "$missing" = 0 ] && exit 0

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "setup-pdf: installing TeX Live for the PDF (apt-get): $PACKAGES"
    export DEBIAN_FRONTEND=noninteractive
    apt-get -o DPkg::Lock::Timeout=600 update -q >/dev/null
    # shellcheck disable=SC2086
    apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends $PACKAGES >/dev/null
else
    echo "setup-pdf: the PDF needs TeX Live; as root run:" >&2
    echo "    apt-get install -y --no-install-recommends $PACKAGES" >&2
    exit 1
fi
