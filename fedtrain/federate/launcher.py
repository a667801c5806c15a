"""Start a federation on this machine, run the Flower app, and stop every process it started.

``deploy(spec, nodes)``: a real local deployment, each part its own process (and process group):

* one SuperLink, ``flower-superlink --insecure --host 127.0.0.1 --port P`` (Flower 1.42: the Fleet, Control and
  ServerAppIo APIs on one HTTP port; ``--insecure``: no TLS, acceptable on the loopback interface only);
* ``nodes`` SuperNodes, ``flower-supernode --insecure --superlink 127.0.0.1:P --port Q_i --node-config
  'partition-id=i num-partitions=N ...'``, each serving a block of silos;
* the run, submitted with ``flwr run <app> fedtrain-local --run-config spec="..."`` (the connection
  ``fedtrain-local`` is written to a private ``FLWR_HOME``; nothing goes to the user's ``~/.flwr``).

The SuperLink starts the ServerApp and each SuperNode its ClientApp processes (Flower's subprocess isolation);
they inherit their parent's process group, so stopping a group stops them too.  Every group is stopped
(SIGTERM, then SIGKILL after a grace period) when the run ends, fails, times out, or this process is
interrupted (``atexit`` and SIGINT/SIGTERM handlers).  ``simulate(spec, nodes)``: Flower's simulation engine
(:func:`flwr.simulation.run_simulation`, Ray backend) in a child process group, stopped the same way.

Errors (:class:`FederationError`, one line each): a port in use, a SuperLink that does not answer within
``connect_timeout``, a process that exits early (with the tail of its log), a run that exceeds ``timeout``.
"""
from __future__ import annotations

import atexit
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Sequence

__all__ = ["FederationError", "ProcessGroups", "deploy", "simulate", "free_port", "check_port_free", "APP_DIR"]

#: The Flower app folder (its pyproject.toml names the ServerApp and ClientApp).
APP_DIR = Path(__file__).with_name("app")
HOST = "127.0.0.1"


class FederationError(RuntimeError):
    """A federation could not start or finish; the message is one line naming the cause."""


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now (the OS's choice)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def check_port_free(port: int, what: str = "--port") -> None:
    """Raise :class:`FederationError` if ``port`` cannot be bound on 127.0.0.1."""
    if not 1 <= int(port) <= 65535:
        raise FederationError(f"{what} must be in [1, 65535] (got {port})")
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((HOST, int(port)))
        except OSError:
            raise FederationError(f"{what} {port}: port already in use on {HOST}; choose another or omit it "
                                  "(a free port is picked)") from None


def _answers(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.5)
        return s.connect_ex((HOST, int(port))) == 0


class ProcessGroups:
    """Processes started each in a new session (process group); :meth:`stop` ends every group, once."""

    def __init__(self, workdir: Path):
        self.workdir = workdir
        self.procs: dict[str, subprocess.Popen] = {}
        self._stopped = False
        atexit.register(self.stop)
        self._old = {}
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                self._old[sig] = signal.signal(sig, self._on_signal)
            except ValueError:  # not the main thread: atexit and the caller's finally still stop the groups
                pass

    def _on_signal(self, signum, frame):
        self.stop()
        old = self._old.get(signum)
        if callable(old):
            old(signum, frame)
        raise KeyboardInterrupt if signum == signal.SIGINT else SystemExit(128 + signum)

    def start(self, name: str, cmd: Sequence[str], env: dict) -> subprocess.Popen:
        log = open(self.workdir / f"{name}.log", "wb")
        proc = subprocess.Popen(list(cmd), stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env=env, cwd=self.workdir, start_new_session=True)
        log.close()
        self.procs[name] = proc
        return proc

    def log_tail(self, name: str, lines: int = 1) -> str:
        path = self.workdir / f"{name}.log"
        text = path.read_text(errors="replace").strip().splitlines() if path.exists() else []
        return " | ".join(t.strip() for t in text[-lines:])[-300:]

    def kill(self, name: str) -> None:
        """SIGKILL the process group of ``name`` at once (fault injection: a node that dies)."""
        proc = self.procs[name]
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()

    def stop(self, grace: float = 5.0) -> None:
        if self._stopped:
            return
        self._stopped = True
        for proc in self.procs.values():
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        end = time.monotonic() + grace
        for proc in self.procs.values():
            try:
                proc.wait(timeout=max(0.0, end - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
            try:  # the group may hold children that outlive the leader
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            try:
                proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                pass
        for sig, old in self._old.items():
            try:
                signal.signal(sig, old)
            except (ValueError, TypeError):
                pass
        atexit.unregister(self.stop)


def _env(home: Path) -> dict:
    env = dict(os.environ)
    bindir = str(Path(sys.executable).parent)
    env["PATH"] = bindir + os.pathsep + env.get("PATH", "")
    env["FLWR_HOME"] = str(home)
    env.setdefault("OMP_NUM_THREADS", "1")
    root = str(Path(__file__).resolve().parents[2])  # the fedtrain package must import in every Flower process
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["FLWR_DISABLE_UPDATE_CHECK"] = "1"
    return env


def _bin(name: str) -> str:
    path = Path(sys.executable).parent / name
    return str(path) if path.exists() else name


def _node_config(i: int, nodes: int, data_dir: str | None, extra: dict | None) -> str:
    items = {"partition-id": i, "num-partitions": nodes, **(extra or {})}
    if data_dir:
        items["data-dir"] = str(data_dir)
    return " ".join(f"{k}={json.dumps(v) if isinstance(v, str) else str(v).lower() if isinstance(v, bool) else v}"
                    for k, v in items.items())


def _wait_result(path: Path, groups: ProcessGroups, timeout: float, watch: Sequence[str],
                 on_progress: Callable[[list[dict]], None] | None, progress: Path) -> dict:
    end = time.monotonic() + timeout
    seen = 0
    while time.monotonic() < end:
        if path.exists():
            return json.loads(path.read_text())
        if on_progress is not None and progress.exists():
            lines = [json.loads(x) for x in progress.read_text().splitlines() if x.strip()]
            if len(lines) > seen:
                seen = len(lines)
                on_progress(lines)
        for name in watch:
            proc = groups.procs[name]
            if proc.poll() is not None and not path.exists():
                raise FederationError(f"{name} exited with status {proc.returncode} before the run finished: "
                                      f"{groups.log_tail(name)}")
        time.sleep(0.2)
    raise FederationError(f"the run did not finish within {timeout:g} s (--timeout); every process was stopped")


def deploy(spec: dict, nodes: int, *, port: int | None = None, data_dir: str | None = None,
           connect_timeout: float = 30.0, timeout: float = 1800.0, node_options: Sequence[dict] | None = None,
           superlink_cmd: Sequence[str] | None = None, on_progress: Callable[[ProcessGroups, list[dict]], None] | None = None,
           keep_dir: bool = False) -> dict:
    """Run ``spec`` (:mod:`fedtrain.federate.server_app`) on a SuperLink and ``nodes`` SuperNodes on 127.0.0.1.

    ``port``: the SuperLink's port (default: a free one); ``node_options[i]``: extra node-config of SuperNode i
    (``budget-rounds``, ``private-noise``); ``superlink_cmd``: replaces the SuperLink command (tests: one that
    never answers); ``on_progress(groups, rounds)``: called as rounds finish (tests: kill a node).  Returns the
    server's result dict (``{"error": ...}`` if the server failed).  Every process started is stopped on return.
    """
    if port is not None:
        check_port_free(port, "--port")
    work = Path(tempfile.mkdtemp(prefix="fedtrain-federate-"))
    groups = ProcessGroups(work)
    try:
        home = work / "flwr-home"
        home.mkdir()
        port = int(port) if port is not None else free_port()
        (home / "config.toml").write_text(
            f'[superlink]\ndefault = "fedtrain-local"\n\n[superlink.fedtrain-local]\naddress = "{HOST}:{port}"\n'
            "insecure = true\n")
        app = work / "app"
        shutil.copytree(APP_DIR, app)
        spec = dict(spec, num_nodes=nodes, result_file=str(work / "result.json"),
                    progress_file=str(work / "progress.jsonl"))
        (work / "spec.json").write_text(json.dumps(spec))
        env = _env(home)
        cmd = list(superlink_cmd) if superlink_cmd else [
            _bin("flower-superlink"), "--insecure", "--host", HOST, "--port", str(port), "--isolation", "subprocess",
            "--disable-runtime-dependency-installation"]  # nothing is installed at run time
        groups.start("superlink", cmd, env)
        end = time.monotonic() + connect_timeout
        while not _answers(port):
            if groups.procs["superlink"].poll() is not None:
                raise FederationError(f"the SuperLink exited with status {groups.procs['superlink'].returncode}: "
                                      f"{groups.log_tail('superlink')}")
            if time.monotonic() > end:
                raise FederationError(f"the SuperLink at {HOST}:{port} did not answer within {connect_timeout:g} s "
                                      "(--connect-timeout); every process was stopped")
            time.sleep(0.2)
        for i in range(nodes):
            extra = node_options[i] if node_options and i < len(node_options) else None
            groups.start(f"supernode-{i}", [
                _bin("flower-supernode"), "--insecure", "--superlink", f"{HOST}:{port}", "--host", HOST,
                "--port", str(free_port()), "--node-config", _node_config(i, nodes, data_dir, extra)], env)
        run = subprocess.run([_bin("flwr"), "run", str(app), "fedtrain-local", "--run-config",
                              f'spec="{work / "spec.json"}"'], env=env, cwd=work, capture_output=True, text=True,
                             timeout=connect_timeout + 60)
        if run.returncode != 0:
            tail = (run.stderr or run.stdout).strip().splitlines()
            raise FederationError(f"flwr run failed (status {run.returncode}): {tail[-1] if tail else ''}")
        cb = (lambda rounds: on_progress(groups, rounds)) if on_progress else None
        return _wait_result(work / "result.json", groups, timeout, ["superlink"], cb, work / "progress.jsonl")
    except subprocess.TimeoutExpired:
        raise FederationError(f"flwr run did not return within {connect_timeout + 60:g} s") from None
    finally:
        groups.stop()
        if not keep_dir:
            shutil.rmtree(work, ignore_errors=True)


def simulate(spec: dict, nodes: int, *, data_dir: str | None = None, timeout: float = 1800.0,
             num_cpus: int | None = None) -> dict:
    """Run ``spec`` on Flower's simulation engine with ``nodes`` virtual SuperNodes (Ray backend), in a child
    process group that is stopped on return."""
    work = Path(tempfile.mkdtemp(prefix="fedtrain-simulate-"))
    groups = ProcessGroups(work)
    try:
        spec = dict(spec, num_nodes=nodes, result_file=str(work / "result.json"))
        (work / "spec.json").write_text(json.dumps(spec))
        env = _env(work)
        if data_dir:
            env["FEDBOOK_DATA_DIR"] = str(data_dir)
        cmd = [sys.executable, "-m", "fedtrain.federate.simulation", str(work / "spec.json"), str(nodes),
               str(num_cpus or max(1, os.cpu_count() or 1))]
        groups.start("simulation", cmd, env)
        return _wait_result(work / "result.json", groups, timeout, ["simulation"], None, work / "none")
    finally:
        groups.stop()
        shutil.rmtree(work, ignore_errors=True)
