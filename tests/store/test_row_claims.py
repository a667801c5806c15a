"""Every row a store serves proves its privacy claim: its ε is recomputed from its own noise, steps and sampling
rates with its own accountant and must meet its budget, and its digest covers its privacy block and its metrics.

Each case edits a stored row the way a hand (or a bug) would, and the store must refuse it in one line naming the
file: in a working store, in the committed form (the file's SHA-256 in the manifest updated too) and in a row
archive.  Where the digest is recomputed after the edit (as a careful forger would), the recomputed ε must catch
it.  Both kinds of rows: record-level (:class:`~fedtrain.engine.RunResult`) and client-level (FedHDP).
"""
from __future__ import annotations

import gzip
import hashlib
import json
import shutil

import numpy as np
import pytest

from fedtrain.config import RunConfig
from fedtrain.clientdp.config import FedHDPConfig
from fedtrain.clientdp.trainer import train
from fedtrain.results import MANIFEST, CommittedStore, ResultsStore, ResultsStoreError, StaleStoreError, pack_rows
from fedtrain.store.archive import archive_rows, restore_rows
from fedtrain.store.claims import ClaimChecker
from fedtrain.store.integrity import seal
from fedtrain.store.layout import FORMAT
from fedtrain.sweep import run_sweep

BASE = dict(dataset="gaussian", dataset_options={"num_silos": 4, "n": 40, "seed": 0}, method="mrmtl", rounds=3,
            batch_size=10, clip=3.0, lr=0.05, lam=1.0, eval_every=1)


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    """A working store of 3 record-level rows (one IFCA, with selections) and one client-level row."""
    root = tmp_path_factory.mktemp("claims") / "work"
    configs = [RunConfig(**BASE, eps=1.0), RunConfig(**BASE, eps=4.0),
               RunConfig(**{**BASE, "method": "ifca", "options": {"num_clusters": 2}}, eps=2.0)]
    run_sweep(configs, store=root, progress=False)
    client = train(FedHDPConfig(dataset="noniid-digits", dataset_options=dict(num_clients=40, samples_per_client=6,
                                test_per_client=4, nonprivate_fraction=0.1), method="fedhdp", ratio=0.2, rounds=2,
                                sample_rate=0.5, batch_size=3, hidden=8))
    ResultsStore(root).put(client)
    return root


def _copy(work, tmp_path):
    shutil.copytree(work, tmp_path / "w")
    return tmp_path / "w"


def _file(store_root, method):
    for f in sorted(store_root.glob("*.json")):
        if json.loads(f.read_text())["config"]["method"] == method:
            return f
    raise AssertionError(method)


def _edit(path, change, reseal):
    row = json.loads(path.read_text())
    change(row)
    if reseal:
        row.pop("digest")
        seal(row)
    path.write_text(json.dumps(row, allow_nan=True))


def _scale_z(row):
    row["noise_multipliers"] = [z * 0.01 for z in row["noise_multipliers"]]


def _lower_spent(row):
    row["eps_spent"] = [e * 0.5 for e in row["eps_spent"]]


def _lower_q(row):
    row["ledger"]["sample_rates"] = [q * 0.5 for q in row["ledger"]["sample_rates"]]


def _fewer_steps(row):
    row["steps"] = [s - 1 for s in row["steps"]]


def _raise_eps_config(row):  # a budget edited to match a spend above the old one
    row["config"]["delta"] = 0.5


def _metric(row):
    row["test_metric"] = row["test_metric"] * 0.5


def _fewer_steps_everywhere(row):  # steps and ledger both cut: the config's plan catches it
    row["steps"] = [x - 1 for x in row["steps"]]
    row["ledger"]["dpsgd_steps"] = [x - 1 for x in row["ledger"]["dpsgd_steps"]]


RECORD_CASES = {
    "steps and ledger cut": (_fewer_steps_everywhere, "silo 0 ran .* DP-SGD steps but .* plans"),
    "z x 0.01": (_scale_z, "silo 0 claims eps=.* but its noise .* gives eps="),
    "eps_spent halved": (_lower_spent, "silo 0 claims eps=.* but its noise .* gives eps="),
    "sample rates halved": (_lower_q, "sample rates"),
    "steps edited, ledger not": (_fewer_steps, "its ledger.s DP-SGD steps differ"),
}


@pytest.mark.parametrize("case", sorted(RECORD_CASES))
@pytest.mark.parametrize("method", ["mrmtl", "ifca"])
def test_an_edited_record_row_is_refused_by_its_recomputed_eps(work, tmp_path, case, method):
    root = _copy(work, tmp_path)
    change, why = RECORD_CASES[case]
    path = _file(root, method)
    _edit(path, change, reseal=True)
    with pytest.raises(ResultsStoreError, match=f"{path.name}: {why}") as err:
        ResultsStore(root).get(path.stem)
    assert "\n" not in str(err.value)
    shutil.copy(work / path.name, path)  # the same edit without the digest recomputed: the digest catches it
    _edit(path, change, reseal=False)
    with pytest.raises(ResultsStoreError, match=f"{path.name} does not match its digest"):
        ResultsStore(root).get(path.stem)


def test_an_edited_metric_or_a_missing_digest_is_refused(work, tmp_path):
    root = _copy(work, tmp_path)
    path = _file(root, "mrmtl")
    _edit(path, _metric, reseal=False)
    with pytest.raises(ResultsStoreError, match=f"{path.name} does not match its digest"):
        ResultsStore(root).get(path.stem)
    _edit(path, lambda r: r.pop("digest"), reseal=False)
    with pytest.raises(ResultsStoreError, match=f"{path.name} has no digest"):
        ResultsStore(root).get(path.stem)


def test_a_sweep_serves_no_row_whose_noise_was_cut(work, tmp_path):
    """The issue's case: a row edited to z x 0.01 (its digest recomputed) made `fedtrain sweep` report min z 0.05
    beside eps_spent 1.0; now the sweep that would serve it stops with the row's file named."""
    root = _copy(work, tmp_path)
    path = _file(root, "mrmtl")
    row = json.loads(path.read_text())
    _edit(path, _scale_z, reseal=True)
    with pytest.raises(ResultsStoreError, match=f"{path.name}: silo 0 claims eps="):
        run_sweep([RunConfig.from_dict(row["config"])], store=root, progress=False)


def test_fewer_ifca_selections_are_refused(work, tmp_path):
    root = _copy(work, tmp_path)
    path = _file(root, "ifca")

    def fewer(row):
        row["ledger"]["selections"] = [0 for _ in row["ledger"]["selections"]]
        row["extras"]["selections"] = 0

    _edit(path, fewer, reseal=True)
    with pytest.raises(ResultsStoreError, match=f"{path.name}: its ledger holds 0 selections, ifca plans"):
        ResultsStore(root).get(path.stem)


def test_a_delta_other_than_the_budget_is_refused(work, tmp_path):
    root = _copy(work, tmp_path)
    path = _file(root, "mrmtl")
    _edit(path, lambda r: r.__setitem__("delta", [d * 10 for d in r["delta"]]), reseal=True)
    # the gaussian dataset has no paper delta and the config none: delta is checked by the recomputed eps
    with pytest.raises(ResultsStoreError, match=path.name):
        ResultsStore(root).get(path.stem)


CLIENT_CASES = {
    "group eps halved": (lambda r: r["privacy"]["groups"]["private"].__setitem__(
        "epsilon", r["privacy"]["groups"]["private"]["epsilon"] * 0.5), "claims eps=.* but its noise"),
    "effective z x 0.01": (lambda r: r["privacy"].__setitem__(
        "effective_noise_multiplier", r["privacy"]["effective_noise_multiplier"] * 0.01), "effective noise multiplier"),
    "more rounds than run": (lambda r: r["privacy"]["groups"]["private"].__setitem__("rounds_released", 99),
                             "released 99 sums"),
    "sample rate halved": (lambda r: r["privacy"].__setitem__("sample_rate", 0.25), "sample rate"),
    "non-private group claims a guarantee": (lambda r: r["privacy"]["groups"]["nonprivate"].__setitem__(
        "epsilon", 1.0), "non-private group"),
}


@pytest.mark.parametrize("case", sorted(CLIENT_CASES))
def test_an_edited_client_level_row_is_refused(work, tmp_path, case):
    root = _copy(work, tmp_path)
    path = _file(root, "fedhdp")
    assert ResultsStore(root).get(path.stem) is not None
    change, why = CLIENT_CASES[case]
    _edit(path, change, reseal=True)
    with pytest.raises(ResultsStoreError, match=f"{path.name}: .*{why}"):
        ResultsStore(root).get(path.stem)


def test_the_untouched_rows_are_served_and_each_distinct_eps_is_evaluated_once(work):
    store = ResultsStore(work)
    assert len(list(store.rows())) == 3 and len(list(store.rows(kind="client"))) == 1
    first = store.claims.evaluations
    assert first > 0
    assert len(list(store.rows())) == 3 and store.claims.evaluations == first  # served again: nothing recomputed


# -- the committed form ----------------------------------------------------------------------------------------
def _committed(work, tmp_path, change=None):
    store = ResultsStore(work)
    rows = [json.loads((work / f"{k}.json").read_text()) for k in store.keys()]
    rows = [r for r in rows if r["config"]["method"] != "fedhdp"]
    doc = pack_rows(rows, name="g", dataset="gaussian", scale="test", figures=[])
    if change is not None:
        change(doc)
    out = tmp_path / "committed"
    out.mkdir()
    raw = gzip.compress(json.dumps(doc).encode()) if not isinstance(doc, bytes) else doc
    (out / "g.json.gz").write_bytes(raw)
    n = len(doc["rows"]) if isinstance(doc, dict) else 3
    manifest = {"format": FORMAT, "engine_version": rows[0]["engine_version"],
                "files": {"g.json.gz": {"name": "g", "rows": n, "engine_version": rows[0]["engine_version"],
                                        "sha256": hashlib.sha256(raw).hexdigest()}}}
    (out / MANIFEST).write_text(json.dumps(manifest))
    return out


def test_the_committed_form_keeps_the_ledger_and_serves_checked_rows(work, tmp_path):
    store = CommittedStore(_committed(work, tmp_path))
    for key in store.keys():
        row = store.row_dict(key)
        assert set(row["ledger"]) == {"sample_rates", "dpsgd_steps", "selections"}
        assert store.get(key).ledger == row["ledger"]
    assert store.claims.evaluations > 0


def _forge_privacy(doc, change):
    """Edit every privacy block, refile it under its new digest and reseal the rows (a careful forger)."""
    from fedtrain.store.committed import _digest

    new = {}
    for old, block in doc["privacy"].items():
        change(block)
        new[old] = _digest(block)
    doc["privacy"] = {new[k]: v for k, v in doc["privacy"].items()}
    for r in doc["rows"]:
        r["privacy"] = new[r["privacy"]]
        r.pop("digest")
        seal(r)


@pytest.mark.parametrize("case", ["z x 0.01", "eps_spent halved", "sample rates halved"])
def test_a_forged_committed_privacy_block_is_refused_by_its_recomputed_eps(work, tmp_path, case):
    change = {"z x 0.01": _scale_z, "eps_spent halved": _lower_spent, "sample rates halved": _lower_q}[case]
    store = CommittedStore(_committed(work, tmp_path, lambda d: _forge_privacy(d, change)))
    with pytest.raises(ResultsStoreError, match=r"of .*g\.json\.gz: (silo|sample)"):
        for key in store.keys():
            store.row_dict(key)


def _z_block_only(doc):
    for block in doc["privacy"].values():
        _scale_z(block)


def _metric_only(doc):
    doc["rows"][0]["test_metric"] = 0.5


def _duplicate(doc):
    doc["rows"].append(dict(doc["rows"][0]))
    doc["rows_count"] += 1


def _count(doc):
    doc["rows_count"] += 1


COMMITTED_CASES = {
    "privacy block edited": (_z_block_only, StaleStoreError, r"g\.json\.gz: its privacy block .* does not match"),
    "row key written twice": (_duplicate, StaleStoreError, r"g\.json\.gz: row key .* is written twice"),
    "header row count": (_count, StaleStoreError, r"g\.json\.gz holds 3 rows, its header says 4"),
}


@pytest.mark.parametrize("case", sorted(COMMITTED_CASES))
def test_a_damaged_committed_file_is_one_line_naming_it(work, tmp_path, case):
    change, exc, why = COMMITTED_CASES[case]
    with pytest.raises(exc, match=why) as err:
        CommittedStore(_committed(work, tmp_path, change))
    assert "\n" not in str(err.value)


def test_an_edited_committed_metric_is_refused_by_the_digest(work, tmp_path):
    store = CommittedStore(_committed(work, tmp_path, _metric_only))
    with pytest.raises(ResultsStoreError, match=r"of .*g\.json\.gz does not match its digest"):
        for key in store.keys():
            store.row_dict(key)


def test_manifest_errors_are_one_line_naming_the_file(work, tmp_path):
    root = _committed(work, tmp_path)
    m = json.loads((root / MANIFEST).read_text())
    bad = dict(m, files={"g.json.gz": dict(m["files"]["g.json.gz"], rows=7)})
    (root / MANIFEST).write_text(json.dumps(bad))
    with pytest.raises(StaleStoreError, match=r"g\.json\.gz holds 3 rows, its header says 3 and .*MANIFEST.json says 7"):
        CommittedStore(root)
    (root / MANIFEST).write_text(json.dumps(dict(m, files=[])))
    with pytest.raises(StaleStoreError, match=r"MANIFEST\.json lists no files"):
        CommittedStore(root)
    raw = b"not gzip at all"
    (root / "g.json.gz").write_bytes(raw)
    m["files"]["g.json.gz"]["sha256"] = hashlib.sha256(raw).hexdigest()
    (root / MANIFEST).write_text(json.dumps(m))
    with pytest.raises(StaleStoreError, match=r"g\.json\.gz is not gzip'd JSON \(BadGzipFile\)") as err:
        CommittedStore(root)
    assert "\n" not in str(err.value)


# -- row archives ------------------------------------------------------------------------------------------------
def _archive(work, tmp_path):
    path = tmp_path / "a.jsonl.gz"
    archive_rows(work, path)
    return path, gzip.decompress(path.read_bytes()).decode().splitlines()


def _write(path, lines):
    path.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))


def test_restore_refuses_an_edited_metric_a_forged_claim_and_a_key_written_twice(work, tmp_path):
    path, lines = _archive(work, tmp_path)
    assert restore_rows(path, tmp_path / "ok") == 4
    row = json.loads(lines[0])
    edited = dict(row, test_metric=0.5) if "test_metric" in row else dict(row, wall_time=1e9)
    _write(path, [json.dumps(edited)] + lines[1:])
    with pytest.raises(ResultsStoreError, match=r"a\.jsonl\.gz, line 1 does not match its digest"):
        restore_rows(path, tmp_path / "b1")
    record = next(i for i, line in enumerate(lines) if "noise_multipliers" in json.loads(line))
    forged = json.loads(lines[record])
    _scale_z(forged)
    forged.pop("digest")
    seal(forged)
    _write(path, lines[:record] + [json.dumps(forged)] + lines[record + 1:])
    with pytest.raises(ResultsStoreError, match=rf"a\.jsonl\.gz, line {record + 1}: silo 0 claims eps="):
        restore_rows(path, tmp_path / "b2")
    _write(path, lines + [lines[0]])
    with pytest.raises(ResultsStoreError, match=rf"line {len(lines) + 1}: row key .* is written twice \(also line 1\)"):
        restore_rows(path, tmp_path / "b3")


def test_the_committed_store_and_its_archives_prove_their_claims():
    """The repository's committed store: a sample of every file's rows served, their claims recomputed (each
    distinct eps once; every row's claim on the full store is what the book build reads) and the row archives'
    rows checked line by line."""
    from fedtrain.store.layout import DEFAULT_RESULTS_DIR

    store = CommittedStore()
    for name, doc in store.docs.items():
        for packed in doc["rows"][:: max(1, len(doc["rows"]) // 40)]:
            store.row_dict(packed["key"])
    checker = ClaimChecker()
    for path in sorted((DEFAULT_RESULTS_DIR / "raw").glob("*.jsonl.gz")):
        for number, line in enumerate(gzip.decompress(path.read_bytes()).decode().splitlines(), start=1):
            checker.check(json.loads(line), f"{path}, line {number}")
    assert checker.evaluations > 0 and store.claims.evaluations > 0
