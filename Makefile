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

.PHONY: venv test unit slow doctest nbval book browser lab clean results

venv:
	@bash tools/setup_env.sh

## all tests: unit tests, nbval over every notebook, then the book build, the browser test and the book lint
## (tools/book_lint.py: captions, TeX in tables, overflow at 1,280 px, paths and raw floats) on it.
## Each notebook is executed once: nbval runs it (static widget frames included) and stores the executed
## notebook in the book's jupyter-cache (tools/nbval_cache.py); the build (execute_notebooks: cache)
## renders those outputs and executes only a notebook whose code changed since.  The unit tests and nbval
## run on both cores (pytest-xdist; the unit tests by module, --dist loadscope; nbval by notebook, --dist loadfile).
## Two chains run side by side (make -j2), so that neither core idles while the other works alone (the
## book build and the browser test are mostly one process): test-unit, and test-book (doctests, nbval, the
## build, the browser test and the lint).  Each chain's output is printed when that chain ends.
NB_CACHE := _build/.jupyter_cache
test: venv
	@start=$$(date +%s); $(MAKE) --no-print-directory -j2 --output-sync=target test-unit test-book \
	  && echo "make test: $$(( $$(date +%s) - start )) s"

## the two chains of `make test` (no set-up of their own: `make venv` first).  The unit tests go to the two xdist
## workers a module at a time (--dist loadscope): a module-scoped fixture (the symbolic checks, a Ray session, the
## Flower federations' module, a Chromium session) is then set up once, not in both workers.  (--dist loadgroup and
## its xdist_group marks do nothing with pytest 9: xdist 3.8 renames item._nodeid, which pytest 9 no longer reads.)
.PHONY: test-unit test-book
test-unit:
	@start=$$(date +%s); $(PY) -m pytest -q -n 2 --dist loadscope tests && echo "unit tests: $$(( $$(date +%s) - start )) s"

test-book:
	$(PY) -m pytest -q --doctest-modules fedtheory fedtrain
	rm -rf $(NB_CACHE)
	@start=$$(date +%s); FEDBOOK_NB_CACHE=$(NB_CACHE) $(PY) -m pytest -q -n 2 --dist loadfile -p tools.nbval_cache \
	  --nbval-lax --nbval-current-env --nbval-sanitize-with nbval_sanitize.cfg book \
	  && echo "nbval: $$(( $$(date +%s) - start )) s"
	@start=$$(date +%s); $(VENV)/bin/jupyter-book build . -W -n --keep-going && echo "book build: $$(( $$(date +%s) - start )) s"
	@start=$$(date +%s); FEDBOOK_BROWSER_BOOK=_build/html $(PY) -m pytest -q tests/book/test_browser_book.py \
	  tests/book/test_book_lint.py && echo "browser test and book lint: $$(( $$(date +%s) - start )) s"

## the browser test and the book lint alone, on the book already in _build/html
browser: venv
	FEDBOOK_BROWSER_BOOK=_build/html $(PY) -m pytest -q tests/book/test_browser_book.py tests/book/test_book_lint.py

unit: venv
	$(PY) -m pytest -q tests

## the long checks `make test` leaves out, alone (FEDBOOK_SLOW=1; each has a faster equivalent in `make test`, see
## the `slow` marker in tests/conftest.py): retraining committed real-image rows, the 320k-trial audit at ε = 2 and 4
slow: venv
	FEDBOOK_SLOW=1 $(PY) -m pytest -q -n 2 --dist loadscope -m slow tests

## the examples in the docstrings (the API pages show them), run as doctests
doctest: venv
	$(PY) -m pytest -q --doctest-modules fedtheory fedtrain

## nbval alone, fast: without the widgets' static frames, nothing cached
nbval: venv
	FEDBOOK_WIDGET_FRAMES=0 $(PY) -m pytest -q --nbval-lax --nbval-current-env --nbval-sanitize-with nbval_sanitize.cfg book

## the committed results store results/ that the empirical chapters read (fedtrain.presets.RESULTS_PRESETS:
## every dataset at paper scale, about 3 h of one core; PRESET=paper-school keeps the stand-ins reduced, 1 h).  Resumable: finished runs are kept in results/work/
## and skipped; an interrupted run loses at most the chunk it was training.  Niced: it runs beside other work.
PRESET ?= paper
results: venv
	nice -n 10 $(VENV)/bin/fedtrain sweep --preset $(PRESET) --pack results

## the HTML book in _build/html (every notebook executed afresh: the execution cache is cleared; warnings are errors)
book: venv
	rm -rf $(NB_CACHE)
	$(VENV)/bin/jupyter-book build . -W -n --keep-going

## JupyterLab on the chapters with the project's kernel (.venv): the widgets redraw live.
## LAB_ARGS passes options, e.g. `make lab LAB_ARGS=--no-browser`.
lab: venv
	cd book && FEDBOOK_WIDGET_FRAMES=0 ../$(VENV)/bin/jupyter lab $$([ "$$(id -u)" = 0 ] && echo --allow-root) $(LAB_ARGS)

clean:
	rm -rf _build

## the whole book as one PDF, _build/latex/fedbook.pdf (Jupyter Book's LaTeX builder, xelatex; not part of
## `make test`).  tools/setup_pdf.sh installs Debian's TeX Live packages when missing (apt-get, as root).
## Notebooks already executed for the HTML book are reused (execute_notebooks: cache); widgets appear as the
## figure they drew (tools/fedbook_pdf.py).  An HTML build made after it links the PDF from every page.
.PHONY: pdf
pdf: venv
	@bash tools/setup_pdf.sh
	@start=$$(date +%s); $(VENV)/bin/jupyter-book build . --builder pdflatex -n --keep-going \
	  && test -f _build/latex/fedbook.pdf \
	  && echo "pdf: _build/latex/fedbook.pdf, $$(( $$(date +%s) - start )) s"
