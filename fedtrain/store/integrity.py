"""A row's digest: the SHA-256 of everything a row holds (its privacy block and its metrics included), checked on read.

:func:`row_digest` hashes a row's canonical JSON (keys sorted, no spaces, non-finite floats as ``NaN``/``Infinity``)
without its ``digest`` field, so it does not depend on how the file was written; :func:`seal` adds it and
:func:`check_digest` raises :class:`~fedtrain.store.keys.ResultsStoreError`, one line naming the file, when a row
has none or another.  The working store seals every row it writes, the committed form every packed row (whose
privacy block and data summary are referenced by their own digests, checked too), and row archives carry the
working rows as they are.  A digest is no signature (anyone may recompute it): it catches a row edited by hand or
damaged; the privacy claim itself is recomputed from the row (:mod:`fedtrain.store.claims`).
"""
from __future__ import annotations

import hashlib
import json

from fedtrain.store.keys import ResultsStoreError

__all__ = ["row_digest", "seal", "check_digest", "DIGEST_FIELD"]

#: The field of a row that holds its digest.
DIGEST_FIELD = "digest"
#: The canonical JSON of a row (one encoder for every row: building one per row costs as much as a small row).
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), allow_nan=True, ensure_ascii=True,
                              check_circular=False)


def row_digest(row: dict) -> str:
    """SHA-256 (hex) of ``row`` less its :data:`DIGEST_FIELD`, as canonical JSON (module docstring)."""
    body = {k: v for k, v in row.items() if k != DIGEST_FIELD}
    return hashlib.sha256(_CANONICAL.encode(body).encode("utf-8")).hexdigest()


def seal(row: dict) -> dict:
    """``row`` with its :data:`DIGEST_FIELD` set to :func:`row_digest` (the same dict, changed in place)."""
    row[DIGEST_FIELD] = row_digest(row)
    return row


def check_digest(row: dict, where: str) -> None:
    """Raise :class:`ResultsStoreError` naming ``where`` unless ``row`` holds its own :func:`row_digest`."""
    stored = row.get(DIGEST_FIELD)
    if stored is None:
        raise ResultsStoreError(f"results store row {where} has no digest (written before rows were sealed, or "
                                "edited); delete it to recompute the run")
    if stored != row_digest(row):
        raise ResultsStoreError(f"results store row {where} does not match its digest (edited or damaged: its "
                                "privacy block or metrics changed); delete it to recompute the run")
