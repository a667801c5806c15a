# fedbook: `make test` and `make book` do all set-up on a fresh machine (see README.md).
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
# Two-core machines: one torch/BLAS thread per process (2 threads under contention made small
# kernels 3-10x slower, see ../shared/notes/toolchain.md).
export OMP_NUM_THREADS ?= 1
export MKL_NUM_THREADS ?= 1
export OPENBLAS_NUM_THREADS ?= 1
export PYDEVD_DISABLE_FILE_VALIDATION := 1
FULL ?= 0
export FEDBOOK_FULL := $(FULL)

.PHONY: venv test unit doctest nbval book clean

venv:
	@bash tools/setup_env.sh

## all tests: unit tests and nbval over every notebook of the book
test: venv
	$(PY) -m pytest -q tests
	$(PY) -m pytest -q --doctest-modules fedtheory fedtrain
	$(PY) -m pytest -q --nbval-lax --nbval-current-env --nbval-sanitize-with nbval_sanitize.cfg book

unit: venv
	$(PY) -m pytest -q tests

## the examples in the docstrings (the API pages show them), run as doctests
doctest: venv
	$(PY) -m pytest -q --doctest-modules fedtheory fedtrain

nbval: venv
	$(PY) -m pytest -q --nbval-lax --nbval-current-env --nbval-sanitize-with nbval_sanitize.cfg book

## the HTML book in _build/html (every notebook executed; warnings are errors)
book: venv
	$(VENV)/bin/jupyter-book build . -W -n --keep-going

clean:
	rm -rf _build
