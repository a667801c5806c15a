"""The real School dataset (Inner London Education Authority exam scores), as in the paper.

139 silos (schools), 15,362 students, 28 features, exam scores in [1, 70]; linear least squares
(Table A1 and Appendix C.1 of Liu et al., NeurIPS 2022).  Protocol: per-silo random train/test split
(80/20 in Fig. 3, also 50/50 and 20/80 in Fig. A8), per-silo standardization with the training
statistics, scores min-max scaled with the *fixed* bounds (1, 70): ``y <- (y - 1) / 69``.
Many features (school-level ones and the all-ones column) are constant inside a school; they are
centred to 0 (see :func:`fedtrain.data.split.standardize`).
"""
from __future__ import annotations

import os

from fedtrain.data.base import FederatedData
from fedtrain.data.mat_silos import load_mat_silos

__all__ = ["SCHOOL_SHA256", "SCHOOL_HOW_TO_GET", "SCHOOL_SCORE_BOUNDS", "load_school"]

SCHOOL_SHA256 = "57fb3238fdd03a9aa17276e2ce18d9bbb5d128c3261e794fe6233b58b6909068"
SCHOOL_SCORE_BOUNDS = (1.0, 70.0)
SCHOOL_HOW_TO_GET = (
    "school.mat (44,759 bytes) is bundled in the public MIT-licensed repository "
    "kenziyuliu/private-cross-silo-fl at data/school/school.mat (the copy used by Liu et al., NeurIPS 2022; "
    "ILEA data redistributed by MALSAR). Download it from there into your data folder."
)


def load_school(
    path: str | os.PathLike | None = None,
    *,
    data_dir: str | os.PathLike | None = None,
    test_fraction: float = 0.2,
    seed: int = 0,
    verify: bool = True,
) -> FederatedData:
    """Load ``school.mat`` with the paper's per-silo protocol.

    Parameters
    ----------
    path
        a ``school.mat`` file (or a folder holding it); ``None`` searches
        :func:`fedtrain.data.files.default_data_dirs` (``data_dir``, ``$FEDBOOK_DATA_DIR``, ``../shared/data``).
    test_fraction
        per-silo test share, in (0, 1); the paper uses 0.2 (and 0.5, 0.8 in Fig. A8).
    seed
        split seed (silo ``k`` is split with ``default_rng([seed, k])``).
    verify
        check the SHA-256 against :data:`SCHOOL_SHA256` (a mismatch raises ``DatasetCorruptError``).
    """
    lo, hi = SCHOOL_SCORE_BOUNDS
    return load_mat_silos(
        "school.mat", name="school", task="regression", how_to_get=SCHOOL_HOW_TO_GET, test_fraction=test_fraction,
        seed=seed, path=path, data_dir=data_dir, sha256=SCHOOL_SHA256 if verify else None,
        targets=lambda y, file, k: (y - lo) / (hi - lo),
        info={"target_scaling": "(y - 1) / 69",
              "source": "ILEA exam scores via kenziyuliu/private-cross-silo-fl data/school/school.mat"},
    )
