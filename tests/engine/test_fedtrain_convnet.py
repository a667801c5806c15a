"""The paper's ConvNet in the engine: per-example gradients vs Opacus, clipping, every method,
the Opacus-per-silo reference in distribution, bad input.

Distribution test (as tests/engine/test_fedtrain_engine_reference.py): SEEDS seeds of the engine and of the
Opacus reference (independent random streams); the difference of the sample means of the test accuracy
must lie within 4 standard errors of that difference, ``|m_E − m_R| ≤ 4·sqrt(s_E²/S + s_R²/S)``.
"""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch

from fedtrain.config import RunConfig
from fedtrain.engine import run, run_many
from fedtrain.losses import LogisticLoss
from fedtrain.models import ConvNetModel, build_model, convnet_module
from fedtrain.testing import engine_vs_reference, tiny_federated, tiny_images

SEEDS = 16


@pytest.fixture(autouse=True)
def quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Opacus' secure-RNG and hook warnings
        yield


@pytest.fixture(scope="module")
def imgs():
    return tiny_images(num_silos=3, shape=(1, 12, 12), num_classes=3, n_range=(24, 36), n_test=20, noise=1.0, seed=3)


@pytest.mark.parametrize("shape, padding, features", [((1, 28, 28), None, 1600), ((3, 32, 32), None, 2304),
                                                      ((1, 8, 8), None, 256), ((1, 16, 16), "valid", 256)])
def test_shapes_match_the_paper(shape, padding, features):
    """VALID padding: 28×28 → 26 → 13 → 11 → 5 (64·25 = 1600 features), 32×32 → 2304 (App. C.1); the 8×8
    digits take SAME padding (8 → 8 → 4 → 4 → 2: 256 features)."""
    m = ConvNetModel(shape, 10, padding=padding)
    assert m.features == features
    mod = convnet_module(shape, 10, padding=padding)
    assert m.num_params == sum(p.numel() for p in mod.parameters())
    assert [(k, tuple(v.shape)) for k, v in mod.state_dict().items()] == list(m.shapes.items())


@pytest.mark.parametrize("shape", [(1, 28, 28), (3, 32, 32), (1, 8, 8)])
def test_per_example_grads_equal_opacus(shape):
    """torch.func per-example gradients of the flat ConvNet == Opacus GradSampleModule's grad_sample on the
    equal nn.Module (loss_reduction='sum': grad_sample is each example's own gradient), float32 tolerance."""
    from opacus import GradSampleModule

    torch.manual_seed(0)
    m = ConvNetModel(shape, 10)
    theta = m.init((), torch.Generator().manual_seed(1))
    mod = convnet_module(shape, 10)
    mod.load_state_dict(m.unflatten(theta))
    gsm = GradSampleModule(mod, loss_reduction="sum")
    b = 6
    x = torch.randn(b, math.prod(shape))
    y = torch.randint(0, 10, (b,)).float()
    torch.nn.functional.cross_entropy(gsm(x.reshape(b, *shape)), y.long(), reduction="sum").backward()
    ref = m.flatten({name: p.grad_sample for name, p in mod.named_parameters()})  # (b, D)
    xt = torch.cat([x, torch.ones(b, 1)], 1)
    G = m.per_example_grads(theta[None, None, None], xt[None, None], y[None, None], LogisticLoss())[0, 0, 0]
    assert G.shape == ref.shape
    scale = ref.abs().max()
    assert torch.allclose(G, ref, atol=1e-5 * float(scale), rtol=1e-4), float((G - ref).abs().max() / scale)
    # and the generic torch.func.vmap(grad) path gives the same
    Gf = m.per_example_grads_func(theta[None, None, None], xt[None, None], y[None, None], LogisticLoss())[0, 0, 0]
    assert torch.allclose(Gf, ref, atol=1e-5 * float(scale), rtol=1e-4), float((Gf - ref).abs().max() / scale)


@pytest.mark.parametrize("shape", [(3, 8, 8), (3, 12, 12), (1, 28, 28), (1, 29, 27)])  # 'same' (8×8) and 'valid'
def test_forward_matches_the_module_for_colour_images(shape):
    """The first convolution as a GEMM on the patches (channels-last) equals ``nn.Conv2d`` for C > 1 and both
    paddings."""
    m = ConvNetModel(shape, 5)
    theta = m.init((1,), torch.Generator().manual_seed(5))[0]
    x = torch.randn(7, math.prod(shape) + 1)
    mod = convnet_module(shape, 5)
    mod.load_state_dict(m.unflatten(theta))
    with torch.no_grad():
        torch.testing.assert_close(m.forward(theta, x), mod(x[:, :-1].reshape(7, *shape)), rtol=1e-5, atol=1e-5)


def test_example_chunk_must_be_positive():
    for bad in (0, -3, 2.5, True):
        with pytest.raises(ValueError, match="example_chunk"):
            ConvNetModel((1, 12, 12), 3, example_chunk=bad)


def test_forward_broadcasts_and_matches_the_module():
    m = ConvNetModel((1, 12, 12), 4)
    theta = m.init((2, 3), torch.Generator().manual_seed(2))  # (S, K, D)
    x = torch.randn(3, 5, 145)
    x[..., -1] = 1.0
    f = m.forward(theta, x)
    assert f.shape == (2, 3, 5, 4)
    mod = convnet_module((1, 12, 12), 4)
    mod.load_state_dict(m.unflatten(theta[1, 2]))
    with torch.no_grad():
        assert torch.allclose(f[1, 2], mod(x[2, :, :-1].reshape(5, 1, 12, 12)), atol=1e-5)
    # chunked evaluation changes nothing
    m2 = ConvNetModel((1, 12, 12), 4, silo_chunk=1)
    assert torch.allclose(m2.forward(theta, x), f, atol=1e-6)
    # IFCA's train_scores layout: centres (S, G, 1, D) against data (1, 1, K, N, p)
    g = m.forward(theta[:, :, None], x[None, None])
    assert g.shape == (2, 3, 3, 5, 4)
    assert torch.allclose(g[1, 0, 2], m.forward(theta[1, 0], x[2]), atol=1e-5)


@pytest.mark.parametrize("with_prox", [False, True])
def test_clipping_bounds_every_contribution(with_prox):
    """Each example's clipped contribution has norm <= c (one example per batch isolates it), and the sum
    equals Σ_i min(1, c/‖v_i‖) v_i computed from the per-example gradients."""
    m = ConvNetModel((1, 12, 12), 3, silo_chunk=2)
    S, K, b = 2, 3, 5
    theta = m.init((S, K), torch.Generator().manual_seed(4))
    x = torch.randn(S, K, b, 145)
    x[..., -1] = 1.0
    y = torch.randint(0, 3, (S, K, b)).float()
    valid = torch.rand(S, K, b) < 0.8
    clip = torch.full((S, K), 0.05)
    prox = 0.7 * torch.randn(S, K, m.num_params) if with_prox else None
    total, norms = m.clipped_grad_sum(theta, x, y, valid, LogisticLoss(), clip, prox)
    G = m.per_example_grads(theta[:, None], x, y, LogisticLoss())[:, 0]  # (S,K,b,D)
    v = G if prox is None else G + prox[:, :, None]
    nv = v.norm(dim=-1)
    assert (nv[valid] > 0.05).float().mean() > 0.9  # clipping binds: the test checks the bound, not a no-op
    contrib = (0.05 / (nv + 1e-6)).clamp(max=1)[..., None] * v * valid[..., None]
    assert (contrib.norm(dim=-1) <= 0.05 * (1 + 1e-5)).all()
    assert torch.allclose(total, contrib.sum(2), atol=1e-5)
    assert torch.allclose(norms, nv * valid, rtol=1e-4)
    for i in range(b):  # one example at a time: the returned sum is that example's contribution
        one = torch.zeros_like(valid)
        one[..., i] = valid[..., i]
        t1, _ = m.clipped_grad_sum(theta, x, y, one, LogisticLoss(), clip, prox)
        assert (t1.norm(dim=-1) <= 0.05 * (1 + 1e-5)).all()


@pytest.mark.parametrize("method, extra", [("local", {}), ("fedavg", {}), ("finetune", {}), ("mrmtl", {"lam": 0.1}),
                                           ("ditto", {"lam": 0.1}), ("mocha", {"lam": 0.1}),
                                           ("ifca", {"num_clusters": 2}),
                                           ("ifca-mrmtl", {"num_clusters": 2, "lam": 0.1})])
def test_every_method_trains_the_convnet_privately(imgs, method, extra):
    c = RunConfig(dataset="tiny-images", method=method, model="convnet", eps=2.0, delta=1e-4, lr=0.05, rounds=3,
                  batch_size=8, clip=1.0, **extra)
    r = run(c, imgs)
    assert np.isfinite(r.test_metric) and 0.0 <= r.test_metric <= 1.0
    assert np.all(r.eps_spent <= 2.0 * (1 + 1e-9)) and np.all(r.noise_multipliers > 0)
    r2 = run(c, imgs)
    assert r2.test_metric == r.test_metric  # seeded runs reproduce


def test_convnet_learns_without_privacy(imgs):
    base = dict(dataset="tiny-images", method="local", model="convnet", eps=math.inf, lr=0.1, batch_size=8)
    early = run(RunConfig(rounds=1, **base), imgs).test_metric
    trained = run(RunConfig(rounds=15, **base), imgs).test_metric
    assert trained > 0.9 and trained > early + 0.25  # 3 classes: chance is 1/3


def test_run_many_equals_run(imgs):
    cs = [RunConfig(dataset="tiny-images", method="mrmtl", model="convnet", eps=3.0, delta=1e-4, lam=lam, lr=0.05,
                    rounds=2, batch_size=8, seed=s) for s in (0, 1) for lam in (0.01, 1.0)]
    many = run_many(cs, imgs)
    for c, r in zip(cs, many):
        assert r.test_metric == pytest.approx(run(c, imgs).test_metric, abs=1e-6)


def test_silo_chunk_changes_only_rounding(imgs):
    c = RunConfig(dataset="tiny-images", method="fedavg", model="convnet", eps=3.0, delta=1e-4, lr=0.05, rounds=2,
                  batch_size=8, seed=1)
    a = run(c, imgs, keep_models=True, model_options={"silo_chunk": 1})
    b = run(c, imgs, keep_models=True, model_options={"silo_chunk": 3})
    np.testing.assert_allclose(a.models, b.models, atol=2e-5)


def test_convnet_on_tabular_data_raises_before_training():
    tab = tiny_federated("regression", num_silos=3)
    c = RunConfig(dataset="tiny", method="fedavg", model="convnet", rounds=1)
    with pytest.raises(ValueError, match="model='convnet' needs image data"):
        run(c, tab)
    with pytest.raises(ValueError, match="model"):
        build_model("convnet", 4, 1)
    with pytest.raises(ValueError, match="input_shape"):
        ConvNetModel((1, 5, 5), 10, padding="valid")
    with pytest.raises(ValueError, match="padding"):
        ConvNetModel((1, 28, 28), 10, padding="full")


def test_engine_agrees_with_opacus_reference_in_distribution():
    """FedAvg and local ConvNet DP-SGD: engine vs one Opacus PrivacyEngine per silo, same z_k, test
    accuracy means within 4 SE (SEEDS seeds each).  Measured (engine, 8 seeds): mean accuracy 0.54
    (FedAvg) and 0.58 (local), std 0.20 and 0.09, chance 1/3, so 4 SE ≈ 0.11–0.23 here: the test catches a
    gross error (no clipping, wrong noise scale, wrong aggregation), not a subtle one; the exact
    comparisons are the per-example-gradient and clipping tests above."""
    from fedtrain.reference import reference_run

    imgs = tiny_images(num_silos=3, shape=(1, 12, 12), num_classes=3, n_range=(24, 36), n_test=20, noise=0.3, seed=3)
    for method in ("fedavg", "local"):
        c = RunConfig(dataset="tiny-images", method=method, model="convnet", eps=8.0, delta=1e-4, lr=0.3, rounds=3,
                      batch_size=8, clip=1.0)
        e, r, se = engine_vs_reference(imgs, c, SEEDS)
        assert abs(e.mean() - r.mean()) <= 4 * se, (method, e.mean(), r.mean(), se)
        eng0 = run(c.replace(seed=0), imgs)
        ref0 = reference_run(c.replace(seed=100), imgs, noise_multipliers=eng0.noise_multipliers, accountant_check=False)
        assert ref0.steps.tolist() == eng0.steps.tolist()


def test_reference_rejects_what_it_does_not_run(imgs):
    from fedtrain.reference import reference_run

    c = RunConfig(dataset="tiny-images", method="mrmtl", model="convnet", eps=2.0, delta=1e-4, lam=0.1, rounds=1)
    with pytest.raises(ValueError, match="post-noise"):
        reference_run(c, imgs)
    if not torch.cuda.is_available():  # the GPU benchmark's Opacus loop, on a machine without CUDA
        with pytest.raises(ValueError, match="CUDA is not available"):
            reference_run(c.replace(method="fedavg", device="cuda"), imgs)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_reference_agrees_with_cpu_reference(imgs):  # pragma: no cover - runs on GPU machines only
    """The Opacus loop on the GPU (the GPU benchmark's reference): the same accounting and, non-privately
    (no noise; the sampler draws on the CPU with the same seed), the same result as on the CPU."""
    from fedtrain.reference import reference_run

    c = RunConfig(dataset="tiny-images", method="fedavg", model="convnet", eps=float("inf"), lr=0.05, rounds=2,
                  batch_size=8)
    a, b = reference_run(c.replace(device="cuda"), imgs), reference_run(c, imgs)
    np.testing.assert_array_equal(a.steps, b.steps)
    assert a.test_metric == pytest.approx(b.test_metric, abs=0.02)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_convnet_matches_cpu_in_accounting(imgs):  # pragma: no cover - runs on GPU machines only
    c = RunConfig(dataset="tiny-images", method="mrmtl", model="convnet", eps=2.0, delta=1e-4, lam=0.1, lr=0.05,
                  rounds=2, batch_size=8)
    a, b = run(c.replace(device="cuda"), imgs), run(c, imgs)
    np.testing.assert_allclose(a.noise_multipliers, b.noise_multipliers)
    np.testing.assert_array_equal(a.steps, b.steps)
    assert np.isfinite(a.test_metric)


@pytest.mark.parametrize("shape, example_chunk", [((1, 28, 28), 4), ((1, 28, 28), 25), ((3, 8, 8), 2),
                                                   ((3, 32, 32), 3), ((1, 30, 29), 5), ((1, 12, 12), 4),
                                                   ((1, 10, 10), 4)])
def test_padded_batches_compute_only_the_real_prefix(shape, example_chunk):
    """The CPU path computes only the real examples when they form a prefix of the padded Poisson batch (an
    empty batch included) and falls back to the whole row otherwise, in micro-batches of ``example_chunk``
    examples (the last one partial): same sums and norms as the generic vmap(grad) path, with and without the
    prox term, in float64.  The shapes include second-convolution outputs of odd sides, which the CPU path
    computes only where the second pool reads them (28×28: 11×11 → 10×10; 32×32: 13 → 12; 30×29: 12×11 → 12×10;
    12×12: 3 → 2), and of even sides (10×10: 2×2), which it computes whole."""
    from fedtrain.losses import loss_for_task
    from fedtrain.models import FunctionalModel, build_model

    torch.manual_seed(0)
    p = math.prod(shape)
    m = build_model("convnet", p, 10, input_shape=shape, dtype=torch.float64, example_chunk=example_chunk)
    loss = loss_for_task("multiclass")
    S, K, b = 2, 3, 9
    theta = m.init((S, K), random=True).to(torch.float64)
    x = torch.rand(1, K, b, p + 1, dtype=torch.float64)
    x[..., -1] = 1.0
    y = torch.randint(0, 10, (1, K, b))
    prefix = torch.zeros(1, K, b, dtype=torch.bool)
    for k, n in enumerate([0, 5, 9]):
        prefix[0, k, :n] = True
    holes = prefix.clone()
    holes[0, 2, 3] = False
    clip = torch.full((S, K), 0.5, dtype=torch.float64)
    prox = 0.01 * torch.randn(S, K, theta.shape[-1], dtype=torch.float64)
    for valid, pr in ((prefix, None), (prefix, prox), (holes, None), (holes, prox)):
        t1, n1 = m.clipped_grad_sum(theta, x, y, valid, loss, clip, pr)
        t2, n2 = FunctionalModel.clipped_grad_sum(m, theta, x, y, valid, loss, clip, pr)
        torch.testing.assert_close(t1, t2, rtol=1e-10, atol=1e-12)
        torch.testing.assert_close(n1, n2, rtol=1e-10, atol=1e-12)
    assert float(t1[:, 0].abs().max()) == 0.0  # the empty batch sums to zero


@pytest.mark.parametrize("shape", [(1, 12, 12), (3, 8, 8)])
def test_cuda_batched_path_equals_the_cpu_path_on_cpu(shape):
    """The CUDA path's arithmetic (all models at once: ``_clipped_grad_sum_batched`` and the batched forward
    ``_layers``), run here on the CPU in float64, equals the CPU per-model path: sums and norms with and
    without the prox term, with padding that is not a prefix, for U = 2 streams × c = 2 configurations."""
    from fedtrain.losses import loss_for_task

    torch.manual_seed(1)
    p = math.prod(shape)
    m = ConvNetModel(shape, 4, dtype=torch.float64, example_chunk=3, silo_chunk=2)  # chunks: 3 silos as 2 + 1
    loss = loss_for_task("multiclass")
    U, c, K, b = 2, 2, 3, 7
    theta = m.init((U * c, K), torch.Generator().manual_seed(2)).to(torch.float64)
    x = torch.rand(U, K, b, p + 1, dtype=torch.float64)
    x[..., -1] = 1.0
    y = torch.randint(0, 4, (U, K, b))
    valid = torch.rand(U, K, b) < 0.7
    valid[0, 0] = False  # an empty batch
    clip = torch.full((U * c, K), 0.3, dtype=torch.float64)
    prox = 0.01 * torch.randn(U * c, K, m.num_params, dtype=torch.float64)
    for pr in (None, prox):
        t1, n1 = m.clipped_grad_sum(theta, x, y, valid, loss, clip, pr)
        t2, n2 = m._clipped_grad_sum_batched(theta, x, y, valid, loss, clip, pr)
        torch.testing.assert_close(t2, t1, rtol=1e-10, atol=1e-12)
        torch.testing.assert_close(n2, n1, rtol=1e-10, atol=1e-12)
    # the batched forward (CUDA's) against the per-model channels-last forward (CPU's)
    P = m.unflatten(theta.reshape(U * c * K, -1))
    xs = x[:, None].expand(U, c, K, b, p + 1).reshape(U * c * K, b, p + 1)
    torch.testing.assert_close(m._layers(P, xs)[0].reshape(U, c, K, b, 4),
                               m.forward(theta.reshape(U, c, K, -1), x[:, None]), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("task, out", [("regression", 1), ("binary", 1), ("multiclass", 5)])
def test_cpu_path_uses_each_loss_derivative_correctly(task, out):
    """The CPU path backpropagates by hand from :meth:`Loss.grad` (no autograd graph): for the squared, hinge
    and softmax losses its clipped sums and norms equal the generic ``vmap(grad(loss.value))`` path in
    float64, with and without the prox term."""
    from fedtrain.losses import loss_for_task
    from fedtrain.models import FunctionalModel

    torch.manual_seed(3)
    m = ConvNetModel((1, 10, 10), out, dtype=torch.float64, example_chunk=3)
    loss = loss_for_task(task)
    S, K, b = 1, 2, 5
    theta = m.init((S, K), torch.Generator().manual_seed(5)).to(torch.float64)
    x = torch.rand(1, K, b, 101, dtype=torch.float64)
    x[..., -1] = 1.0
    if task == "regression":
        y = torch.randn(1, K, b, dtype=torch.float64)
    elif task == "binary":
        y = torch.randint(0, 2, (1, K, b)).to(torch.float64) * 2 - 1
    else:
        y = torch.randint(0, out, (1, K, b)).to(torch.float64)
    valid = torch.ones(1, K, b, dtype=torch.bool)
    clip = torch.full((S, K), 0.2, dtype=torch.float64)
    for pr in (None, 0.01 * torch.randn(S, K, m.num_params, dtype=torch.float64)):
        t1, n1 = m.clipped_grad_sum(theta, x, y, valid, loss, clip, pr)
        t2, n2 = FunctionalModel.clipped_grad_sum(m, theta, x, y, valid, loss, clip, pr)
        assert float(n2.max()) > 0  # the gradients are not all zero (hinge: some margins below 1)
        torch.testing.assert_close(t1, t2, rtol=1e-10, atol=1e-12)
        torch.testing.assert_close(n1, n2, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("workers", [2, 3])
def test_models_on_several_cores_give_the_one_thread_numbers(workers):
    """``cpu_workers``: the CPU path spreads the models (silo × configuration) over threads, each running its
    kernels on one core, so the clipped sums, norms and outputs are bit for bit those of a serial one-thread run
    (with the prox term, an empty batch and a padded one); torch's thread count is restored afterwards."""
    from fedtrain.losses import loss_for_task
    from fedtrain.models import build_model

    torch.manual_seed(0)
    shape = (1, 28, 28)
    p = math.prod(shape)
    serial = build_model("convnet", p, 10, input_shape=shape, cpu_workers=1)
    spread = build_model("convnet", p, 10, input_shape=shape, cpu_workers=workers)
    loss = loss_for_task("multiclass")
    U, c, K, b = 2, 2, 3, 30
    theta = serial.init((U * c, K), torch.Generator().manual_seed(3))
    x = torch.rand(U, K, b, p + 1)
    x[..., -1] = 1.0
    y = torch.randint(0, 10, (U, K, b))
    valid = torch.rand(U, K, b) < 0.8
    valid[0, 1] = False  # an empty batch
    clip = torch.full((U * c, K), 0.5)
    prox = 0.01 * torch.randn(U * c, K, theta.shape[-1])
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        want = [serial.clipped_grad_sum(theta, x, y, valid, loss, clip, pr) for pr in (None, prox)]
        want_out = serial.forward(theta.reshape(U, c, K, -1), x[:, None])
        torch.set_num_threads(2)
        got = [spread.clipped_grad_sum(theta, x, y, valid, loss, clip, pr) for pr in (None, prox)]
        got_out = spread.forward(theta.reshape(U, c, K, -1), x[:, None])
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
    for (t1, n1), (t2, n2) in zip(want, got):
        assert torch.equal(t1, t2) and torch.equal(n1, n2)
    assert torch.equal(want_out, got_out)


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2"])
def test_cpu_workers_must_be_a_positive_integer(bad):
    with pytest.raises(ValueError, match="cpu_workers must be a positive integer or None"):
        ConvNetModel((1, 28, 28), 10, cpu_workers=bad)
