"""The results stores, one module per job; :mod:`fedtrain.results` is their front (the public names, re-exported).

* :mod:`fedtrain.store.layout`: where the stores live and the names of their files;
* :mod:`fedtrain.store.keys`: the key a row is filed under, and the check that a row hashes to it;
* :mod:`fedtrain.store.integrity`: a row's digest, checked on read;
* :mod:`fedtrain.store.claims`: a row's privacy claim, recomputed on read from its noise, steps and sampling rates;
* :mod:`fedtrain.store.provenance`: the commit and command a row records;
* :mod:`fedtrain.store.working`: the working store of sweeps (:class:`~fedtrain.results.ResultsStore`,
  one JSON file per run, written atomically, resumable);
* :mod:`fedtrain.store.committed`: the compact committed form (:func:`~fedtrain.results.pack_rows`) and
  the read-only store the book reads (:class:`~fedtrain.results.CommittedStore`);
* :mod:`fedtrain.store.archive`: a working store's rows, byte for byte, in one committed file, and back.

Orchestrating the book's grids into these stores is the experiments layer's job (:mod:`fedtrain.book_results`).
"""
