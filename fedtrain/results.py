"""Results stores: the working store of sweeps (one JSON file per run) and the committed store the book reads.

This module is the front of :mod:`fedtrain.store`, which holds one module per job; the public names are
re-exported here:

* row keys (:mod:`fedtrain.store.keys`): a row is filed under ``<config key>-<data key>`` (:func:`row_key`): the
  configuration's key (:meth:`RunConfig.key <fedtrain.config.RunConfig.key>`, which holds the engine version) and a
  digest of the identity of the data it was trained on (:func:`fedtrain.data.base.data_identity`), so a row trained
  on one copy of a dataset is never served for another (``--data-dir B`` never returns rows of folder A).  Reading
  a row checks that its stored config and data identity hash to the key it is filed under
  (:func:`check_row_key`); a mismatch raises :class:`ResultsStoreError` naming the file;
* provenance (:mod:`fedtrain.store.provenance`): :func:`provenance`, :func:`git_commit`;
* the working store (:mod:`fedtrain.store.working`): :class:`ResultsStore`, one row per run, written atomically
  (:mod:`fedtheory.atomic_io`), resumable; it holds both kinds of runs, the record-level runs of the cross-silo
  engine and the client-level runs of FedHDP and its baselines;
* the committed store (:mod:`fedtrain.store.committed`): :func:`pack_rows` and the read-only
  :class:`CommittedStore` that the empirical chapters read (through :func:`fedtrain.book_results.committed_store`);
  opening it checks the engine version and the files' SHA-256 and fails with :class:`StaleStoreError`, naming the
  command that regenerates it (:data:`REGENERATE_COMMAND`), when the engine has changed since;
* where the stores live (:mod:`fedtrain.store.layout`): :data:`DEFAULT_RESULTS_DIR`, :data:`WORK_DIR`,
  :data:`DEFAULT_WORK_STORE`.

Computing and packing the book's grids into these stores is the experiments layer's job
(:mod:`fedtrain.book_results`).
"""
from __future__ import annotations

from fedtrain.encoding import encode
from fedtrain.store.committed import DROPPED_FIELDS, CommittedStore, StaleStoreError, pack_rows, unpack_row
from fedtrain.store.keys import ResultsStoreError, check_row_key, result_row_key, row_key
from fedtrain.store.layout import (DEFAULT_RESULTS_DIR, DEFAULT_WORK_STORE, FORMAT, MANIFEST, REGENERATE_COMMAND,
                                   STORE_ENV, WORK_DIR, shown_path)
from fedtrain.store.provenance import git_commit, provenance
from fedtrain.store.working import STALE_TEMP_SECONDS, ResultsStore

__all__ = ["ResultsStore", "DEFAULT_RESULTS_DIR", "WORK_DIR", "DEFAULT_WORK_STORE", "jsonable", "git_commit",
           "provenance", "pack_rows", "unpack_row", "CommittedStore", "StaleStoreError", "ResultsStoreError",
           "REGENERATE_COMMAND", "STORE_ENV", "DROPPED_FIELDS", "row_key", "result_row_key", "check_row_key",
           "STALE_TEMP_SECONDS", "FORMAT", "MANIFEST", "shown_path"]

#: The one JSON encoder (:func:`fedtrain.encoding.encode`), also under this name.
jsonable = encode
