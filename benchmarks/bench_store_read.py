"""What checking every row costs when the committed store is read: its rows' digests and privacy claims.

Reads every row of the committed store (``results/`` or ``--store DIR``) twice in one run, in a fresh
:class:`~fedtrain.results.CommittedStore` each time: once as the library serves them (each row's key, digest and
privacy claim checked, every distinct ε recomputed once: :mod:`fedtrain.store.claims`), and once as the reference,
with the digest and claim checks switched off in this process only (the key check and the decoding stay), and
prints both times and their ratio.  Opening the store (decompressing, the file-level checks) is timed apart.

    python benchmarks/bench_store_read.py [--store DIR] [--repeat 2]
"""
from __future__ import annotations

import argparse
import time

from fedtrain.results import CommittedStore
from fedtrain.store import committed


def read_all(root, checks: bool) -> tuple[float, float, int, int]:
    saved = committed.check_digest, committed.ClaimChecker.check
    if not checks:
        committed.check_digest = lambda row, where: None
        committed.ClaimChecker.check = lambda self, row, where: None
    try:
        t0 = time.perf_counter()
        store = CommittedStore(root)
        t1 = time.perf_counter()
        for key in store.keys():
            store.get(key)
        t2 = time.perf_counter()
    finally:
        committed.check_digest, committed.ClaimChecker.check = saved
    return t1 - t0, t2 - t1, len(store), store.claims.evaluations


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--store", default=None, help="committed store folder (default: results/)")
    ap.add_argument("--repeat", type=int, default=2, help="runs of each; the least time is printed")
    args = ap.parse_args()
    best = {}
    for _ in range(args.repeat):
        for checks in (False, True):
            o, r, n, ev = read_all(args.store, checks)
            prev = best.get(checks)
            best[checks] = (min(o, prev[0]), min(r, prev[1]), n, ev) if prev else (o, r, n, ev)
    (o0, r0, n, _), (o1, r1, _, ev) = best[False], best[True]
    print(f"rows: {n}; distinct eps evaluated: {ev}")
    print(f"open: {o1:.2f} s")
    print(f"get every row, digests and claims checked: {r1:.2f} s")
    print(f"get every row, reference (those two checks off): {r0:.2f} s")
    print(f"ratio checked / reference: {r1 / r0:.2f}; the checks cost {(r1 - r0) / n * 1e6:.0f} us a row")


if __name__ == "__main__":
    main()
