"""The notation lint: the chapters' prose and figure labels use the symbols that the notation page's tables own.

The page (``book/notation.md``) gives each quantity one symbol; a row whose meaning holds a **bold** phrase
("communication **rounds**", "**clip norm**", ...) owns that phrase: wherever a chapter names the quantity next to
a symbol ("$R$ rounds", "rounds $R$", "clip norm $C$"), the symbol must be the row's.  Checked: every chapter's
Markdown (notebooks' Markdown cells and MyST pages) and the string literals of the notebooks' code cells and of the
libraries (figure titles, axis labels and legends drawn by library code, and the docstrings the API pages render).  The table is read from the page, so a new bold phrase is linted at once."""
from __future__ import annotations

import ast
import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BOOK = ROOT / "book"
GLOBAL_SECTIONS = ("## Silos, data and training", "## Privacy")


def owned_symbols(text: str) -> set[str]:
    """Base letters of every symbol of the page's global tables, and the other case of the letters that own a bold
    phrase (``c`` for the clip norm's ``C``): the symbols whose misuse the lint looks for (a chapter's own counters,
    ``m`` or ``j``, are its own)."""
    out: set[str] = set()
    for head in GLOBAL_SECTIONS:
        section = text.split(head, 1)[1].split("\n## ", 1)[0]
        for line in section.splitlines():
            cols = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cols) >= 2 and cols[0].startswith("$"):
                for s in re.findall(r"\$([^$]+)\$", cols[0]):
                    b = _base(s)
                    out |= {b, b.swapcase()} if len(b) == 1 and "**" in cols[1] else {b}
    return out


def owned_phrases(text: str) -> dict[str, set[str]]:
    """``{phrase: {base symbols}}`` from the page's global tables: the bold phrases of a row's meaning, owned by the
    base letters (``T_k`` → ``T``, ``\\alpha`` → ``\\alpha``) of the row's symbols."""
    out: dict[str, set[str]] = {}
    for head in GLOBAL_SECTIONS:
        section = text.split(head, 1)[1].split("\n## ", 1)[0]
        for line in section.splitlines():
            cols = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cols) < 2 or not cols[0].startswith("$"):
                continue
            bases = {_base(s) for s in re.findall(r"\$([^$]+)\$", cols[0])}
            for phrase in re.findall(r"\*\*([^*]+)\*\*", cols[1]):
                out.setdefault(phrase.lower(), set()).update(bases)
    return out


def _base(symbol: str) -> str:
    """The letter a symbol is built on: ``T_k`` → ``T``, ``R=100`` → ``R``, ``\\alpha`` → ``\\alpha``."""
    s = symbol.strip()
    m = re.match(r"\\(?:hat|bar|tilde)\{?\\?([A-Za-z]+)", s) or re.match(r"(\\[A-Za-z]+|[A-Za-z])", s)
    return m.group(1) if m else s


def _texts() -> list[tuple[str, str]]:
    """(where, text) of every chapter's prose and every notebook code string."""
    out = []
    for path in sorted(BOOK.glob("*.ipynb")):
        for i, cell in enumerate(json.loads(path.read_text(encoding="utf-8"))["cells"]):
            src = "".join(cell["source"])
            if cell["cell_type"] == "markdown":
                out.append((f"{path.name} cell {i}", src))
            elif cell["cell_type"] == "code":
                try:
                    tree = ast.parse(re.sub(r"^[%!].*$", "", src, flags=re.M))
                except SyntaxError:
                    continue
                for node in ast.walk(tree):
                    if isinstance(node, ast.Constant) and isinstance(node.value, str) and not node.value.startswith("#"):
                        out.append((f"{path.name} cell {i} (code string)", node.value))
    for path in sorted((ROOT / "fedtheory").rglob("*.py")) + sorted((ROOT / "fedtrain").rglob("*.py")):
        if path.is_file():  # figure titles, axis labels, legends, and the docstrings the API pages render
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Constant) and isinstance(node.value, str):
                    out.append((f"{path.relative_to(ROOT)} line {node.lineno}", node.value))
    for path in sorted(BOOK.glob("*.md")):
        if path.name not in ("notation.md", "bibliography.md") and not path.name.startswith("api_"):
            out.append((path.name, path.read_text(encoding="utf-8")))
    return out


def violations(phrases: dict[str, set[str]], texts, symbols: set[str]) -> list[str]:
    """Every "$X$ <phrase>" / "<phrase> $X$" (also without dollars in code strings: "T rounds") whose X is not
    built on a symbol the phrase's row owns.  Longer phrases win ("local steps" is not "steps")."""
    found = []
    names = sorted(phrases, key=len, reverse=True)
    for where, text in texts:
        flat = re.sub(r"\s+", " ", text)
        for phrase in names:
            others = [p for p in names if p != phrase and phrase in p]  # "steps" inside "local steps"
            word = re.escape(phrase)
            sym = r"(?:\$([^$]{1,20})\$|\b([A-Za-z])\b(?![\w(]))"
            for pat in (sym + r" (?:DP-SGD |communication |total )?" + word + r"\b",
                        r"\b" + word + r" " + sym):
                for m in re.finditer(pat, flat, flags=re.I):
                    start = max(0, m.start() - 20)
                    context = flat[start:m.end() + 20]
                    if any(o in context.lower() and o in flat[m.start() - 10:m.end() + 10].lower() for o in others):
                        continue
                    symbol = m.group(1) or m.group(2)
                    if m.group(2) and m.group(2).lower() in ("a", "i", "s") and m.group(2).islower():
                        continue  # English words, not symbols
                    if re.search(r"[0-9.]", symbol.split("=")[0]) and not re.match(r"[A-Za-z\\]", symbol.strip()):
                        continue  # a number ("$200$ rounds")
                    head = symbol.split("=")[0].strip()
                    if re.search(r"\\cdot|[+*/ -]", head) or _base(head) not in symbols:
                        continue  # an expression, or a symbol the page does not own
                    if any(_base(head) in phrases[o] for o in others):
                        continue
                    if _base(symbol) not in phrases[phrase]:
                        found.append(f"{where}: {m.group(0)!r} (the notation page gives {phrase!r} the symbol(s) "
                                     f"{sorted(phrases[phrase])})")
    return found


def test_notation_page_owns_the_key_phrases():
    phrases = owned_phrases((BOOK / "notation.md").read_text(encoding="utf-8"))
    assert phrases["rounds"] == {"R"} and phrases["clip norm"] == {"C"} and phrases["steps"] == {"T"}, phrases


def test_lint_catches_a_planted_violation():
    phrases = owned_phrases((BOOK / "notation.md").read_text(encoding="utf-8"))
    planted = [("planted", "We train for $T$ rounds with clip norm $c=1$; plt.title('T rounds')"),
               ("clean", "We train for $R=100$ rounds, $T_k$ DP-SGD steps, $S$ local steps, clip norm $C$.")]
    bad = violations(phrases, planted, owned_symbols((BOOK / "notation.md").read_text(encoding="utf-8")))
    assert len(bad) == 3 and all(b.startswith("planted") for b in bad), bad


def test_chapters_use_the_notation_pages_symbols():
    phrases = owned_phrases((BOOK / "notation.md").read_text(encoding="utf-8"))
    bad = violations(phrases, _texts(), owned_symbols((BOOK / "notation.md").read_text(encoding="utf-8")))
    assert not bad, "\n".join(bad)


def test_cite_page_quotes_the_bibliography():
    """The "How to cite" page's BibTeX for the four papers is the bibliography's, character for character."""
    cite = (BOOK / "cite.md").read_text(encoding="utf-8")
    bib = (BOOK / "references.bib").read_text(encoding="utf-8")
    for key in ("liu2022privacy", "aldaghri2021fedhdp", "heikkila2025secagg", "liu2023pets"):
        entry = re.search(r"@\w+\{" + key + r",.*?\n\}\n", bib, flags=re.S).group(0)
        assert entry in cite, key


EXERCISE_CHAPTERS = ("mean_estimation", "fedhdp_theory", "tuning_cost", "secagg", "privacy_primer", "practitioner_pipeline")
DERIVATION_CHAPTERS = EXERCISE_CHAPTERS[:5]


def test_collapsed_solutions_say_solution_and_theory_chapters_have_a_derivation_exercise():
    """Every collapsed solution of these chapters shows the label "Solution" (myst-nb's cell-level
    ``code_prompt_show``), and each theory chapter has a derivation exercise whose worked steps sit in a
    dropdown titled "Solution"."""
    for name in EXERCISE_CHAPTERS:
        cells = json.loads((BOOK / f"{name}.ipynb").read_text(encoding="utf-8"))["cells"]
        sols = [c for c in cells if c["cell_type"] == "code" and "".join(c["source"]).startswith("# Solution")]
        assert sols, name
        for c in sols:
            assert "hide-cell" in c["metadata"].get("tags", []), name
            assert c["metadata"].get("mystnb", {}).get("code_prompt_show") == "Solution", (name, "".join(c["source"])[:40])
        if name in DERIVATION_CHAPTERS:
            md = ["".join(c["source"]) for c in cells if c["cell_type"] == "markdown"]
            assert any("**Exercise" in s and "derive" in s.lower() and ":::{dropdown} Solution" in s for s in md), name


def test_notation_page_defines_r_as_the_library_and_the_chapter_use_it():
    """r weights a private (group-2) update relative to an opted-out (group-1) one: the library's r* is below 1 when
    group 2 is the noisy group, as the chapter's r* = 0.14, and the page says so (it once had the ratio inverted)."""
    from fedtheory.linear_regression.numeric import optimal_ratio

    row = next(line for line in (BOOK / "notation.md").read_text(encoding="utf-8").splitlines()
               if line.startswith("| $r$, $r^\\star$"))
    assert "private client's update relative to an opted-out" in row, row
    r_star = optimal_ratio(2, 18, 1.0, 0.5, 0.0, 0.5)  # 2 opted out (no noise), 18 private (kappa^2 = 0.5)
    assert 0.14 <= r_star < 0.145
