#!/usr/bin/env bash
# Create .venv (if needed) and install fedbook with its book and test extras, vendor the offline
# JavaScript for the book, install Debian's chromium + chromedriver for the browser test and Debian's
# dataset-fashion-mnist (real 28x28 images, offline) for the image experiments.
# Idempotent: a stamp file keyed on pyproject.toml skips pip when nothing changed.  Used by `make venv` (and so by `make test` and `make book`).
#
# torch: on a machine without a GPU we install the CPU build, torch==2.13.0 (a local wheel here),
# in the *same* pip command as opacus; an unpinned torch next to opacus pulls the newest torch with
# GBs of CUDA packages.  If the venv already has a torch (e.g. a CUDA build that a GPU user
# installed), or the base Python has a CUDA torch, it is kept: we never name torch to pip then.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
VENV=.venv

if [ ! -x "$VENV/bin/python" ]; then
    if "$PY" -c 'import torch, sys; sys.exit(0 if torch.version.cuda else 1)' 2>/dev/null; then
        echo "setup: base Python has a CUDA torch; creating $VENV with --system-site-packages to keep it"
        "$PY" -m venv --system-site-packages "$VENV"
    else
        "$PY" -m venv "$VENV"
    fi
fi

STAMP="$VENV/.fedbook-installed-$(cat pyproject.toml | sha256sum | cut -c1-16)"
if [ ! -f "$STAMP" ]; then
    TORCH_SPEC="torch==2.13.0"
    if "$VENV/bin/python" -c 'import torch' 2>/dev/null; then
        TORCH_SPEC=""
        echo "setup: keeping the installed torch $("$VENV/bin/python" -c 'import torch; print(torch.__version__)')"
    fi
    "$VENV/bin/python" -m pip install --disable-pip-version-check -q $TORCH_SPEC -e ".[book,test]"
    rm -f "$VENV"/.fedbook-installed-*
    touch "$STAMP"
fi

bash tools/vendor_js.sh

# The browser test (tests/book/test_browser_book.py) opens the built book in Debian's headless chromium
# through Debian's chromedriver (matching versions; nothing is downloaded when the test runs).
if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        echo "setup: installing chromium and chromium-driver (apt-get)"
        export DEBIAN_FRONTEND=noninteractive
        apt-get -o DPkg::Lock::Timeout=600 update -q >/dev/null
        apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends chromium chromium-driver >/dev/null
    else
        echo "setup: the browser test needs chromium and chromedriver; as root run:" >&2
        echo "    apt-get install -y --no-install-recommends chromium chromium-driver" >&2
        exit 1
    fi
fi

# Real 28x28 images offline: Debian's dataset-fashion-mnist (the four Fashion-MNIST IDX .gz files in
# /usr/share/datasets/fashion-mnist/, 31 MB), read by fedtrain.data.fashion (rotated-masked-fashion,
# hetero-fashion, noniid-fashion).  Missing data is not fatal: the loaders then say where they looked and
# how to install it, and the tests that need the files say why they skip.
FASHION_DIR=/usr/share/datasets/fashion-mnist
if [ ! -f "$FASHION_DIR/train-images-idx3-ubyte.gz" ] || [ ! -f "$FASHION_DIR/t10k-labels-idx1-ubyte.gz" ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        echo "setup: installing dataset-fashion-mnist (apt-get)"
        export DEBIAN_FRONTEND=noninteractive
        apt-get -o DPkg::Lock::Timeout=600 update -q >/dev/null || true
        apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends dataset-fashion-mnist >/dev/null \
            || echo "setup: could not install dataset-fashion-mnist; the Fashion-MNIST datasets need its files" >&2
    else
        echo "setup: the Fashion-MNIST datasets read $FASHION_DIR; as root run:" >&2
        echo "    apt-get install -y --no-install-recommends dataset-fashion-mnist" >&2
    fi
fi
