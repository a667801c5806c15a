"""Where a sweep's batches run: in this process (:class:`LocalExecutor`) or as Ray tasks (:class:`RayExecutor`).

:func:`fedtrain.sweep.run_sweep` cuts the configurations still missing from the results store into
batches (each one :func:`fedtrain.engine.run_many` call, ``chunk_size`` configurations that the engine
stacks) and hands them to an executor, which returns each batch's results as it finishes.  The
**driver alone writes the results store**, one row per configuration, each written atomically
(:class:`fedtrain.results.ResultsStore`) when its batch has come back whole: a batch that fails writes
nothing, so no row is ever partial, and re-running the same sweep resumes from the rows already there.

* :class:`LocalExecutor` (``--executor local``, the default): the batches one after another in this
  process; an exception stops the sweep at once (the rows stored so far stay).
* :class:`RayExecutor` (``--executor ray``): every batch is a Ray task (one CPU, ``threads`` torch
  threads).  Ray runs on a local Ray started on demand with ``num_cpus`` CPUs (all of this machine's by
  default) and shut down afterwards, or on an existing cluster given by ``address`` (``"auto"``, the GCS
  address ``"host:6379"``, or ``"ray://host:10001"`` through Ray Client, which needs ``ray[client]``, part of
  ``fedbook[ray]``; its nodes need fedbook installed at the same engine version, checked on every result).
  A cluster that does not answer within ``connect_timeout`` seconds (:data:`DEFAULT_CONNECT_TIMEOUT`) is
  reported with a message instead of Ray's minutes of retries.  Each dataset is put in Ray's object store once and shared by its batches.  A task that
  raises is retried ``retries`` times (Ray's ``retry_exceptions``; a worker that dies is retried the
  same number of times); a batch still failing after that is *reported*: the other batches finish and
  are stored, then :class:`SweepTaskError` lists every failed batch (its first configuration and the
  error).  Ctrl-C cancels the tasks still running; finished batches are already stored.

Numbers: a batch runs the same :func:`~fedtrain.engine.run_many` call under either executor, so on
the same machine (same CPU, same thread count) the rows are bit-identical
(tests/store/test_fedtrain_ray.py); on other machines they agree up to float32 summation order.  Ray is
imported only by :class:`RayExecutor` (``pip install 'fedbook[ray]'``).
"""
from __future__ import annotations

import math
import os
import socket
import sys
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Sequence
from fedtheory.validation import check_integer_at_least
from fedtrain.config import ENGINE_VERSION

__all__ = ["Batch", "Executor", "LocalExecutor", "RayExecutor", "SweepTaskError", "get_executor", "EXECUTORS",
           "DEFAULT_CONNECT_TIMEOUT"]

#: Seconds :class:`RayExecutor` waits for a cluster given by ``address`` before it gives up with a message.
DEFAULT_CONNECT_TIMEOUT = 20.0
#: Executor names accepted by :func:`get_executor` and ``fedtrain sweep --executor``.
EXECUTORS = ("local", "ray")

#: ``runner(configs, data) -> list[RunResult]`` (default :func:`fedtrain.engine.run_many`).
Runner = Callable[[Sequence[Any], Any], Sequence[Any]]


@dataclass
class Batch:
    """One unit of work: ``configs`` (a list of :class:`~fedtrain.config.RunConfig`) on ``data``."""

    configs: list
    data: Any


class SweepTaskError(RuntimeError):
    """Batches of a sweep that still failed after their retries; ``failures`` holds ``(batch, error text)``."""

    def __init__(self, failures: list[tuple[Batch, str]], stored: int):
        self.failures = failures
        lines = []
        for batch, err in failures[:5]:
            c = batch.configs[0]
            lines.append(f"  batch of {len(batch.configs)} run(s) starting with {c.method} eps={c.eps} lam={c.lam} "
                         f"lr={c.lr} seed={c.seed} on {c.dataset}: {err}")
        more = f"\n  ... and {len(failures) - 5} more" if len(failures) > 5 else ""
        super().__init__(f"{len(failures)} batch(es) of the sweep failed after their retries; {stored} run(s) of the "
                         "other batches are stored, the failed ones wrote nothing (run the same sweep again to retry "
                         "them):\n" + "\n".join(lines) + more)


def _default_runner(configs, data):
    from fedtrain.engine import run_many

    return run_many(configs, data)


class Executor:
    """Runs batches; :meth:`run` yields ``(index, results)`` per batch as it finishes, or ``(index, exc)`` for a
    batch that failed for good (executors that stop at the first error raise it instead)."""

    name = "executor"

    def run(self, batches: Sequence[Batch], runner: Runner | None = None) -> Iterator[tuple[int, Any]]:
        raise NotImplementedError

    def close(self) -> None:
        """Release what the executor started (a local Ray)."""


class LocalExecutor(Executor):
    """The batches one after another in this process (an exception propagates at once)."""

    name = "local"

    def run(self, batches, runner=None):
        runner = runner or _default_runner
        for i, b in enumerate(batches):
            yield i, list(runner(b.configs, b.data))


def _ray_task(configs, data, runner, threads: int):
    """A batch inside a Ray worker: ``threads`` torch threads, then the runner; returns (engine version, results)."""
    import torch

    torch.set_num_threads(threads)
    runner = runner or _default_runner
    return ENGINE_VERSION, list(runner(configs, data))


class RayExecutor(Executor):
    """Batches as Ray tasks (see the module docstring).

    ``address``: an existing cluster (``ray.init(address=...)``); ``None`` starts a local Ray with
    ``num_cpus`` CPUs (default: all of this machine's), no dashboard, shut down by :meth:`close`.  If Ray
    is already initialised in this process (e.g. by the caller), it is used as is and left running.
    ``retries``: re-runs of a failing task (exceptions and dead workers) before it is reported.
    ``threads``: torch threads per task (each task asks Ray for one CPU).
    """

    name = "ray"

    def __init__(self, address: str | None = None, num_cpus: int | None = None, retries: int = 2, threads: int = 1,
                 connect_timeout: float = DEFAULT_CONNECT_TIMEOUT):
        connect_timeout = float(connect_timeout)
        if not math.isfinite(connect_timeout) or connect_timeout <= 0:
            raise ValueError(f"connect_timeout must be a finite number of seconds > 0 (got {connect_timeout!r})")
        self.connect_timeout = connect_timeout
        self.address = address
        self.num_cpus = None if num_cpus is None else int(check_integer_at_least("num_cpus", num_cpus, 1))
        self.retries = int(check_integer_at_least("retries", retries, 0))
        self.threads = int(check_integer_at_least("threads", threads, 1))
        if address is not None and num_cpus is not None:
            raise ValueError("num_cpus applies to a local Ray started on demand; with --address the cluster has "
                             "its own CPUs (give one of the two)")
        self._started = False
        self._ray = None

    def _import(self):
        try:
            import ray
        except ImportError as exc:
            raise ImportError("the ray executor needs Ray, which is not installed: pip install 'fedbook[ray]' "
                              "(or pip install 'ray>=2.40,<3'); --executor local runs without it") from exc
        return ray

    def start(self):
        """Connect to (or start) Ray; returns the ``ray`` module."""
        if self._ray is not None:
            return self._ray
        hint = ("check it with `ray status` on the head node; a cluster with token authentication needs its token "
                "(RAY_AUTH_TOKEN or RAY_AUTH_TOKEN_PATH)")
        running = sys.modules.get("ray")
        if self.address is not None and not (running is not None and running.is_initialized()):
            _check_reachable(self.address, self.connect_timeout, hint)  # before Ray's import and its long retries
        ray = self._import()
        if not ray.is_initialized():
            if self.address is not None:
                try:
                    ray.init(address=self.address, log_to_driver=False)
                except ConnectionError as exc:
                    raise ValueError(f"address: could not connect to a Ray cluster at {self.address!r} ({exc}); "
                                     f"{hint}") from exc
            else:
                ray.init(num_cpus=self.num_cpus or os.cpu_count() or 1, include_dashboard=False,
                         log_to_driver=False, configure_logging=False)
            self._started = True
        self._ray = ray
        return ray

    def close(self) -> None:
        if self._started and self._ray is not None:
            self._ray.shutdown()
        self._started = False
        self._ray = None

    def run(self, batches, runner=None):
        ray = self.start()
        task = ray.remote(num_cpus=1, max_retries=self.retries, retry_exceptions=self.retries > 0)(_ray_task)
        data_refs: dict[int, Any] = {}
        refs = {}
        for i, b in enumerate(batches):
            key = id(b.data)
            if key not in data_refs:
                data_refs[key] = ray.put(b.data)
            refs[task.remote(b.configs, data_refs[key], runner, self.threads)] = i
        pending = list(refs)
        try:
            while pending:
                done, pending = ray.wait(pending, num_returns=1)
                for ref in done:
                    i = refs[ref]
                    try:
                        version, results = ray.get(ref)
                    except Exception as exc:  # noqa: BLE001 - reported with the batch, after the others
                        yield i, _describe(exc)
                        continue
                    if version != ENGINE_VERSION:
                        yield i, RuntimeError(f"a Ray worker runs engine version {version}, the driver {ENGINE_VERSION}: "
                                              "install the same fedbook on every node")
                        continue
                    yield i, results
        finally:
            for ref in pending:  # interrupted (Ctrl-C) or abandoned: stop what still runs
                try:
                    ray.cancel(ref, force=True)
                except Exception:  # noqa: BLE001
                    pass


#: The HTTP/2 client preface and an empty SETTINGS frame: a gRPC server (Ray's GCS, Ray Client's server) answers
#: with a SETTINGS frame of its own.
_H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])


def _check_reachable(address: str, timeout: float, hint: str) -> None:
    """Fail fast (``ValueError``) unless a gRPC server answers at ``host:port`` or ``ray://host:port`` within
    ``timeout`` seconds: something must accept the TCP connection and reply to the HTTP/2 preface with a SETTINGS
    frame, as Ray's GCS and Ray Client's server do (Ray itself retries an unreachable address for minutes).
    ``ray://`` also needs Ray Client (``ray[client]``).  ``auto`` is left to Ray, which reads the local cluster's
    address and fails at once when there is none."""
    target = address
    if address.startswith("ray://"):
        try:
            import grpc  # noqa: F401  (Ray Client's transport)
        except ImportError:
            raise ImportError(f"--address {address} connects through Ray Client, which needs grpcio: pip install "
                              "'fedbook[ray]' (or 'ray[client]'); or give the cluster's GCS address host:6379, or "
                              "auto on a cluster node") from None
        target = address[len("ray://"):]
    if address == "auto" or ":" not in target:
        return
    host, _, port = target.rpartition(":")
    try:
        port_number = int(port)
    except ValueError:
        raise ValueError(f"address must be auto, host:port or ray://host:port (got {address!r})") from None
    reply = b""
    try:
        with socket.create_connection((host.strip("[]"), port_number), timeout=timeout) as sock:
            sock.sendall(_H2_PREFACE)
            while len(reply) < 9:
                chunk = sock.recv(9 - len(reply))
                if not chunk:
                    break
                reply += chunk
    except OSError as exc:
        reason = "timed out" if isinstance(exc, socket.timeout) else (exc.strerror or str(exc))
        raise ValueError(f"address: no Ray cluster at {address!r} ({reason}; waited at most {timeout:g} s, "
                         f"--connect-timeout); {hint}") from None
    if len(reply) < 9 or reply[3] != 4:
        raise ValueError(f"address: {address!r} accepts connections but does not answer as a Ray cluster (no gRPC "
                         f"reply); {hint}")


def _describe(exc: BaseException) -> BaseException:
    """The original exception of a Ray task error (its cause), else ``exc``."""
    cause = getattr(exc, "cause", None)
    return cause if isinstance(cause, BaseException) else exc


def get_executor(executor: "str | Executor | None" = None, **options: Any) -> Executor:
    """An executor from its name (:data:`EXECUTORS`; ``options`` go to its constructor) or as given."""
    if executor is None or executor == "local":
        if options:
            raise ValueError(f"the local executor takes no options (got {sorted(options)})")
        return LocalExecutor()
    if isinstance(executor, Executor):
        return executor
    if executor == "ray":
        return RayExecutor(**options)
    raise ValueError(f"executor must be one of {EXECUTORS} or an Executor (got {executor!r})")
