"""Benchmark: ConvNet DP-SGD on 40 silos of 28×28 images, the engine vs one Opacus ``PrivacyEngine`` per silo.

The CPU speed target: examples per second of :func:`fedtrain.engine.run` (one loop over silos and
configurations per step, ``ConvNetModel.clipped_grad_sum``'s per-example gradients; on CUDA all silos batched)
against :func:`fedtrain.reference.reference_run` (one Opacus
``PrivacyEngine``, ``DataLoader`` and ``GradSampleModule`` per silo, a Python loop over silos and steps),
measured in the same process on the same data, with the same noise multipliers; ratio printed
(target ≥ 3× on CPU).

Data (``--data``): ``fashion`` (default) is ``rotated-masked-fashion``, real Fashion-MNIST 28×28 images in App.
C.1's 40 silos and 4 rotation groups (``--mask-ratio``, default 0), ``--n`` training images per silo instead of
the paper's 1,500 so that a CPU run takes a minute; ``synthetic`` is :func:`fedtrain.testing.tiny_images` with
the same shape (templates plus noise; no file needed).  The engine's cost does not depend on the pixel values, but
the real data is what the Fig. 6 grid trains on.  With ``--fig6-rounds T --fig6-n N`` the engine's time per run
is also extrapolated to a Fig. 6 run of ``T`` rounds on ``N`` images per silo (steps scale with ``T·N/B``).
Config: FedAvg, the paper's batch 100 and clip 1 (App. C.4),
ε = 1, δ = 1e-7, ``--rounds`` rounds (default 3: a run also times each side's one-time set-up, Opacus' 40
``make_private`` calls among it, which one round would weigh as much as a fifth of Opacus' time; a Fig. 6 run of
40 rounds spreads it out, benchmarks/README.md).  Examples per second = DP-SGD examples processed (the sum over silos of
the steps run times the expected batch ``q_k n_k``) / wall seconds of training (calibration excluded:
both get the engine's z_k).  Each side runs once untimed (warm-up), then ``--repeats`` interleaved
(engine, Opacus) pairs, so that both sides see the same machine load; the ratio of the best times is the
headline, and the spread of the per-pair ratios is printed with it.

GPU (``--paper-gpu``, the GPU target): the same benchmark at paper scale (40 silos × 1,500 images,
``--rounds`` rounds, default 3 = 45 steps per silo), seconds per round of the engine on the CPU, the engine on
the GPU and the Opacus loop on the GPU, each once untimed then best of ``--repeats``, with the ratios
(target ≥ 10× over the Opacus loop on the GPU); the device's name is printed.  ``--gpu-device cpu`` runs the
same code path on the CPU (a dry run for machines without a GPU).

The roofline (``--roofline``) measures this core's GEMM rate on conv2's GEMM shapes and prints each side's
arithmetic rate (FLOPs per example counted from the model's shapes, :func:`convnet_macs`) as a share of it, the
engine's ceiling (every FLOP at that rate) and the engine/Opacus ratio that ceiling would give.

The floor (``--floor``, :func:`arithmetic_floor`) times, on one thread and in the loop, the ATen operators that fix
the engine's numbers (its GEMMs and the reductions of the norms and clipped sums) against its whole clipped-gradient
step, and prints the engine/Opacus ratio an engine with the same numbers would reach if everything else took no time.

The silo-chunk study (``--chunks``) times the engine's per-step clipped-gradient sum for several
``silo_chunk`` values (1 = a loop over silos, None = all silos vectorized up to the memory bound) for the
three models, which is how :data:`fedtrain.models.DEFAULT_SILO_CHUNK` was chosen.

Threads: ``OMP_NUM_THREADS`` sets both sides' torch threads; with more than one the engine shares its models
(silo × configuration) out over that many threads (``ConvNetModel.cpu_workers``, each on one core) and Opacus
runs each silo's kernels on all of them.

Usage::

    OMP_NUM_THREADS=1 flock /tmp/fedbook-heavy.lock python benchmarks/bench_convnet.py [--n 200]
        [--rounds 3] [--repeats 3] [--device cpu|cuda] [--chunks]
    python benchmarks/bench_convnet.py --paper-gpu     # on a machine with a GPU
"""
from __future__ import annotations

import argparse
import json
import time
import warnings


def parse(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--silos", type=int, default=40)
    p.add_argument("--data", default="fashion", choices=("fashion", "synthetic"),
                   help="fashion: rotated-masked-fashion (real 28x28); synthetic: tiny_images (no file)")
    p.add_argument("--mask-ratio", type=float, default=0.0, help="fashion: the silos' mask ratio")
    p.add_argument("--fig6-rounds", type=int, default=None, help="extrapolate minutes per Fig. 6 run of T rounds")
    p.add_argument("--fig6-n", type=int, default=None, help="... on this many images per silo (default --n)")
    p.add_argument("--n", type=int, default=200, help="training images per silo (paper: 1500)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--batch", type=int, default=100, help="expected batch size B (paper: 100)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    p.add_argument("--chunks", action="store_true", help="also time silo_chunk choices for every model")
    p.add_argument("--no-opacus", action="store_true")
    p.add_argument("--profile", action="store_true",
                   help="profile one engine run and one Opacus run (torch.profiler): where the time goes")
    p.add_argument("--roofline", action="store_true",
                   help="also measure this core's GEMM rate on the ConvNet's GEMM shapes and set both sides' "
                        "arithmetic against it: the engine's ceiling and the ratio it would allow")
    p.add_argument("--floor", action="store_true",
                   help="also time, on one thread and in the loop, the operators that fix the engine's numbers (its "
                        "GEMMs, norms and clipped sums) against its whole clipped-gradient step: the ratio if all "
                        "else took no time")
    p.add_argument("--paper-gpu", action="store_true",
                   help="paper scale (--n defaults to 1500): engine CPU vs engine GPU vs Opacus loop on the GPU")
    p.add_argument("--gpu-device", default="cuda", help="the GPU side's device for --paper-gpu (cpu: a dry run)")
    args = p.parse_args(argv)
    if args.paper_gpu and args.n == p.get_default("n"):
        args.n = 1500
    return args


def examples(result, n, batch):
    import numpy as np

    from fedtrain import ledger

    return float(np.sum(result.steps * ledger.expected_batch_sizes(n, batch)))


def main(argv=None):
    args = parse(argv)
    import torch

    from fedtrain.engine import run
    from fedtrain.reference import reference_run

    warnings.simplefilter("ignore")
    if args.paper_gpu:
        return paper_gpu(args)
    data, cfg = setup(args)
    cfg = cfg.replace(device=args.device)
    out = {"device": args.device, "torch_threads": torch.get_num_threads(), "silos": args.silos, "n": args.n,
           "rounds": args.rounds, "batch": args.batch, "data": data.name, "real_data": data.real}
    first = run(cfg, data)  # warm-up and the z_k both sides use
    z = first.noise_multipliers
    ex = examples(first, data.train_sizes, cfg.batch_size)
    engine = lambda: run(cfg, data)  # noqa: E731
    if args.no_opacus:
        best = min(_timed(engine) for _ in range(args.repeats))
        out["engine_s"], out["engine_examples_per_s"] = best, ex / best
        print(f"engine: {best:.2f} s, {ex / best:,.0f} examples/s ({ex:.0f} examples)", flush=True)
    else:
        ref_cfg = cfg.replace(device="cpu")
        reference_run(ref_cfg.replace(rounds=1), data, noise_multipliers=z, accountant_check=False)  # warm-up
        opacus = lambda: reference_run(ref_cfg, data, noise_multipliers=z, accountant_check=False)  # noqa: E731
        # interleaved (engine, Opacus) pairs: both sides see the same machine load
        pairs = [(_timed(engine), _timed(opacus)) for _ in range(args.repeats)]
        best, rb = min(p[0] for p in pairs), min(p[1] for p in pairs)
        ratios = sorted(o / e for e, o in pairs)
        out["engine_s"], out["engine_examples_per_s"] = best, ex / best
        out["opacus_s"], out["opacus_examples_per_s"] = rb, ex / rb
        out["ratio"] = rb / best
        out["pair_ratios"] = ratios
        print(f"engine: {best:.2f} s, {ex / best:,.0f} examples/s ({ex:.0f} examples)", flush=True)
        print(f"Opacus per silo: {rb:.2f} s, {ex / rb:,.0f} examples/s", flush=True)
        print(f"ratio engine/Opacus (examples per second, best of {args.repeats} each): {rb / best:.2f}x "
              f"(target >= 3x on CPU); per interleaved pair: min {ratios[0]:.2f}x, median "
              f"{ratios[len(ratios) // 2]:.2f}x, max {ratios[-1]:.2f}x", flush=True)
    if args.fig6_rounds:
        n6 = args.fig6_n or args.n
        minutes = out["engine_s"] / args.rounds * args.fig6_rounds * (n6 / args.n) / 60
        out["fig6_minutes_per_run"] = minutes
        print(f"a Fig. 6 run ({args.silos} silos x {n6} images, T = {args.fig6_rounds}, B = {args.batch}): "
              f"{minutes:.1f} min on this machine's {out['torch_threads']} thread(s), engine", flush=True)
    if args.roofline:
        out["roofline"] = roofline(data, out)
    if args.floor:
        out["floor"] = arithmetic_floor(data, out)
    if args.chunks:
        out["chunks"] = chunk_study(args.device)
    if args.profile:
        out["profile"] = profile(cfg, data, z)
    print(json.dumps(out, indent=1))
    return out


def setup(args):
    """The benchmark's data (``--data``: real rotated-masked-fashion, or synthetic tiny_images) and CPU config."""
    from fedtrain.config import RunConfig

    if getattr(args, "data", "synthetic") == "fashion":
        from fedtrain.data.registry import load_dataset

        data = load_dataset("rotated-masked-fashion", num_silos=args.silos, train_per_silo=args.n, test_per_silo=50,
                            num_groups=min(4, args.silos), mask_ratio=args.mask_ratio)
    else:
        from fedtrain.testing import tiny_images

        data = tiny_images(num_silos=args.silos, shape=(1, 28, 28), num_classes=10, n_range=(args.n, args.n),
                           n_test=50, noise=1.0, seed=0, name="mnist-shaped")
    cfg = RunConfig(dataset=data.name, method="fedavg", model="convnet", eps=1.0, delta=1e-7, lr=0.05,
                    rounds=args.rounds, batch_size=args.batch, clip=1.0)
    return data, cfg


def paper_gpu(args) -> dict:
    """Seconds per round at paper scale: the engine on the CPU and on ``args.gpu_device``, and the Opacus loop
    (:func:`fedtrain.reference.reference_run`) on ``args.gpu_device``; all with the engine's z_k."""
    import torch

    from fedtrain.engine import run
    from fedtrain.reference import reference_run

    gpu = args.gpu_device
    if gpu.startswith("cuda") and not torch.cuda.is_available():
        raise SystemExit("--paper-gpu needs a CUDA GPU (torch.cuda.is_available() is False); "
                         "--gpu-device cpu runs the same code path on the CPU")
    name = torch.cuda.get_device_name() if gpu.startswith("cuda") else "cpu (dry run)"
    data, cfg = setup(args)
    z = run(cfg, data).noise_multipliers  # the z_k both sides use (and a first CPU run)

    def sync():
        if gpu.startswith("cuda"):
            torch.cuda.synchronize()

    def best(fn) -> float:
        fn()  # warm-up (CUDA context, kernels, mkldnn primitives)
        ts = []
        for _ in range(args.repeats):
            sync()
            t0 = time.perf_counter()
            fn()
            sync()
            ts.append(time.perf_counter() - t0)
        return min(ts) / args.rounds

    out = {"gpu": name, "silos": args.silos, "n": args.n, "rounds": args.rounds, "batch": args.batch,
           "torch_threads": torch.get_num_threads()}
    out["engine_cpu_s_per_round"] = best(lambda: run(cfg, data))
    out["engine_gpu_s_per_round"] = best(lambda: run(cfg.replace(device=gpu), data))
    out["opacus_gpu_s_per_round"] = best(
        lambda: reference_run(cfg.replace(device=gpu), data, noise_multipliers=z, accountant_check=False))
    out["gpu_vs_cpu"] = out["engine_cpu_s_per_round"] / out["engine_gpu_s_per_round"]
    out["engine_vs_opacus_gpu"] = out["opacus_gpu_s_per_round"] / out["engine_gpu_s_per_round"]
    print(f"paper scale, {args.silos} silos x {args.n} images (28x28), B = {args.batch}; GPU: {name}")
    print(f"engine, CPU ({out['torch_threads']} threads): {out['engine_cpu_s_per_round']:.2f} s per round")
    print(f"engine, GPU: {out['engine_gpu_s_per_round']:.3f} s per round ({out['gpu_vs_cpu']:.1f}x the CPU)")
    print(f"Opacus loop, GPU: {out['opacus_gpu_s_per_round']:.2f} s per round; engine/Opacus on the GPU: "
          f"{out['engine_vs_opacus_gpu']:.1f}x (target >= 10x)", flush=True)
    print(json.dumps(out, indent=1))
    return out


def profile(cfg, data, z, top: int = 12) -> dict:
    """Self CPU time by ATen operator of one engine run and one Opacus run (``torch.profiler``), printed as
    tables; returns ``{side: {op: share of the run's self CPU time}}``."""
    from torch.profiler import ProfilerActivity, profile as torch_profile

    from fedtrain.engine import run
    from fedtrain.reference import reference_run

    out = {}
    sides = {"engine": lambda: run(cfg, data),
             "opacus": lambda: reference_run(cfg.replace(device="cpu"), data, noise_multipliers=z,
                                             accountant_check=False)}
    for side, fn in sides.items():
        with torch_profile(activities=[ProfilerActivity.CPU]) as prof:
            fn()
        events = prof.key_averages()
        total = sum(e.self_cpu_time_total for e in events)
        rows = sorted(events, key=lambda e: -e.self_cpu_time_total)[:top]
        out[side] = {e.key: e.self_cpu_time_total / total for e in rows}
        print(f"{side}: self CPU {total / 1e6:.2f} s; top operators:")
        for e in rows:
            print(f"  {e.key:40s} {e.self_cpu_time_total / 1e6:7.2f} s  {100 * e.self_cpu_time_total / total:5.1f} %  "
                  f"({e.count} calls)")
    return out


def convnet_macs(data) -> dict:
    """Multiply-accumulates per DP-SGD example of the two sides, counted from the ConvNet's shapes (App. C.1).

    The engine (``ConvNetModel.clipped_grad_sum``): conv1 forward and per-example gradient (its patches carry the
    bias row), conv2 forward, backward to its input and per-example gradient (forward and per-example gradient only
    on the outputs the second pool reads, without padding), fc forward and backward to its input
    (fc's per-example gradient is never formed: its norm is ``‖g‖²‖ã‖²``).  Opacus: autograd's forward and backward
    (input gradients where needed, and the summed weight gradients, which the engine does not compute), plus the
    grad sampler's per-example gradient of every layer."""
    from fedtrain.models.convnet import CONVNET_CHANNELS, ConvNetModel

    m = ConvNetModel(tuple(data.input_shape), data.num_classes)
    C, H, W = m.input_shape
    c1, c2 = CONVNET_CHANNELS
    h1, w1 = H + 2 * m.pad - 2, W + 2 * m.pad - 2
    h2, w2, h2u, w2u = m._conv2_grid()  # conv2's outputs, and those the engine computes
    conv1, conv2, fc = h1 * w1 * 9 * C * c1, h2 * w2 * 9 * c1 * c2, m.features * m.out_dim
    conv2u = h2u * w2u * 9 * c1 * c2
    return {"engine": 2 * (conv1 + h1 * w1 * c1) + 2 * conv2u + conv2 + 2 * fc,
            "opacus": 3 * conv1 + 4 * conv2 + 4 * fc, "conv2_gemm": (h2u * w2u, 9 * c1, c2)}


def roofline(data, out: dict, reps: int = 30) -> dict:
    """This core's single-precision GEMM rate on conv2's three GEMMs at the engine's micro-batch (the forward
    ``(b·L, 9·32) × (9·32, 64)``, the per-example gradients ``b × (64, L) × (L, 9·32)`` and the backward's
    ``(b·L, 64) × (64, 9·32)``), and each side's arithmetic rate (:func:`convnet_macs` × examples per second)
    against it.  The engine's ceiling is that rate over its FLOPs per example; over Opacus' measured examples per
    second it bounds the ratio any implementation of these GEMMs reaches on this core."""
    import torch

    from fedtrain.models.convnet import CONVNET_EXAMPLE_CHUNK

    macs = convnet_macs(data)
    L, k, n = macs["conv2_gemm"]
    b = CONVNET_EXAMPLE_CHUNK
    a, w = torch.randn(b * L, k), torch.randn(k, n)
    g, p = torch.randn(b, n, L), torch.randn(b, L, k)
    gz, wt = torch.randn(b * L, n), torch.randn(n, k)
    shapes = [lambda: a @ w, lambda: torch.bmm(g, p), lambda: gz @ wt]
    total = 0.0
    for f in shapes:
        f()
        total += min(_timed(f) for _ in range(reps))
    gflops = 3 * 2 * b * L * k * n / total / 1e9
    res = {"gemm_gflops": gflops, "macs_per_example": {s: macs[s] for s in ("engine", "opacus")}}
    print(f"this core's GEMM rate on conv2's shapes (one thread, micro-batch {b}): {gflops:.1f} GFLOP/s")
    for side in ("engine", "opacus"):
        key = f"{side}_examples_per_s"
        if key in out:
            rate = out[key] * 2 * macs[side] / 1e9
            res[side + "_gflops"] = rate
            print(f"{side}: {2 * macs[side] / 1e6:.1f} MFLOP per example, {rate:.1f} GFLOP/s = "
                  f"{100 * rate / gflops:.0f} % of the GEMM rate")
    ceiling = gflops * 1e9 / (2 * macs["engine"])
    res["engine_ceiling_examples_per_s"] = ceiling
    line = f"the engine's ceiling at the GEMM rate: {ceiling:,.0f} examples/s"
    if "opacus_examples_per_s" in out:
        res["ratio_ceiling"] = ceiling / out["opacus_examples_per_s"]
        line += f", {res['ratio_ceiling']:.2f}x the measured Opacus"
    print(line, flush=True)
    return res


#: The ATen operators whose results fix the engine's numbers (its GEMMs and the reductions giving the norms and the
#: clipped sums); every other operator of its step moves data, picks maxima or masks (:func:`arithmetic_floor`).
ARITHMETIC_OPS = ("bmm", "addmm", "mm", "convolution_backward", "linalg_vector_norm", "addmv_", "addmm_", "sum",
                  "_softmax")


def arithmetic_floor(data, out: dict, reps: int = 20) -> dict:
    """The engine's time per example in the operators that fix its numbers, against its whole clipped-gradient step.

    The committed ConvNet runs are reproduced bit for bit by this engine, so a faster engine that keeps them must make
    the same GEMMs on the same shapes and the same reductions (:data:`ARITHMETIC_OPS`: conv1's forward and
    per-example products, conv2's forward, input gradient and per-example products, fc's, the norms and clipped sums);
    everything else (patch copies, pooling and its backward, ReLU masks, fills, views and Python) could in principle
    be fused away.  ``clipped_grad_sum`` of one model on 4 micro-batches of :data:`CONVNET_EXAMPLE_CHUNK` examples
    runs on one thread, plain and then under a ``TorchDispatchMode`` that times every ATen operator where it runs
    (in the loop, the caches as the step leaves them), each operator's time the least of ``reps`` steps.  The measured engine/Opacus ratio times (whole step / those
    operators' time) bounds the ratio of any engine with these numbers on this core if the rest took no time (the
    run being ~97 % clipped-gradient steps; measured at one thread, applied to the ratio at the run's threads, both
    sides scaling alike from one core to two).  Times of the operators alone on warm caches are lower (their share
    fell to 65 % when each was timed repeated on its own), so the bound holds for these calls as the loop makes them.
    """
    import collections

    import torch
    import torch.nn.functional as F
    from torch.utils._python_dispatch import TorchDispatchMode

    from fedtrain.losses import LogisticLoss
    from fedtrain.models.convnet import CONVNET_EXAMPLE_CHUNK, ConvNetModel

    class OpTimes(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.seconds = collections.defaultdict(float)

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            t0 = time.perf_counter()
            result = func(*args, **(kwargs or {}))
            self.seconds[func.overloadpacket.__name__] += time.perf_counter() - t0
            return result

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        m = ConvNetModel(tuple(data.input_shape), data.num_classes, cpu_workers=1)
        g = torch.Generator().manual_seed(0)
        theta = m.init((1, 1), g)
        nb = 4 * CONVNET_EXAMPLE_CHUNK
        x = F.pad(torch.rand(1, 1, nb, m.in_dim - 1, generator=g), (0, 1), value=1.0)
        y = torch.randint(0, m.out_dim, (1, 1, nb), generator=g).float()
        valid, clip = torch.ones(1, 1, nb, dtype=torch.bool), torch.ones(1, 1)
        step = lambda: m.clipped_grad_sum(theta, x, y, valid, LogisticLoss(), clip)  # noqa: E731
        for _ in range(3):
            step()
        whole = min(_timed(step) for _ in range(reps)) / nb
        runs = []
        for _ in range(reps):
            with OpTimes() as mode:
                step()
            runs.append(mode.seconds)
    finally:
        torch.set_num_threads(before)
    per_ex = {k: min(r.get(k, 0.0) for r in runs) / nb for k in runs[0]}  # each operator's best step: a lower bound
    fixed = {k: per_ex.get(k, 0.0) for k in ARITHMETIC_OPS}
    floor = sum(fixed.values())
    rest = sorted(((k, v) for k, v in per_ex.items() if k not in ARITHMETIC_OPS), key=lambda kv: -kv[1])
    res = {"step_us": 1e6 * whole, "floor_us": 1e6 * floor, "floor_share": floor / whole,
           "arithmetic_us": {k: 1e6 * v for k, v in fixed.items()}, "other_us": {k: 1e6 * v for k, v in rest}}
    print(f"one thread, one model, micro-batches of {CONVNET_EXAMPLE_CHUNK}: the clipped-gradient step "
          f"{1e6 * whole:.1f} us an example; the operators that fix its numbers {1e6 * floor:.1f} us "
          f"({100 * floor / whole:.0f} %):")
    for k, v in sorted(fixed.items(), key=lambda kv: -kv[1]):
        print(f"  {k:34s} {1e6 * v:7.1f} us")
    print("  the rest, largest first: " + ", ".join(f"{k} {1e6 * v:.1f}" for k, v in rest[:8]) + " us")
    if "ratio" in out:
        res["ratio_ceiling"] = out["ratio"] * whole / floor
        print(f"with everything but those operators free, the measured {out['ratio']:.2f}x would become at most "
              f"{res['ratio_ceiling']:.2f}x", flush=True)
    return res


def _timed(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def chunk_study(device: str, K: int = 40, b: int = 100, reps: int = 3) -> dict:
    """Seconds per DP-SGD clipped-gradient step (K silos, b examples each) for silo_chunk choices."""
    import torch

    from fedtrain.losses import LogisticLoss
    from fedtrain.models import build_model

    res = {}
    cases = {"linear": dict(in_dim=100, out_dim=10), "mlp": dict(in_dim=100, out_dim=10),
             "convnet": dict(in_dim=784, out_dim=10, input_shape=(1, 28, 28))}
    for name, kw in cases.items():
        res[name] = {}
        for chunk in (1, 4, 10, None):
            m = build_model(name, kw["in_dim"], kw["out_dim"], device=device, silo_chunk=chunk,
                            **({"input_shape": kw["input_shape"]} if "input_shape" in kw else {}))
            g = torch.Generator(device=device).manual_seed(0)
            theta = m.init((1, K), g, random=True) if name != "linear" else m.init((1, K))
            x = torch.randn(1, K, b, kw["in_dim"] + 1, device=device)
            y = torch.randint(0, 10, (1, K, b), device=device).float()
            valid = torch.ones(1, K, b, dtype=torch.bool, device=device)
            clip = torch.ones(1, K, device=device)
            m.clipped_grad_sum(theta, x, y, valid, LogisticLoss(), clip)
            ts = []
            for _ in range(reps):
                if device == "cuda":
                    torch.cuda.synchronize()
                t0 = time.perf_counter()
                m.clipped_grad_sum(theta, x, y, valid, LogisticLoss(), clip)
                if device == "cuda":
                    torch.cuda.synchronize()
                ts.append(time.perf_counter() - t0)
            res[name][str(chunk)] = min(ts)
            print(f"{name:8s} silo_chunk={str(chunk):4s}: {min(ts) * 1e3:8.1f} ms per step ({K} silos x {b})",
                  flush=True)
    return res


if __name__ == "__main__":
    main()
