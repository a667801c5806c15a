"""``fedtrain federate``: a federation of processes on Flower gives the in-process engine's model, keeps every
silo's ε within its budget, survives a killed SuperNode and a spent budget, and leaves no process behind.

Data: the School stand-in with 6 silos (seconds to generate), 2–3 SuperNodes, 2–3 rounds.  Each Flower
ClientApp process imports torch, so a deployment takes tens of seconds on two cores.
"""
from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("flwr")
pytestmark = pytest.mark.xdist_group("flower")  # one test worker runs the federations, one after another

from fedtrain.config import RunConfig  # noqa: E402
from fedtrain.engine import run  # noqa: E402
from fedtrain.federate.launcher import FederationError, deploy, simulate  # noqa: E402
from fedtrain.federate.silos import SiloNode, silos_of_node  # noqa: E402
from fedtrain.sweep import load_config_data  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
MARKER = "FEDTRAIN_FEDERATE_TEST_MARKER"
os.environ[MARKER] = uuid.uuid4().hex  # every process a federation starts inherits it
FLOWER = re.compile(r"flower-superlink|flower-supernode|flower-superexec|flwr-serverapp|flwr-clientapp|"
                    r"flwr run|ray::|raylet|gcs_server|fedtrain\.federate\.simulation")


def config(method="mrmtl", rounds=2, **kw) -> RunConfig:
    return RunConfig(dataset="school-standin", dataset_options={"num_silos": 6}, method=method, eps=1.0,
                     lam=1.0 if method == "mrmtl" else 0.0, lr=0.01, rounds=rounds, batch_size=16, seed=3, **kw)


def _leftovers() -> list[str]:
    """Flower and Ray processes (not zombies, not this one) started by this module's federations: they inherit its
    marker, so another test worker's processes are not counted."""
    out = []
    token = os.environ[MARKER].encode()
    for pid_dir in Path("/proc").iterdir():
        if not pid_dir.name.isdigit() or int(pid_dir.name) == os.getpid():
            continue
        try:
            stat = (pid_dir / "stat").read_text()
            if stat.rsplit(")", 1)[1].split()[0] == "Z":
                continue
            cmd = (pid_dir / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            env = (pid_dir / "environ").read_bytes()
        except OSError:
            continue
        if token in env and FLOWER.search(cmd):  # this module's federations (another worker's carry their own marker)
            out.append(f"{pid_dir.name}: {cmd[:120]}")
    return out


def assert_nothing_left(wait: float = 20.0) -> None:
    end = time.monotonic() + wait
    left = _leftovers()
    while left and time.monotonic() < end:
        time.sleep(0.5)
        left = _leftovers()
    assert not left, f"processes left running: {left}"


def _check_same(res: dict, ref, cfg: RunConfig) -> None:
    assert res.get("error") is None, res.get("error")
    np.testing.assert_allclose(res["test_metric"], ref.test_metric, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(res["silo_metrics"], float), ref.silo_metrics, rtol=1e-4, atol=1e-6)
    eps = np.asarray(res["eps_spent"], float)
    assert np.all(eps <= cfg.eps) and np.all(eps > 0.5 * cfg.eps)
    np.testing.assert_allclose(eps, ref.eps_spent, rtol=1e-9)
    np.testing.assert_array_equal(res["steps"], ref.steps)


@pytest.mark.parametrize("method", ["local", "fedavg", "mrmtl"])
def test_silo_nodes_equal_engine(method):
    """In one process, without Flower: 3 nodes, each rebuilt from its saved state every round (as a ClientApp
    process is), give the engine's metrics and ε."""
    cfg = config(method, rounds=3)
    data = load_config_data(cfg)
    ref = run(cfg, data)
    nodes = [SiloNode(cfg, data, silos_of_node(i, 3, data.num_silos)) for i in range(3)]
    wbar = nodes[0].tr.init_params(per_silo=False)[0].numpy()
    a = (data.train_sizes / data.train_sizes.sum()).astype(np.float32)
    for _ in range(cfg.rounds):
        total = np.zeros_like(wbar)
        for i, node in enumerate(nodes):
            fresh = SiloNode(cfg, data, node.owned)
            fresh.restore(node.state())
            nodes[i] = fresh
            delta = fresh.train_round(wbar)
            if delta is not None:
                total += np.einsum("k,kd->d", a[fresh.owned], delta)
        wbar = wbar + total
    ev = [node.evaluate(wbar) for node in nodes]
    metrics = np.concatenate([e["silo_metrics"] for e in ev])
    np.testing.assert_allclose(metrics, ref.silo_metrics, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(np.concatenate([e["eps_spent"] for e in ev]), ref.eps_spent, rtol=1e-9)
    assert all(not n.can_train() for n in nodes)  # the plan is spent: a 4th round is refused


def test_deployment_equals_engine():
    """SuperLink + 2 SuperNodes (processes, 127.0.0.1): the engine's model within float32 tolerance, ε within
    budget, the bytes each round carries, and no process left."""
    cfg = config("mrmtl", rounds=2)
    data = load_config_data(cfg)
    ref = run(cfg, data)
    res = deploy({"config": cfg.to_dict(), "round_timeout": 120}, 2, timeout=400)
    _check_same(res, ref, cfg)
    fed = res["extras"]["federation"]
    d = data.dim + 1  # linear model: weights and bias
    # per round: w̄ to each of 2 nodes, the Δ of each silo back (one (A, D) array per node), float32, each array
    # serialized as .npy (a 128-byte header)
    assert fed["bytes_per_round"] == [4 * d * (2 + data.num_silos) + 4 * 128] * cfg.rounds
    assert fed["dropped"] == [] and fed["left_budget_spent"] == []
    assert_nothing_left()


def test_simulation_equals_engine():
    cfg = config("fedavg", rounds=2)
    data = load_config_data(cfg)
    ref = run(cfg, data)
    res = simulate({"config": cfg.to_dict(), "round_timeout": 120}, 2, timeout=400, num_cpus=2)
    _check_same(res, ref, cfg)
    assert_nothing_left(wait=30.0)


def test_killed_supernode_and_spent_budget():
    """3 SuperNodes, 3 rounds: node 0 calibrated its silos for 1 round only (it refuses round 2 and stays to
    report), node 2 is killed after round 1 (its silos are dropped and never charged by the server); node 1
    trains all 3 rounds.  Every reported ε is within its budget; nothing is left running."""
    cfg = config("mrmtl", rounds=3)
    data = load_config_data(cfg)
    killed = []

    def kill_after_first(groups, rounds):
        if rounds and not killed:
            groups.kill("supernode-2")
            killed.append(len(rounds))

    res = deploy({"config": cfg.to_dict(), "round_timeout": 45}, 3, timeout=400,
                 node_options=[{"budget-rounds": 1}, {}, {}], on_progress=kill_after_first)
    assert res.get("error") is None, res.get("error")
    fed = res["extras"]["federation"]
    owned = [silos_of_node(i, 3, data.num_silos) for i in range(3)]
    assert [entry["silos"] for entry in fed["left_budget_spent"]] == [owned[0]]
    assert fed["left_budget_spent"][0]["round"] == 1 and fed["left_budget_spent"][0]["reason"] == "budget-spent"
    assert [entry["silos"] for entry in fed["dropped"]] == [owned[2]]
    assert fed["dropped"][0]["round"] >= killed[0]
    steps, eps = np.asarray(res["steps"]), np.asarray(res["eps_spent"], float)
    m = np.maximum(1, data.train_sizes // cfg.batch_size) * cfg.local_epochs
    np.testing.assert_array_equal(steps[owned[0]], m[owned[0]])  # one round, then it left
    np.testing.assert_array_equal(steps[owned[1]], 3 * m[owned[1]])
    np.testing.assert_array_equal(steps[owned[2]], 0)  # the server charges nothing it was not told
    assert np.all(np.isnan(eps[owned[2]])) and np.all(np.isnan(np.asarray(res["silo_metrics"], float)[owned[2]]))
    assert np.all(eps[owned[0] + owned[1]] <= cfg.eps) and np.all(eps[owned[0] + owned[1]] > 0.5)
    assert np.isfinite(res["test_metric"])
    assert_nothing_left()


def test_port_in_use_and_silent_superlink():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        with pytest.raises(FederationError, match=rf"^--port {port}: port already in use"):
            deploy({"config": config().to_dict()}, 2, port=port)
    sleeper = [sys.executable, "-c", "import time; time.sleep(600)"]  # a 'SuperLink' that never answers
    with pytest.raises(FederationError, match=r"did not answer within 2 s \(--connect-timeout\)"):
        deploy({"config": config().to_dict()}, 2, superlink_cmd=sleeper, connect_timeout=2)
    assert_nothing_left()


def test_cli_errors_are_one_line():
    env = dict(os.environ, PYTHONPATH=str(REPO))
    base = [sys.executable, "-m", "fedtrain", "federate", "--dataset", "school-standin", "-D", "num_silos=6",
            "--method", "mrmtl", "--eps", "1", "--lam", "1", "--rounds", "2"]
    for extra, flag in ((["--nodes", "7"], "--nodes"), (["--method", "ditto"], "--method"),
                        (["--simulation", "--port", "9"], "--port")):
        p = subprocess.run(base + extra, capture_output=True, text=True, env=env, timeout=120)
        assert p.returncode == 2, p.stderr
        lines = p.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("fedtrain federate: error: ") and flag in lines[0], p.stderr


def test_private_noise_is_not_the_run_seeds():
    """``private_noise``: a node's noise is seeded from the OS's entropy, so nobody who knows the run's seed can
    regenerate it: two nodes of the same silos and config train different updates, both within their budgets."""
    cfg = config("fedavg", rounds=2)
    data = load_config_data(cfg)
    owned = silos_of_node(0, 3, data.num_silos)
    seeded = [SiloNode(cfg, data, owned) for _ in range(2)]
    private = [SiloNode(cfg, data, owned, private_noise=True) for _ in range(2)]
    wbar = seeded[0].tr.init_params(per_silo=False)[0].numpy()
    s0, s1 = (n.train_round(wbar) for n in seeded)
    p0, p1 = (n.train_round(wbar) for n in private)
    np.testing.assert_array_equal(s0, s1)  # the run's seed: reproducible, so anyone with the seed has the noise
    assert not np.array_equal(p0, p1) and not np.array_equal(p0, s0)
    for n in private:
        assert np.all(n.eps_spent() <= cfg.eps)
