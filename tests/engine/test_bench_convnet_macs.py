"""benchmarks/bench_convnet.py's arithmetic count (convnet_macs), checked against torch's FLOP counter, and its
arithmetic floor (the operators it counts are the ones the step runs)."""
import importlib.util
from pathlib import Path

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from fedtrain.models.convnet import convnet_module
from fedtrain.testing import tiny_images


def _bench():
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_convnet.py"
    spec = importlib.util.spec_from_file_location("bench_convnet", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_opacus_count_is_autograd_plus_one_per_example_product_per_layer():
    data = tiny_images(num_silos=1, shape=(1, 28, 28), num_classes=10, n_range=(4, 4), n_test=2, seed=0)
    macs = _bench().convnet_macs(data)
    net = convnet_module((1, 28, 28), 10)
    x = torch.randn(1, 1, 28, 28)
    with FlopCounterMode(display=False) as fwd:
        net(x)
    with FlopCounterMode(display=False) as both:
        net(x).sum().backward()
    forward = fwd.get_total_flops() // 2  # MACs of the forward = one per-example product per layer
    assert macs["opacus"] == both.get_total_flops() // 2 + forward
    # the engine: every layer's forward, conv2's and fc's input gradients, conv1's and conv2's per-example products
    # (conv1's GEMMs, forward and per-example, on patches with a bias row of ones), no summed weight gradient and no
    # fc per-example product; conv2's forward and per-example product on the 10×10 outputs the second pool reads,
    # its input gradient on all 11×11
    L1, L2, L2u = 26 * 26, 11 * 11, 10 * 10
    assert macs["engine"] == forward - (L2 - L2u) * 288 * 64 + L1 * 32 + (L2 + L2u) * 288 * 64 + 1600 * 10 \
        + L1 * 10 * 32
    assert macs["conv2_gemm"] == (L2u, 288, 64)


def test_arithmetic_floor_times_every_operator_it_counts():
    """The ceiling of `--floor` counts only operators the step really runs: a renamed ATen operator would drop out
    of the floor silently and inflate the ratio printed, so each of ARITHMETIC_OPS must be timed (> 0) and the pooling
    and copies must be counted apart; the floor must be of the step's order (below 1.5 times the plain step: both are
    timings on a possibly busy machine, the floor's taken under the timing mode), and the ceiling is the measured
    ratio times step / floor."""
    data = tiny_images(num_silos=1, shape=(1, 28, 28), num_classes=10, n_range=(4, 4), n_test=2, seed=0)
    bench = _bench()
    threads = torch.get_num_threads()
    for _ in range(3):  # timings on a busy machine (make test runs two chains on two cores): up to three tries
        res = bench.arithmetic_floor(data, {"ratio": 2.0}, reps=2)
        if 0 < res["floor_us"] < res["step_us"] * 1.5:
            break
    assert torch.get_num_threads() == threads  # the one-thread measurement gives the threads back
    assert set(res["arithmetic_us"]) == set(bench.ARITHMETIC_OPS)
    assert all(v > 0 for v in res["arithmetic_us"].values()), res["arithmetic_us"]
    assert {"copy_", "max_pool2d_with_indices", "max_pool2d_with_indices_backward"} <= set(res["other_us"])
    assert 0 < res["floor_us"] < res["step_us"] * 1.5
    assert res["ratio_ceiling"] == pytest.approx(2.0 * res["step_us"] / res["floor_us"], rel=1e-12)
