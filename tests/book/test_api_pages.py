"""Every public module of fedtheory and fedtrain has a section on one of the book's API pages."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _public_modules() -> set[str]:
    mods = set()
    for pkg in ("fedtheory", "fedtrain"):
        for path in (ROOT / pkg).rglob("*.py"):
            rel = path.relative_to(ROOT).with_suffix("")
            if any(part.startswith("_") for part in rel.parts if part != "__init__"):
                continue
            parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
            if rel.name == "__main__":
                continue
            mods.add(".".join(parts))
    return mods


def test_every_public_module_is_documented():
    documented = set()
    for page in (ROOT / "book").glob("api_*.md"):
        documented |= set(re.findall(r"^\.\. automodule:: ([\w.]+)\s*$", page.read_text(), flags=re.M))
    missing = sorted(_public_modules() - documented)
    assert not missing, f"modules without an API section (add an automodule block to a book/api_*.md page): {missing}"
