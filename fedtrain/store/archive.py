"""A working store's rows, byte for byte, in one committed file, and back: how a background grid survives a new machine.

A working store (:class:`~fedtrain.results.ResultsStore`) lives outside the repository (``~/.cache/fedbook-runs``
for the real-image grids), and the committed form (:func:`~fedtrain.results.pack_rows`) drops fields a resumed
grid needs to serve its rows.  :func:`archive_rows` writes every row file of a working store, unchanged, as one
line of a gzip'd JSON-lines file (sorted by key, no time stamp: the same rows give the same bytes);
:func:`restore_rows` writes back the rows a store lacks, each checked against the key it is filed under
(:func:`~fedtrain.store.keys.check_row_key`), against its digest (:mod:`fedtrain.store.integrity`) and its privacy
claim recomputed (:mod:`fedtrain.store.claims`), and written atomically, so a grid started on a fresh checkout
resumes where the archive left it instead of recomputing hours of runs.  A row key written twice in one archive is
refused, one line naming the archive.
"""
from __future__ import annotations

import gzip
import io
import json
import os
from pathlib import Path

from fedtheory.atomic_io import write_bytes_atomic, write_text_atomic
from fedtrain.store.claims import ClaimChecker
from fedtrain.store.integrity import check_digest
from fedtrain.store.keys import ROW_KEY_PATTERN, ResultsStoreError, check_row_key

__all__ = ["archive_rows", "restore_rows"]


def archive_rows(store: str | os.PathLike, path: str | os.PathLike) -> int:
    """Write every row file of the working store folder ``store`` into the gzip'd JSON-lines file ``path``
    (atomically; one row a line, as stored, sorted by key) and return the number of rows.

    A row file that is not one line of JSON filed under its key raises :class:`ResultsStoreError` naming it."""
    folder = Path(store)
    if not folder.is_dir():
        raise ResultsStoreError(f"no working store at {folder} (nothing to archive)")
    lines = []
    checker = ClaimChecker()
    for f in sorted(folder.glob("*.json")):
        if not ROW_KEY_PATTERN.fullmatch(f.stem):
            continue
        text = f.read_text(encoding="utf-8")
        if "\n" in text.strip():
            raise ResultsStoreError(f"results store row {f} spans several lines; it is not a row written by the store")
        row = json.loads(text)
        check_row_key(row, f.stem, str(f))
        check_digest(row, str(f))
        checker.check(row, str(f))
        lines.append(text.strip())
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0) as gz:
        gz.write(("\n".join(lines) + ("\n" if lines else "")).encode("utf-8"))
    write_bytes_atomic(Path(path), buf.getvalue())
    return len(lines)


def restore_rows(path: str | os.PathLike, store: str | os.PathLike) -> int:
    """Write the rows of the archive ``path`` (:func:`archive_rows`) that the working store folder ``store`` lacks,
    each checked against its key and written atomically; return how many were written.  Rows the store has are
    left as they are.  A missing or damaged archive raises :class:`ResultsStoreError` naming the file."""
    source = Path(path)
    try:
        text = gzip.decompress(source.read_bytes()).decode("utf-8")
    except FileNotFoundError:
        raise ResultsStoreError(f"no row archive at {source} (written by archive_rows)") from None
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise ResultsStoreError(f"row archive {source} is damaged ({type(exc).__name__}); rewrite it from the "
                                "working store with archive_rows") from None
    folder = Path(store)
    written = 0
    checker = ClaimChecker()
    seen: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        try:
            row = json.loads(line)
            key = row["key"]
        except (ValueError, KeyError, TypeError):
            raise ResultsStoreError(f"row archive {source}, line {number}: not a stored row") from None
        if not isinstance(key, str) or not ROW_KEY_PATTERN.fullmatch(key):
            raise ResultsStoreError(f"row archive {source}, line {number}: {key!r} is not a row key")
        if key in seen:
            raise ResultsStoreError(f"row archive {source}, line {number}: row key {key} is written twice (also line "
                                    f"{seen[key]}); rewrite the archive from the working store with archive_rows")
        seen[key] = number
        where = f"{source}, line {number}"
        check_row_key(row, key, where)
        check_digest(row, where)
        checker.check(row, where)
        target = folder / f"{key}.json"
        if target.exists():
            continue
        folder.mkdir(parents=True, exist_ok=True)
        write_text_atomic(target, line)
        written += 1
    return written
