"""The Flower ServerApp: the server side of Local, FedAvg and MR-MTL over Flower's Message API.

The server holds only the shared model ``w̄`` (FedAvg, MR-MTL) and what the nodes tell it: their silos, the
silos' training sizes ``n_k`` (for the weights ``a_k = n_k / Σ n``), their updates ``Δ_k`` (outputs of each silo's
DP-SGD, so post-processing of its guarantee), the ε each silo says it spent, and the final test metrics.  It never
receives a gradient, a record, a noise multiplier it could change, or a budget it could spend: each node
calibrates, accounts and refuses on its own (:mod:`fedtrain.federate.silos`).

Round ``t`` (MR-MTL paper Algorithm A1; FedAvg): send ``w̄`` to every active node, collect the updates, set
``w̄ ← w̄ + Σ_{k∈P} a_k Δ_k / Σ_{k∈P} a_k`` over the silos ``P`` that trained (``Σ_P a_k = 1``, the engine's
update, when none is missing).  Faults: a node that does not answer within ``round_timeout`` seconds (killed,
disconnected) is dropped with its silos from then on and recorded (round, silos); a node whose budget is spent
(``status = "budget-spent"``) trains no more but still reports its metrics.  All three methods continue with the
remaining silos (Local needs no other silo; FedAvg and MR-MTL average over those present); if no silo is left
the training stops and the result says after how many rounds.  A dropped silo's ε and metric are unknown to the
server (its ledger died with its node): the result shows ``nan`` for them, never a charge it did not report.

Byte counts: ``bytes_per_round`` is the array payload (``Array.data``) the server sent plus received in each
round, not Flower's message framing.

Run specification (``spec``): the run's config, ``num_nodes``, ``result_file`` (written atomically at the end,
also on failure with ``{"error": ...}``), ``progress_file`` (one JSON line per finished round), timeouts.
"""
from __future__ import annotations

import json
import math
import os
import time
from pathlib import Path
from typing import Any

import numpy as np
from flwr.app import Array, ArrayRecord, ConfigRecord, Context, Message, MessageType, RecordDict
from flwr.serverapp import Grid, ServerApp

from fedtrain.config import RunConfig
from fedtrain.encoding import encode

__all__ = ["app", "serve", "make_server_app", "write_json_atomic"]


def write_json_atomic(path: str | os.PathLike, payload: Any) -> None:
    """Write ``payload`` as JSON to ``path`` through a temporary file and a rename."""
    path = Path(path)
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(encode(payload), allow_nan=True))
    os.replace(tmp, path)


def _payload_bytes(content: RecordDict) -> int:
    return sum(len(arr.data) for rec in content.array_records.values() for arr in rec.values())


class _Federation:
    def __init__(self, grid: Grid, spec: dict):
        self.grid, self.spec = grid, spec
        self.cfg = RunConfig.from_dict(spec["config"])
        self.cfg_json = json.dumps(encode(self.cfg.to_dict()))
        self.round_timeout = float(spec.get("round_timeout", 300.0))
        self.progress = spec.get("progress_file")

    def _send(self, nodes, kind: str, t: int, wbar: np.ndarray | None, timeout: float):
        msgs, sent = [], 0
        for node in nodes:
            content = RecordDict({"run": ConfigRecord({"config": self.cfg_json, "round": int(t)})})
            if wbar is not None:
                content["server"] = ArrayRecord({"wbar": Array(np.ascontiguousarray(wbar, dtype=np.float32))})
            sent += _payload_bytes(content)
            msgs.append(Message(content, dst_node_id=node, message_type=kind, group_id=f"{kind}-{t}"))
        replies = {}
        received = 0
        for reply in self.grid.send_and_receive(msgs, timeout=timeout):
            node = reply.metadata.src_node_id
            if reply.has_error():
                continue
            received += _payload_bytes(reply.content)
            replies[node] = reply.content
        return replies, sent, received

    def _note(self, **entry) -> None:
        if self.progress:
            with open(self.progress, "a") as fh:
                fh.write(json.dumps(encode(entry)) + "\n")

    def _wait_for_nodes(self) -> list:
        """The SuperNodes' ids once ``num_nodes`` have connected (``RuntimeError`` after ``setup_timeout`` seconds)."""
        want = int(self.spec["num_nodes"])
        deadline = time.monotonic() + float(self.spec.get("setup_timeout", 120.0))
        nodes = list(self.grid.get_node_ids())
        while len(nodes) < want:
            if time.monotonic() > deadline:
                raise RuntimeError(f"only {len(nodes)} of {want} SuperNodes connected within "
                                   f"{self.spec.get('setup_timeout', 120.0):g} s")
            time.sleep(0.2)
            nodes = list(self.grid.get_node_ids())
        return nodes

    def _set_up(self, nodes: list) -> tuple[dict[int, list[int]], dict[int, int], int, np.ndarray]:
        """Ask every SuperNode for its silos: ``(silos_of, n, K, w0)``, the silos each node serves, each silo's
        training-set size, the number of silos and the shared initial model; ``RuntimeError`` unless each silo is
        served once."""
        replies, _, _ = self._send(nodes, MessageType.QUERY, -1, None, self.round_timeout)
        if len(replies) < len(nodes):
            raise RuntimeError(f"{len(nodes) - len(replies)} SuperNode(s) failed the set-up (see their logs)")
        silos_of: dict[int, list[int]] = {}
        n: dict[int, int] = {}
        K = None
        wbar = None
        for node, content in replies.items():
            info = content["silos"]
            silos_of[node] = [int(k) for k in info["silos"]]
            n.update({int(k): int(v) for k, v in zip(info["silos"], info["n"])})
            K = int(info["num-silos"])
            if wbar is None:
                wbar = content["init"]["w0"].numpy().astype(np.float32)
        covered = sorted(k for s in silos_of.values() for k in s)
        if covered != list(range(K)):
            raise RuntimeError(f"the SuperNodes serve silos {covered[:5]}... ({len(covered)}), not each of the "
                               f"{K} silos once: check their partition-id / num-partitions")
        return silos_of, n, K, wbar

    def run(self) -> dict:
        """Train ``rounds`` rounds with the SuperNodes (a node that does not answer in time is dropped, one whose
        silos are spent leaves), then have every node still there evaluate; the run's result (:meth:`_result`)."""
        t0 = time.perf_counter()
        cfg = self.cfg
        silos_of, n, K, wbar = self._set_up(self._wait_for_nodes())
        sizes = np.array([n[k] for k in range(K)], dtype=float)
        agg = sizes / sizes.sum() if cfg.aggregation == "weighted" else np.full(K, 1.0 / K)
        agg = agg.astype(np.float32)
        active = list(silos_of)
        dropped: dict[int, dict] = {}
        left: dict[int, dict] = {}
        bytes_per_round, round_seconds = [], []
        rounds_run = 0
        send_model = cfg.method in ("fedavg", "mrmtl")
        for t in range(cfg.rounds):
            if not active:
                break
            ts = time.perf_counter()
            replies, sent, received = self._send(active, MessageType.TRAIN, t, wbar if send_model else None,
                                                 self.round_timeout)
            total = np.zeros_like(wbar)
            weight = 0.0
            trained = []
            for node in list(active):
                if node not in replies:
                    dropped[node] = {"round": t, "silos": silos_of[node]}
                    active.remove(node)
                    continue
                content = replies[node]
                status = str(content["silos"]["status"])
                if status != "trained":
                    left[node] = {"round": t, "silos": silos_of[node], "reason": status}
                    active.remove(node)
                    continue
                trained += silos_of[node]
                if "update" in content:
                    delta = content["update"]["delta"].numpy()
                    a = agg[silos_of[node]]
                    total = total + np.einsum("k,kd->d", a, delta).astype(np.float32)
                    weight += float(a.sum())
            if trained and send_model:
                full = len(trained) == K
                wbar = (wbar + (total if full else total / np.float32(weight))).astype(np.float32)
            if trained:
                rounds_run = t + 1
            bytes_per_round.append(sent + received)
            round_seconds.append(time.perf_counter() - ts)
            self._note(round=t, trained_silos=len(trained), bytes=sent + received,
                       dropped=sorted(dropped), left=sorted(left))
        reporting = [node for node in silos_of if node not in dropped]
        replies, _, _ = self._send(reporting, MessageType.EVALUATE, cfg.rounds, wbar if send_model else None,
                                   self.round_timeout)
        for node in reporting:
            if node not in replies:
                dropped[node] = {"round": cfg.rounds, "silos": silos_of[node]}
        return self._result(cfg, K, silos_of, replies, dropped, left, rounds_run, bytes_per_round, round_seconds,
                            time.perf_counter() - t0)

    def _result(self, cfg, K, silos_of, replies, dropped, left, rounds_run, bytes_per_round, round_seconds, wall):
        nan = math.nan
        fields = {k: np.full(K, nan) for k in ("silo_metrics", "eps_spent", "delta", "noise_multipliers")}
        test_sizes = np.zeros(K, dtype=np.int64)
        steps = np.zeros(K, dtype=np.int64)
        rates = np.full(K, nan)
        metric, data = None, {}
        for node, content in replies.items():
            r = json.loads(str(content["result"]["json"]))
            metric, data = r["metric"], r["data"]
            idx = r["silos"]
            for name in fields:
                fields[name][idx] = r[name]
            test_sizes[idx] = r["test_sizes"]
            steps[idx] = r["steps"]
            rates[idx] = r["sample_rates"]
        ok = np.isfinite(fields["silo_metrics"]) & (test_sizes > 0)
        weighted = float((fields["silo_metrics"][ok] * test_sizes[ok]).sum() / max(test_sizes[ok].sum(), 1)) \
            if ok.any() else nan
        return {
            "config": cfg.to_dict(), "metric": metric, "test_metric": weighted,
            "silo_metrics": fields["silo_metrics"], "test_sizes": test_sizes,
            "noise_multipliers": fields["noise_multipliers"], "eps_spent": fields["eps_spent"],
            "delta": fields["delta"], "accountant": cfg.accountant, "steps": steps, "wall_time": wall,
            "ledger": {"sample_rates": rates.tolist(), "dpsgd_steps": steps.tolist(), "selections": [0] * K},
            "data": data,
            "extras": {"federation": {
                "nodes": len(silos_of), "silos_per_node": [len(s) for s in silos_of.values()],
                "rounds_run": rounds_run, "bytes_per_round": bytes_per_round, "round_seconds": round_seconds,
                "dropped": [{"node": int(nd), **v} for nd, v in dropped.items()],
                "left_budget_spent": list(left.values()),
                "payload": "array bytes sent + received by the server per round (Array.data)"}},
        }


def serve(grid: Grid, spec: dict) -> dict:
    """Run the federation ``spec`` describes on ``grid``; write the result (or ``{"error": ...}``) to
    ``spec["result_file"]`` and return it."""
    try:
        result = _Federation(grid, spec).run()
    except Exception as exc:  # noqa: BLE001  the launcher reports it in one line
        result = {"error": f"{type(exc).__name__}: {exc}"}
    if spec.get("result_file"):
        write_json_atomic(spec["result_file"], result)
    return result


def make_server_app(spec: dict | None = None) -> ServerApp:
    """A ServerApp for ``spec``; with ``None`` it reads the spec from the JSON file named by the run config's
    ``spec`` key (``flwr run --run-config 'spec="..."'``, what the local deployment passes)."""
    server = ServerApp()

    @server.main()
    def main(grid: Grid, context: Context) -> None:
        run_spec = spec if spec is not None else json.loads(Path(str(context.run_config["spec"])).read_text())
        serve(grid, run_spec)

    return server


app = make_server_app()
