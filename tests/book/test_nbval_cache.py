"""tools/nbval_cache.py: nbval's executions reach the book build's jupyter-cache (each notebook runs once
per `make test`), and only notebooks that ran completely and passed are cached."""
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from jupyter_cache import get_cache

ROOT = Path(__file__).resolve().parents[2]


def _notebook(path: Path, *sources: str) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_markdown_cell("# a page")] + [nbformat.v4.new_code_cell(s) for s in sources]
    nbformat.write(nb, str(path))
    return nb


def _run_nbval(nb_path: Path, cache: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, FEDBOOK_NB_CACHE=str(cache))
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "tools.nbval_cache", "--nbval-lax",
         "--nbval-current-env", "--rootdir", str(nb_path.parent), str(nb_path)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("nbcache")
    cache = tmp / "cache"
    good = _notebook(tmp / "good.ipynb", "x = 6 * 7\nprint('x is', x)", "x + 1")
    bad = _notebook(tmp / "bad.ipynb", "y = 1", "raise ValueError('boom')", "y")
    return (tmp, cache, good, bad, _run_nbval(tmp / "good.ipynb", cache),
            _run_nbval(tmp / "bad.ipynb", cache))


def test_a_passing_notebook_is_cached_with_the_outputs_nbval_saw(runs):
    tmp, cache, good, _, res_good, _ = runs
    assert res_good.returncode == 0, res_good.stdout + res_good.stderr
    store = get_cache(str(cache))
    record = store.match_cache_notebook(good)          # what the book build does in `cache` mode
    assert record.uri == str((tmp / "good.ipynb").resolve())
    _, merged = store.merge_match_into_notebook(good)
    code = [c for c in merged.cells if c.cell_type == "code"]
    assert code[0].outputs[0]["output_type"] == "stream" and code[0].outputs[0]["text"] == "x is 42\n"
    assert code[1].outputs[0]["output_type"] == "execute_result"
    assert code[1].outputs[0]["data"]["text/plain"] == "43"
    assert [c.execution_count for c in code] == [1, 2]
    assert merged.metadata["language_info"]["pygments_lexer"] == "ipython3"   # the build highlights code with it


def test_a_failing_notebook_is_not_cached(runs):
    _, cache, _, bad, _, res_bad = runs
    assert res_bad.returncode != 0
    with pytest.raises(KeyError):
        get_cache(str(cache)).match_cache_notebook(bad)


def test_a_notebook_whose_code_changed_does_not_match(runs):
    _, cache, good, _, _, _ = runs
    changed = nbformat.from_dict(good)
    changed.cells[1].source = "x = 6 * 8\nprint('x is', x)"
    with pytest.raises(KeyError):
        get_cache(str(cache)).match_cache_notebook(changed)
