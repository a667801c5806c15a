"""The book's scale switch: ``FEDBOOK_FULL=1`` (``make book FULL=1``) selects the paper-scale grids."""
from __future__ import annotations

import os

__all__ = ["FULL_ENV", "full_scale"]

#: The environment variable that selects the paper-scale grids.
FULL_ENV = "FEDBOOK_FULL"


def full_scale() -> bool:
    """Whether ``FEDBOOK_FULL=1`` is set (``make book FULL=1``).  The empirical chapters read the committed
    results store (:func:`fedtrain.book_results.committed_store`) at whatever scale it was computed; this flag only
    selects the default ``scale`` of :func:`fedtrain.presets.book_grid` and :func:`fedtrain.deep_grids.deep_grid` (``"paper"`` instead of ``"reduced"``)."""
    return os.environ.get(FULL_ENV, "0").strip() == "1"
