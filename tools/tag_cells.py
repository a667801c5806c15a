#!/usr/bin/env python3
"""Tag the book's code cells so that the HTML shows prose, figures and tables, not plumbing.

Idempotent: the script owns exactly three cell tags (``hide-input``, ``remove-input``, ``remove-cell``),
recomputes them from each cell's source, and leaves every other tag and all metadata alone.  Run it
after editing or merging notebooks::

    python tools/tag_cells.py            # rewrite the tags of book/*.ipynb
    python tools/tag_cells.py --check    # exit 1 if any notebook's tags are not what the rules give

Nothing is deleted from a notebook: nbval and the book build still execute every cell and every
``assert``; Jupyter Book only hides (collapsed toggle) or removes the input on the page.

Rules, first match wins (``OVERRIDES`` below comes before all of them):

1. ``remove-cell``: bookkeeping that prints nothing a reader needs (timing of the chapter, ``perf_counter``,
   in a cell without imports or asserts), and cells whose statements are all checks (``assert``s, or
   loops / ``if``s holding only ``assert``s): the checks run, the page omits them.
2. ``remove-input``: cells that only build a widget (``figure_widget(...)``, ``interact(...)``, plus
   imports), and cells made of calls to a display helper (``show(...)``, ``display(...)``,
   ``plt.show()``) with at most ``MAX_ASSIGNMENTS`` assignments and any ``assert``s: their output
   (typeset math, a check table, a figure) is the content.
3. ``hide-input``: every other code cell (imports, figure calls, loops that print numbers, mixed code
   with ``assert``s): the input is collapsed behind a "show code" toggle, the output stays.

``OVERRIDES`` maps ``(notebook, cell id)`` to the tag to use instead (``None`` = show the input),
for teaching code: cells whose few lines show how a reader calls the library.

Per notebook: in :data:`REVEALABLE` notebooks rule 2 gives ``hide-input`` instead of ``remove-input``, so that
the code behind every figure and table can be revealed on the page (the goal for the whole book; notebooks
join the set as they are revised).  In :data:`SHOWN` notebooks (worked pipelines whose code is the lesson)
rule 3 shows the input.  A cell tagged ``hide-cell`` (an exercise's solution: input and output collapsed
together) gets none of the three tags.
"""
from __future__ import annotations

import argparse
import ast
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BOOK = ROOT / "book"
MANAGED = ("hide-input", "remove-input", "remove-cell")

#: (notebook file name, cell id) -> tag to use instead of the rules; ``None`` shows the input.
#: Teaching code: a few lines that show how to call the library, kept visible on the page.
#: Their checks live in the next cell, which the rules remove from the page.
OVERRIDES: dict[tuple[str, str], str | None] = {
    # FedHDP: Algorithm 1's client update, printed vs corrected, in four lines of library calls
    ("fedhdp_theory.ipynb", "fae95068"): None,
    # FedHDP: MR-MTL's λ* and FedHDP's λ*_np are the same function (two library calls on one grid)
    ("fedhdp_theory.ipynb", "82dda822"): None,
    # privacy primer: calibrate the noise for a target ε with each accountant, then account for it again
    ("privacy_primer.ipynb", "7962bc3b"): None,
}

#: notebooks whose display cells are ``hide-input`` (revealable) instead of ``remove-input``
REVEALABLE = {"empirical_local_vs_fedavg.ipynb", "empirical_privacy_utility.ipynb", "theory_meets_training.ipynb",
              "privacy_audit.ipynb", "practitioner_pipeline.ipynb", "pets_case_study.ipynb",
              "lambda_advisor.ipynb", "fedhdp_practice.ipynb", "deep_models.ipynb", "privacy_primer.ipynb",
              "mean_estimation.ipynb", "secagg.ipynb", "tuning_cost.ipynb", "fedhdp_theory.ipynb",
              "fedhdp_verification.ipynb"}
#: notebooks whose code cells show their input (rule 3 gives no tag): the code is what the chapter teaches
SHOWN = {"practitioner_pipeline.ipynb"}

WIDGET_CALLS = {"figure_widget", "interact", "interactive"}
DISPLAY_CALLS = {"show", "display"}
BOOKKEEPING = ("perf_counter",)
#: a display cell with more assignments than this computes something worth a "show code" toggle
MAX_ASSIGNMENTS = 3


def _statements(source: str) -> list[ast.stmt] | None:
    # IPython magics / shell escapes are not Python: treat such cells by the default rule
    lines = [ln for ln in source.splitlines() if not ln.lstrip().startswith(("%", "!"))]
    try:
        return ast.parse("\n".join(lines)).body
    except SyntaxError:
        return None


def _call_name(stmt: ast.stmt) -> str | None:
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        f = stmt.value.func
        return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
    return None


def _is_check(stmt: ast.stmt) -> bool:
    """An ``assert``, or a loop / ``if`` whose body holds only checks."""
    if isinstance(stmt, ast.Assert):
        return True
    if isinstance(stmt, (ast.For, ast.If)):
        return all(_is_check(s) for s in stmt.body + stmt.orelse)
    return False


def rule_tag(source: str) -> str | None:
    """The tag the rules give a code cell with this source (see the module docstring)."""
    body = _statements(source)
    if not source.strip() or body is None:
        return "hide-input" if source.strip() else None
    imports = any(isinstance(s, (ast.Import, ast.ImportFrom)) for s in body)
    if any(word in source for word in BOOKKEEPING) and not imports \
            and not any(isinstance(s, ast.Assert) for s in body):
        return "remove-cell"
    if body and all(_is_check(s) for s in body):
        return "remove-cell"
    names = [_call_name(s) for s in body]
    if any(n in WIDGET_CALLS for n in names) and \
            all(n in WIDGET_CALLS or isinstance(s, (ast.Import, ast.ImportFrom)) for s, n in zip(body, names)):
        return "remove-input"
    if any(n in DISPLAY_CALLS for n in names) and not imports and \
            sum(isinstance(s, ast.Assign) for s in body) <= MAX_ASSIGNMENTS and \
            all(n in DISPLAY_CALLS or isinstance(s, (ast.Assign, ast.Assert)) for s, n in zip(body, names)):
        return "remove-input"
    return "hide-input"


def tag_notebook(path: Path) -> tuple[dict, int]:
    """Return the notebook with recomputed tags and the number of cells whose tags changed."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    changed = 0
    for cell in nb["cells"]:
        if cell["cell_type"] != "code":
            continue
        source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        key = (path.name, cell.get("id"))
        want = OVERRIDES[key] if key in OVERRIDES else rule_tag(source)
        if want == "remove-input" and path.name in REVEALABLE:
            want = "hide-input"
        if want == "hide-input" and path.name in SHOWN and key not in OVERRIDES:
            want = None
        meta = cell.setdefault("metadata", {})
        old = list(meta.get("tags", []))
        if "hide-cell" in old:
            want = None
        new = [t for t in old if t not in MANAGED] + ([want] if want else [])
        if new != old:
            changed += 1
            if new:
                meta["tags"] = new
            else:
                meta.pop("tags", None)
    return nb, changed


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path, help="default: book/*.ipynb")
    parser.add_argument("--check", action="store_true", help="report, do not write; exit 1 if tags differ")
    args = parser.parse_args(argv)
    paths = args.notebooks or sorted(BOOK.glob("*.ipynb"))
    unknown = {nb for nb, _ in OVERRIDES} - {p.name for p in sorted(BOOK.glob("*.ipynb"))}
    if unknown:
        print(f"note: OVERRIDES name notebooks that do not exist: {sorted(unknown)}", file=sys.stderr)
    stale = 0
    for path in paths:
        nb, changed = tag_notebook(path)
        ids = {c.get("id") for c in nb["cells"]}
        for (name, cid) in OVERRIDES:
            if name == path.name and cid not in ids:
                print(f"note: override for {name} cell {cid} matches no cell", file=sys.stderr)
        if changed:
            stale += 1
            shown = path.resolve().relative_to(ROOT) if path.resolve().is_relative_to(ROOT) else path
            print(f"{shown}: {changed} cell(s) "
                  f"{'would change' if args.check else 'retagged'}")
            if not args.check:
                # the layout nbformat writes (indent 1, sorted keys), so that diffs stay minimal
                path.write_text(json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n",
                                encoding="utf-8")
    return 1 if (args.check and stale) else 0


if __name__ == "__main__":
    sys.exit(main())
