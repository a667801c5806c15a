"""Flower's simulation engine for a federation: ``python -m fedtrain.federate.simulation SPEC NODES CPUS``.

The same ServerApp and ClientApp as the deployment, with ``NODES`` virtual SuperNodes run by
:func:`flwr.simulation.run_simulation` on its Ray backend (one CPU per ClientApp, ``CPUS`` for Ray).  Flower 1.42
marks ``run_simulation`` deprecated in favour of ``flwr run`` against a simulation SuperLink; it is the engine's
in-process entry point and runs unchanged here.  :func:`fedtrain.federate.launcher.simulate` starts this module
in its own process group so that the Ray processes it starts are stopped with it.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from flwr.simulation import run_simulation

from fedtrain.federate.client_app import app as client_app
from fedtrain.federate.server_app import make_server_app

__all__ = ["run"]


def run(spec: dict, nodes: int, num_cpus: int) -> None:
    """Run ``spec`` on ``nodes`` virtual SuperNodes; the ServerApp writes ``spec["result_file"]``."""
    _start_ray(num_cpus)
    try:
        run_simulation(make_server_app(spec), client_app, num_supernodes=int(nodes),
                       backend_config={"client_resources": {"num_cpus": 1, "num_gpus": 0.0},
                                       "init_args": {"num_cpus": int(num_cpus), "num_gpus": 0}})
    finally:
        try:
            import ray

            if ray.is_initialized():
                ray.shutdown()
        except ImportError:  # pragma: no cover
            pass


def _start_ray(num_cpus: int, attempts: int = 3) -> None:
    """Start the local Ray that Flower's Ray backend then uses (it starts one only if none is running).  Ray gives
    its raylet a fixed 30 s to register; on a loaded machine that can fail, so it is retried ``attempts`` times."""
    import ray

    env = {"PYTHONPATH": os.pathsep.join(sys.path + [os.environ.get("PYTHONPATH", "")])}
    for attempt in range(attempts):
        try:
            ray.init(num_cpus=int(num_cpus), num_gpus=0, include_dashboard=False, log_to_driver=False,
                     runtime_env={"env_vars": env})
            return
        except Exception:  # noqa: BLE001  Ray raises a bare Exception on a start-up time-out
            ray.shutdown()
            if attempt == attempts - 1:
                raise


if __name__ == "__main__":
    run(json.loads(Path(sys.argv[1]).read_text()), int(sys.argv[2]), int(sys.argv[3]))
