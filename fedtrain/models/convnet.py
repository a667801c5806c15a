"""The MR-MTL paper's ConvNet (App. C.1) with blockwise per-example gradients, and the equal ``nn.Module``."""
from __future__ import annotations

import collections
import math
from concurrent.futures import ThreadPoolExecutor
from typing import Mapping, NamedTuple

import torch
import torch.nn.functional as F

from fedtrain.losses import Loss
from fedtrain.models.base import FunctionalModel

__all__ = ["ConvNetModel", "convnet_module", "CONVNET_CHANNELS", "CONVNET_MIN_VALID", "CONVNET_EXAMPLE_CHUNK"]

#: Output channels of the ConvNet's two 3×3 convolutions (App. C.1: 32 then 64).
CONVNET_CHANNELS = (32, 64)
#: Smallest side the ConvNet takes without padding (two VALID 3×3 convolutions, each followed by a 2×2 pool).
CONVNET_MIN_VALID = 10
#: Examples per micro-batch of the ConvNet's CPU clipped-gradient sum (:meth:`ConvNetModel.clipped_grad_sum`):
#: small enough that one micro-batch's activations and patches stay in cache and are reused by the allocator.
CONVNET_EXAMPLE_CHUNK = 25


#: ATen's kernels the CPU path calls directly (max-pool with indices and its backward, convolution backward).
_aten = torch.ops.aten
#: The 2×2 max-pool's arguments to ATen: kernel, stride, padding, dilation, ceil_mode.
_POOL = ([2, 2], [2, 2], [0, 0], [1, 1], False)


class _Geometry(NamedTuple):
    """The CPU path's sides and sizes: input channels and sides, the two convolutions' channels, the padding, the
    first convolution's output sides and the first pool's, the second convolution's output sides (whole and as
    computed), whether it is cropped, the rows and columns of its input it reads, and the two convolutions' output
    positions."""

    C: int
    H: int
    W: int
    c1: int
    c2: int
    pad: int
    h1s: int
    w1s: int
    hp: int
    wp: int
    h2s: int
    w2s: int
    h2u: int
    w2u: int
    crop: bool
    hc: int
    wc: int
    L1: int
    L2: int


def _channels_last(ws: torch.Tensor, n: int, h: int, w: int, ch: int) -> torch.Tensor:
    """An NCHW view of the workspace ``ws``, laid out channels-last."""
    return ws[: n * h * w * ch].view(n, h, w, ch).permute(0, 3, 1, 2)


def _sqnorm(v: torch.Tensor) -> torch.Tensor:
    """Squared Euclidean norm over the last dimension, without the temporary ``v²`` (a fused reduction)."""
    return torch.linalg.vector_norm(v, dim=-1).square()


class ConvNetModel(FunctionalModel):
    """The MR-MTL paper's ConvNet (App. C.1, Het. CIFAR-10 and Rotated & Masked MNIST).

    ``Conv3×3(C→32) → ReLU → MaxPool2×2/2 → Conv3×3(32→64) → ReLU → MaxPool2×2/2 → Linear(→o)``,
    ``padding="valid"`` (the paper's "VALID"): 28×28×1 → 26 → 13 → 11 → 5, so 64·5·5 = 1600 features
    (``D = 34 826`` for 10 classes); 32×32×3 → 30 → 15 → 13 → 6, 2304 features (``D = 42 442``).  Inputs
    smaller than :data:`CONVNET_MIN_VALID` on a side (the 8×8 scikit-learn digits) would vanish after the
    second pool, so for them ``padding="same"`` (zero padding 1) is the default: 8×8 → 8 → 4 → 4 → 2
    (256 features); pass ``padding`` to choose.  The input arrives flattened channel-major with the
    engine's bias column appended (``x̃ = [x, 1]``, ``p = C·H·W + 1``); the bias column is dropped.

    Parameters (flat order): ``conv1.weight (32,C,3,3)``, ``conv1.bias (32,)``, ``conv2.weight (64,32,3,3)``,
    ``conv2.bias (64,)``, ``fc.weight (o,F)``, ``fc.bias (o,)``: the names and shapes of
    :func:`convnet_module`'s ``nn.Module``, so a flat vector maps one-to-one onto its ``state_dict``.
    Initialization: PyTorch's default for ``Conv2d``/``Linear`` (Kaiming-uniform weights with
    ``a = √5``, i.e. U(±1/√fan_in), and biases U(±1/√fan_in)), always random (all silos share the
    draw; IFCA's centres each draw their own).  Per-example gradients are computed as Opacus' grad samplers do
    (patches × gradients of the pre-activations, :meth:`clipped_grad_sum`): on CPU one model at a time in
    micro-batches of ``example_chunk`` examples (:data:`CONVNET_EXAMPLE_CHUNK`), convolutions as GEMMs on their
    patches and the backward written out with ATen's kernels, the models spread over ``cpu_workers`` threads
    (default: torch's thread count), each on one core, so the numbers are those of a one-thread run; on CUDA all
    models at once; the generic ``torch.func`` path (:meth:`per_example_grads_func`) is kept for checks.
    :meth:`forward` runs the models one at a time on CPU (channels-last, over ``cpu_workers`` threads) and batched
    on CUDA, in chunks of at most ``GENERIC_MAX_ENTRIES`` input entries.
    """

    random_init = True

    def __init__(self, input_shape: tuple[int, int, int], out_dim: int, dtype: torch.dtype = torch.float32,
                 device: str | torch.device = "cpu", *, padding: str | None = None, silo_chunk: int | None = None,
                 example_chunk: int = CONVNET_EXAMPLE_CHUNK, cpu_workers: int | None = None):
        super().__init__(dtype, device, silo_chunk)
        if not isinstance(example_chunk, int) or isinstance(example_chunk, bool) or example_chunk < 1:
            raise ValueError(f"example_chunk must be a positive integer (got {example_chunk!r})")
        if cpu_workers is not None and (not isinstance(cpu_workers, int) or isinstance(cpu_workers, bool)
                                        or cpu_workers < 1):
            raise ValueError(f"cpu_workers must be a positive integer or None (got {cpu_workers!r})")
        self.example_chunk = example_chunk
        self.cpu_workers = cpu_workers
        shape = tuple(input_shape) if input_shape is not None else ()
        if len(shape) != 3 or not all(isinstance(v, (int,)) or hasattr(v, "__index__") for v in shape) \
                or min(int(v) for v in shape) < 1:
            raise ValueError(f"input_shape must be (C, H, W) with positive integers (got {input_shape!r})")
        C, H, W = (int(v) for v in shape)
        if padding is None:
            padding = "valid" if min(H, W) >= CONVNET_MIN_VALID else "same"
        if padding not in ("valid", "same"):
            raise ValueError(f"padding must be 'valid' or 'same' (got {padding!r})")
        pad = 0 if padding == "valid" else 1
        h, w = H, W
        for _ in range(2):
            h, w = (h + 2 * pad - 2) // 2, (w + 2 * pad - 2) // 2
        if h < 1 or w < 1:
            raise ValueError(f"input_shape {shape} is too small for the ConvNet with padding={padding!r} "
                             f"(each side must be >= {CONVNET_MIN_VALID} for 'valid', >= 4 for 'same')")
        self.input_shape = (C, H, W)
        self.padding, self.pad = padding, pad
        self.in_dim = C * H * W + 1
        self.out_dim = int(out_dim)
        c1, c2 = CONVNET_CHANNELS
        self.features = c2 * h * w
        self.shapes = {"conv1.weight": (c1, C, 3, 3), "conv1.bias": (c1,), "conv2.weight": (c2, c1, 3, 3),
                       "conv2.bias": (c2,), "fc.weight": (self.out_dim, self.features), "fc.bias": (self.out_dim,)}

    def init(self, lead, generator=None, *, random=True):
        lead = tuple(lead)
        parts = {}
        fan = {"conv1": self.input_shape[0] * 9, "conv2": CONVNET_CHANNELS[0] * 9, "fc": self.features}
        for name, shape in self.shapes.items():
            bound = 1.0 / math.sqrt(fan[name.split(".")[0]])
            u = torch.rand(lead + shape, generator=generator, dtype=self.dtype, device=self.device)
            parts[name] = (2.0 * u - 1.0) * bound
        return self.flatten(parts)

    def apply(self, params, x):
        """Single parameter set (exact shapes), ``x (..., p)`` → ``(..., o)``."""
        lead = x.shape[:-1]
        img = x[..., : self.in_dim - 1].reshape(-1, *self.input_shape)
        h = F.max_pool2d(F.relu(F.conv2d(img, params["conv1.weight"], params["conv1.bias"], padding=self.pad)), 2)
        h = F.max_pool2d(F.relu(F.conv2d(h, params["conv2.weight"], params["conv2.bias"], padding=self.pad)), 2)
        f = F.linear(h.flatten(1), params["fc.weight"], params["fc.bias"])
        return f.reshape(*lead, self.out_dim)

    # -- the batched path: G models at once, convolutions as unfold + batched matmul -------------------------
    def _layers(self, P: dict[str, torch.Tensor], x: torch.Tensor, keep: bool = False):
        """Forward of ``G`` models on their own batches: params ``{name: (G, *shape)}``, ``x (G, b, p)``.

        Each convolution is ``unfold`` (im2col) and a batched matmul, so the patches ``A`` and the
        pre-activations ``Z`` of every layer are at hand for the per-example weight gradients
        ``∂ℓ_i/∂W = Σ_l (∂ℓ_i/∂Z_{i,l}) A_{i,l}ᵀ`` (the computation Opacus' conv grad sampler does, here
        for all models at once).  Returns the output ``(G, b, o)`` and, with ``keep``, the list of
        ``(A, Z)`` per layer.
        """
        G, b = x.shape[0], x.shape[1]
        h = x[..., : self.in_dim - 1].reshape(G * b, *self.input_shape)
        saved = []
        for layer in ("conv1", "conv2"):
            w = P[layer + ".weight"]
            oc = w.shape[1]
            hs, ws = h.shape[-2] + 2 * self.pad - 2, h.shape[-1] + 2 * self.pad - 2
            A = F.unfold(h, 3, padding=self.pad).reshape(G, b, -1, hs * ws)  # (G,b,C·9,L)
            Z = torch.matmul(w.reshape(G, 1, oc, -1), A).add_(P[layer + ".bias"][:, None, :, None])  # (G,b,oc,L)
            saved.append((A, Z))
            # ReLU after the pool: max and ReLU commute (both monotone), so the values and gradients are
            # those of ReLU → MaxPool, at a quarter of the ReLU's cost
            h = F.relu(F.max_pool2d(Z.reshape(G * b, oc, hs, ws), 2))
        A = h.reshape(G, b, -1)  # (G,b,F)
        Z = torch.matmul(A, P["fc.weight"].transpose(-1, -2)) + P["fc.bias"][:, None, :]  # (G,b,o)
        saved.append((A, Z))
        return Z, (saved if keep else None)

    def _grad_parts(self, theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor, loss: Loss) -> dict[str, torch.Tensor]:
        """Per-example gradients by parameter: ``{name: (G, b, *shape-flattened)}`` for ``G = U·c·K`` models.

        Computed like Opacus' grad samplers, vectorized over all models: one forward (:meth:`_layers`), one
        backward of the summed loss to the pre-activations (examples are independent, so
        ``∂(Σ_j ℓ_j)/∂Z_i = ∂ℓ_i/∂Z_i``), then a batched matmul with the saved patches.
        """
        U, c, K, D = theta.shape
        b, p = x.shape[2], x.shape[3]
        G = U * c * K
        xs = x[:, None].expand(U, c, K, b, p).reshape(G, b, p)
        ys = y[:, None].expand(U, c, K, b).reshape(G, b)
        with torch.enable_grad():
            P = {k: v.detach() for k, v in self.unflatten(theta.reshape(G, D)).items()}
            for v in P.values():
                v.requires_grad_(True)
            out, saved = self._layers(P, xs.detach(), keep=True)
            total = loss.value(out, ys).sum()
            grads = torch.autograd.grad(total, [Z for _, Z in saved])
        parts = {}
        for (A, _), gZ, layer in zip(saved, grads, ("conv1", "conv2", "fc")):
            A = A.detach()
            if layer == "fc":
                parts[layer + ".weight"] = gZ[..., :, None] * A[..., None, :]  # (G,b,o,F)
                parts[layer + ".bias"] = gZ
            else:
                parts[layer + ".weight"] = torch.matmul(gZ, A.transpose(-1, -2))  # (G,b,oc,C·9)
                parts[layer + ".bias"] = gZ.sum(-1)
        return {name: parts[name].reshape(G, b, -1) for name in self.shapes}

    def per_example_grads(self, theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor, loss: Loss) -> torch.Tensor:
        """Per-example gradients ``(U, c, K, b, D)`` (the arguments of :meth:`FunctionalModel.per_example_grads`),
        from :meth:`_grad_parts`.  Equal to ``vmap(grad(...))`` (the generic path,
        :meth:`per_example_grads_func`) and to Opacus' ``grad_sample`` up to float32 rounding
        (tests/engine/test_fedtrain_convnet.py)."""
        U, c, K, D = theta.shape
        parts = self._grad_parts(theta, x, y, loss)
        return torch.cat(list(parts.values()), -1).reshape(U, c, K, x.shape[2], D)

    def _apply_cl(self, params: dict[str, torch.Tensor], x: torch.Tensor) -> torch.Tensor:
        """:meth:`apply` for ``x (b, p)`` with the activations in channels-last layout (mkldnn convolutions,
        a fast ``max_pool2d`` on CPU), the first convolution a GEMM on its patches (:meth:`_conv1`)."""
        n = x.shape[0]
        img = x[:, : self.in_dim - 1].reshape(n, *self.input_shape)
        z = self._conv1(self._conv1_patches(img), self._conv1_weight(params))
        h = F.relu(F.max_pool2d(z, 2))
        h = F.relu(F.max_pool2d(F.conv2d(h, params["conv2.weight"], params["conv2.bias"], padding=self.pad), 2))
        return F.linear(h.flatten(1), params["fc.weight"], params["fc.bias"])

    def _conv1_patches(self, img: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
        """The first convolution's patches with a row of ones (the bias'), ``(n, 9·C + 1, L1)``, rows in the
        weight's own ``(c, i, j)`` order (``F.unfold``'s): one strided copy from the windows of ``img (n, C, H, W)``
        (any strides, e.g. rows of the engine's padded data), into ``out`` (a reused workspace whose last row
        already holds the ones) if given."""
        if self.pad:
            img = F.pad(img, (self.pad,) * 4)
        n, C = img.shape[:2]
        win = img.unfold(2, 3, 1).unfold(3, 3, 1).permute(0, 1, 4, 5, 2, 3)  # (n, C, 3, 3, hs, ws): a view
        if out is None:
            out = img.new_ones(n, 9 * C + 1, win.shape[-2] * win.shape[-1])
        out[:, :-1].view(win.shape).copy_(win)
        return out

    @staticmethod
    def _conv1_weight(P: Mapping[str, torch.Tensor]) -> torch.Tensor:
        """The first convolution's ``[weight; bias]`` as ``(9·C + 1, 32)``, rows matching :meth:`_conv1_patches`."""
        w = P["conv1.weight"]
        return torch.cat([w.reshape(w.shape[0], -1).t(), P["conv1.bias"][None]], 0)

    def _conv1(self, A1: torch.Tensor, W1: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
        """The first convolution as one batched GEMM ``A1ᵀ W1`` on its patches (:meth:`_conv1_patches`),
        returned ``(n, 32, h, w)`` in the channels-last layout (``F.conv2d`` with one input channel is slow on
        CPU and returns NCHW); into ``out`` (``n·L1·32`` entries) if given."""
        n = A1.shape[0]
        C, H, W = self.input_shape
        hs, ws = H + 2 * self.pad - 2, W + 2 * self.pad - 2
        z = torch.bmm(A1.transpose(1, 2), W1.expand(n, -1, -1),
                      out=None if out is None else out[: n * hs * ws * W1.shape[1]].view(n, hs * ws, W1.shape[1]))
        return z.view(n, hs, ws, W1.shape[1]).permute(0, 3, 1, 2)

    def _patches(self, h: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
        """im2col of ``h (b, C, H, W)`` for a 3×3 kernel: ``(b, L, 9·C)``, column order ``(i, j, c)`` (the
        weight's ``(oc, 3, 3, C)`` layout), copied from a strided view of the channels-last layout in runs of
        ``C`` contiguous values; into ``out`` (a reused workspace of at least ``b·L·9·C`` entries) if given."""
        t = h.permute(0, 2, 3, 1)  # (b, H, W, C): a view for channels-last h
        if self.pad:
            t = F.pad(t, (0, 0, self.pad, self.pad, self.pad, self.pad))
        t = t.unfold(1, 3, 1).unfold(2, 3, 1).permute(0, 1, 2, 4, 5, 3)  # (b, hs, ws, 3, 3, C)
        if out is None:
            return t.reshape(h.shape[0], t.shape[1] * t.shape[2], -1)
        buf = out.reshape(-1)[: t.numel()].view(t.shape)
        buf.copy_(t)
        return buf.view(h.shape[0], t.shape[1] * t.shape[2], -1)

    def clipped_grad_sum(self, theta, x, y, valid, loss: Loss, clip, prox=None):
        """:meth:`FunctionalModel.clipped_grad_sum` (same arguments and returns), one model at a time (the models
        shared out over ``cpu_workers`` threads, each running its kernels on one core).

        For each of the ``U·c·K`` models, in micro-batches of ``example_chunk`` examples: the forward (each
        convolution a GEMM on its patches, :meth:`_conv1` and :meth:`_patches`, the patches being needed again for the
        per-example gradients; activations channels-last), then the backward to the pre-activations ``Z`` of the three
        layers written out with ATen's backward kernels (the loss' derivative :meth:`Loss.grad`, ReLU and max-pool
        backward, the second convolution's backward-data; no weight gradients and no autograd graph), then the
        per-example weight gradients ``∂ℓ_i/∂W = (∂ℓ_i/∂Z_i) A_iᵀ`` from the patches ``A`` (as Opacus' conv grad
        sampler): one batched GEMM per convolution (the first one's patches carry a row of ones, so its product holds
        the bias gradient too).  The linear layer's per-example gradient ``g_i ã_iᵀ`` (``ã = [a, 1]``) is never formed
        without ``prox``: its squared norm is ``‖g_i‖²‖ã_i‖²`` and its clipped sum the matrix product ``(f ⊙ g)ᵀ ã``.
        With ``prox`` the norm of ``G_i + P`` is taken from the formed blocks.  Invalid examples get factor 0.  Without
        padding, when the second convolution's output has an odd side (28×28 images: 11×11), the second pool's floor
        never reads its last row or column, so that convolution's forward and per-example weight gradients are
        computed on the outputs the pool reads (10×10; an example's arithmetic falls from 14.3 to 12.8 MFLOP,
        ``benchmarks/bench_convnet.py``'s ``convnet_macs``); its input gradient and its
        bias' sum still run on the whole grid, the skipped outputs' gradients being 0, so that they add in the same
        order (the sums and norms are bit for bit those of the whole-grid computation on the machines measured,
        benchmarks/README.md).  Large
        intermediates live in workspaces reused by every micro-batch.  A loop over models keeps each model's
        activations in cache; on CPU it is faster than one batched computation over all models
        (benchmarks/bench_convnet.py).  On CUDA the batched :meth:`_clipped_grad_sum_batched` runs; tests hold both
        equal to autograd's and Opacus' per-example gradients.
        """
        if theta.device.type != "cpu":  # many small kernels would be launch-bound: batch all models
            return self._clipped_grad_sum_batched(theta, x, y, valid, loss, clip, prox)
        S, K, D, U, b, c, th, pb, clip_u = self._streams(theta.detach(), x, clip,
                                                         None if prox is None else prox.detach())
        okf = valid.to(theta.dtype)
        totals = torch.zeros(U, c, K, D, dtype=theta.dtype, device=theta.device)
        norms = torch.zeros(U, c, K, b, dtype=theta.dtype, device=theta.device)
        g = self._cpu_geometry()
        kw = dict(dtype=theta.dtype, device=theta.device)

        def work(models: list[tuple[int, int]]) -> None:  # the (stream, silo) models of one worker
            ws = self._workspaces(g, kw)
            for u, k in models:
                self._silo_clipped_sum(u, k, okf[u, k], x, y, th, pb, clip_u, c, loss, g, ws, kw, totals, norms)

        models = [(u, k) for u in range(U) for k in range(K)]
        workers = min(self._cpu_workers(), len(models))
        self._map_models(work, [models[i::workers] for i in range(workers)])  # a share of the models each
        return totals.reshape(S, K, D), norms.reshape(S, K, b)

    def _cpu_geometry(self) -> _Geometry:
        """The CPU path's sides and sizes (:class:`_Geometry`) for this model's input shape."""
        C, H, W = self.input_shape
        c1, c2 = CONVNET_CHANNELS
        pad = self.pad
        h1s, w1s = H + 2 * pad - 2, W + 2 * pad - 2  # the first convolution's output
        hp, wp = h1s // 2, w1s // 2  # after the first pool
        h2s, w2s, h2u, w2u = self._conv2_grid()
        hc, wc = h2u + 2 - 2 * pad, w2u + 2 - 2 * pad  # the second convolution's input rows and columns it reads
        return _Geometry(C, H, W, c1, c2, pad, h1s, w1s, hp, wp, h2s, w2s, h2u, w2u, (h2u, w2u) != (h2s, w2s), hc, wc,
                         h1s * w1s, h2u * w2u)

    def _workspaces(self, g: _Geometry, kw: dict) -> dict[str, torch.Tensor | None]:
        """One worker's workspaces, reused by every micro-batch of ``example_chunk`` examples (the first patches'
        last row: the bias' ones)."""
        mb = self.example_chunk
        return {
            "A1": torch.ones(mb, 9 * g.C + 1, g.L1, **kw), "A2": torch.empty(mb * g.L2 * 9 * g.c1, **kw),
            "Z1": torch.empty(mb * g.L1 * g.c1, **kw), "gZ1": torch.empty(mb * g.L1 * g.c1, **kw),
            "gZ2": torch.empty(mb * g.L2 * g.c2, **kw), "B2": torch.empty(mb, g.c2, 9 * g.c1, **kw),
            "h1": torch.empty(mb * g.hp * g.wp * g.c1, **kw), "Z2": torch.empty(mb * g.L2 * g.c2, **kw),
            "i1": torch.empty(mb * g.hp * g.wp * g.c1, dtype=torch.int64, device=kw["device"]),
            # the second convolution's pre-activation gradient on all its outputs (0 where the pool does not read),
            # for its input gradient and its bias' sum: the same kernels on the same values as without the crop
            "gb": torch.zeros(mb * g.h2s * g.w2s * g.c2, **kw) if g.crop else None,
        }

    def _silo_clipped_sum(self, u: int, k: int, ok_full, x, y, th, pb, clip_u, c: int, loss: Loss, g: _Geometry,
                          ws: dict, kw: dict, totals: torch.Tensor, norms: torch.Tensor) -> None:
        """Stream ``u``'s silo ``k`` for each of its ``c`` configurations: the clipped sum into ``totals[u, j, k]``
        and the per-example norms into ``norms[u, j, k]``, micro-batch by micro-batch."""
        # Poisson batches are padded to the longest row; when the real examples form a prefix (the geometric and
        # sorted-keys samplers), only that prefix is computed (the padding's factor is 0)
        b, mb = ok_full.shape[0], self.example_chunk
        nv = int(ok_full.sum())
        bb = nv if bool(ok_full[:nv].all()) else b
        if bb == 0:
            return
        Ps = [self.unflatten(th[u, j, k]) for j in range(c)]
        W1s = [self._conv1_weight(P) for P in Ps]
        W2s = [P["conv2.weight"].permute(0, 2, 3, 1).reshape(g.c2, -1) for P in Ps]
        pps = [None if pb is None else self._blocks(self.unflatten(pb[u, j, k])) for j in range(c)]
        # the accumulators' shapes: those of _blocks
        block_shapes = [(9 * g.C + 1, g.c1), (g.c2, 9 * g.c1), (g.c2,), self.shapes["fc.weight"], self.shapes["fc.bias"]]
        acc = [[torch.zeros(s, **kw) for s in block_shapes] for _ in range(c)]  # Σ_i f_i · block_i
        for s0 in range(0, bb, mb):  # micro-batches of examples: activations stay in cache
            s1 = min(bb, s0 + mb)
            n = s1 - s0
            ok, yk = ok_full[s0:s1], y[u, k, s0:s1]
            A1 = self._conv1_patches(x[u, k, s0:s1, : self.in_dim - 1].reshape(n, g.C, g.H, g.W), out=ws["A1"][:n])
            for j in range(c):
                pp = pps[j]
                blocks, sq, gZ3, a3 = self._example_blocks(A1, Ps[j], W1s[j], W2s[j], pp, yk, loss, g, ws, n)
                nrm = torch.mul(sq.sqrt_(), ok, out=norms[u, j, k, s0:s1])
                factor = (clip_u[u, j, k] / (nrm + 1e-6)).clamp_(max=1.0).mul_(ok)  # (n,)
                for v, a_ in zip(blocks, acc[j]):
                    a_.view(-1).addmv_(v.flatten(1).t(), factor)
                if pp is None:
                    fg = gZ3 * factor[:, None]
                    acc[j][3].addmm_(fg.t(), a3)
                    acc[j][4].add_(fg.sum(0))
        for j in range(c):
            torch.cat(self._flat_from_blocks(acc[j]), out=totals[u, j, k])

    def _example_blocks(self, A1, P, W1, W2, pp, yk, loss: Loss, g: _Geometry, ws: dict, n: int):
        """One micro-batch of ``n`` examples of one model (parameters ``P``; ``W1``, ``W2`` its convolutions as GEMM
        weights; ``A1`` the first convolution's patches): the forward, the backward to the three layers'
        pre-activations, and the per-example gradient blocks (with the prox blocks ``pp`` added where given).  Returns
        ``(blocks, sq, gZ3, a3)``: the blocks (conv1 [weight; bias], conv2 weight, conv2 bias, and with ``pp`` the
        linear layer's weight and bias), each example's squared gradient norm, and the linear layer's output gradient
        and input (its clipped sum being formed from them without ``pp``)."""
        pad, c1, c2 = g.pad, g.c1, g.c2
        # forward (ReLU after each pool: equal values and gradients, max and ReLU being monotone)
        Z1 = self._conv1(A1, W1, out=ws["Z1"])
        h1, i1 = _channels_last(ws["h1"], n, g.hp, g.wp, c1), _channels_last(ws["i1"], n, g.hp, g.wp, c1)
        _aten.max_pool2d_with_indices.out(Z1, *_POOL, out=h1, indices=i1)
        h1 = h1.relu_()
        h1c = h1[:, :, :g.hc, :g.wc]
        A2 = self._patches(h1c, out=ws["A2"])  # (n, L2, 9·32): the forward's GEMM and the gradients'
        Z2 = torch.addmm(P["conv2.bias"], A2.view(n * g.L2, -1), W2.t(), out=ws["Z2"][: n * g.L2 * c2].view(n * g.L2, c2))
        Z2 = Z2.view(n, g.h2u, g.w2u, c2).permute(0, 3, 1, 2)
        h2, i2 = F.max_pool2d_with_indices(Z2, 2)
        h2 = h2.relu_()
        a3 = h2.flatten(1)  # (n, F) in the channel-major order of fc.weight
        gZ3 = loss.grad(torch.addmm(P["fc.bias"], a3, P["fc.weight"].t()), yk)  # (n, o)
        # backward to the pre-activations
        grad = (gZ3 @ P["fc.weight"]).view_as(h2).contiguous(memory_format=torch.channels_last)
        gZ2 = _channels_last(ws["gZ2"], n, g.h2u, g.w2u, c2)
        _aten.max_pool2d_with_indices_backward.grad_input(_aten.threshold_backward(grad, h2, 0), Z2, *_POOL, i2,
                                                          grad_input=gZ2)
        gZ2f = gZ2 if not g.crop else self._pad_grid(ws["gb"], gZ2, n, g.h2s, g.w2s)
        grad = _aten.convolution_backward(gZ2f, h1, P["conv2.weight"], None, [1, 1], [pad, pad], [1, 1], False,
                                          [0, 0], 1, [True, False, False])[0]
        gZ1 = _channels_last(ws["gZ1"], n, g.h1s, g.w1s, c1)
        _aten.max_pool2d_with_indices_backward.grad_input(_aten.threshold_backward(grad, h1, 0), Z1, *_POOL, i1,
                                                          grad_input=gZ1)
        # per-example gradients: conv1 [weight; bias] (n, 9·C+1, 32), conv2 weight (n, 64, 9·32)
        g1, g2 = gZ1.permute(0, 2, 3, 1).reshape(n, g.L1, c1), gZ2.permute(0, 2, 3, 1).reshape(n, g.L2, c2)
        blocks = [torch.bmm(A1, g1),
                  torch.bmm(g2.transpose(1, 2), A2, out=ws["B2"][:n]),
                  gZ2f.permute(0, 2, 3, 1).reshape(n, g.h2s * g.w2s, c2).sum(1)]
        if pp is None:
            sq = sum(_sqnorm(v.flatten(1)) for v in blocks) + _sqnorm(gZ3) * (_sqnorm(a3) + 1.0)
        else:
            blocks = [v + p for v, p in zip(blocks, pp)]
            blocks += [gZ3[:, :, None] * a3[:, None, :] + pp[3], gZ3 + pp[4]]
            sq = sum(_sqnorm(v.flatten(1)) for v in blocks)
        return blocks, sq, gZ3, a3

    def _conv2_grid(self) -> tuple[int, int, int, int]:
        """The second convolution's output sides ``(h, w)`` and the sides ``(hu, wu)`` the CPU path computes.

        The second pool's floor drops an odd last row and column of that output; without padding they are not
        computed (the products skipped are 0 in the gradients), with padding every output is."""
        _, H, W = self.input_shape
        h, w = (H + 2 * self.pad - 2) // 2 + 2 * self.pad - 2, (W + 2 * self.pad - 2) // 2 + 2 * self.pad - 2
        return (h, w, h // 2 * 2, w // 2 * 2) if self.pad == 0 else (h, w, h, w)

    @staticmethod
    def _pad_grid(ws: torch.Tensor, g: torch.Tensor, n: int, h: int, w: int) -> torch.Tensor:
        """``g (n, C, hu, wu)`` (channels-last) as the top-left of an ``h × w`` grid of zeros, channels-last, in
        ``ws`` (a workspace of at least ``n·h·w·C`` entries, 0 outside that region)."""
        C, hu, wu = g.shape[1:]
        full = ws[: n * h * w * C].view(n, h, w, C)
        full[:, :hu, :wu].copy_(g.permute(0, 2, 3, 1))
        return full.permute(0, 3, 1, 2)

    def _cpu_workers(self) -> int:
        """Threads of the CPU paths: ``cpu_workers``, or torch's intra-op thread count."""
        return self.cpu_workers if self.cpu_workers is not None else torch.get_num_threads()

    def _map_models(self, fn, items) -> list:
        """``[fn(i) for i in items]``, on :meth:`_cpu_workers` threads when there are several, each running its
        kernels on one core (models are independent: the numbers are those of a serial one-thread run)."""
        items = list(items)
        workers = min(self._cpu_workers(), len(items))
        if workers <= 1:
            return [fn(i) for i in items]
        before = torch.get_num_threads()
        torch.set_num_threads(1)  # a new thread takes the setting at its first parallel kernel
        try:
            with ThreadPoolExecutor(workers) as executor:
                return list(executor.map(fn, items))
        finally:
            torch.set_num_threads(before)

    def _blocks(self, P: Mapping[str, torch.Tensor]) -> list[torch.Tensor]:
        """Parameters in the layouts of the CPU path's per-example blocks: ``[conv1 [weight; bias] (9·C+1, 32)
        (:meth:`_conv1_weight`), conv2.weight (64, 9·32) in the patches' ``(i, j, c)`` column order, conv2.bias,
        fc.weight, fc.bias]``; :meth:`_flat_from_blocks` inverts it."""
        w2 = P["conv2.weight"]
        return [self._conv1_weight(P), w2.permute(0, 2, 3, 1).reshape(w2.shape[0], -1), P["conv2.bias"],
                P["fc.weight"], P["fc.bias"]]

    def _flat_from_blocks(self, blocks: list[torch.Tensor]) -> list[torch.Tensor]:
        """The flat parameter order (:attr:`shapes`) of (flattened) blocks laid out as :meth:`_blocks`, as 1-D
        pieces to concatenate."""
        c1, cin = self.shapes["conv1.weight"][:2]
        c2 = self.shapes["conv2.weight"][0]
        B1 = blocks[0].reshape(9 * cin + 1, c1)
        return [B1[:-1].t().reshape(-1), B1[-1], blocks[1].reshape(c2, 3, 3, c1).permute(0, 3, 1, 2).reshape(-1),
                blocks[2].reshape(-1), blocks[3].reshape(-1), blocks[4].reshape(-1)]

    def _clipped_grad_sum_batched(self, theta, x, y, valid, loss: Loss, clip, prox=None):
        """:meth:`clipped_grad_sum` on CUDA: all models at once, without forming the flat
        ``(…, b, D)`` tensor: the squared norm of ``v_i = G_i [+ P]`` is summed over the parameter blocks of
        :meth:`_grad_parts`, and each block's clipped sum is one ``einsum``; invalid examples get factor 0.
        Silos in chunks as the generic path (``silo_chunk``)."""
        S, K, D, U, b, c, th, pb, clip_u = self._streams(theta, x, clip, prox)
        chunk = self._chunk(U, c, b, K)
        totals, norms = [], []
        for k0 in range(0, K, chunk):
            sl = slice(k0, k0 + chunk)
            k = th[:, :, sl].shape[2]
            parts = self._grad_parts(th[:, :, sl], x[:, sl], y[:, sl], loss)  # {name: (U·c·k, b, n)}
            pp = None if pb is None else self.unflatten(pb[:, :, sl].reshape(U * c * k, D))
            sq = 0.0
            for name in parts:
                if pp is not None:
                    parts[name] = parts[name] + pp[name].reshape(U * c * k, 1, -1)
                sq = sq + parts[name].pow(2).sum(-1)
            ok = valid[:, None, sl].expand(U, c, k, b).reshape(U * c * k, b).to(theta.dtype)
            nrm = sq.sqrt() * ok  # (U·c·k, b); 0 for invalid examples
            factor = (clip_u[:, :, sl].reshape(-1, 1) / (nrm + 1e-6)).clamp(max=1.0) * ok
            total = torch.cat([torch.einsum("gb,gbn->gn", factor, parts[name]) for name in parts], -1)
            totals.append(total.reshape(U, c, k, D))
            norms.append(nrm.reshape(U, c, k, b))
        return torch.cat(totals, 2).reshape(S, K, D), torch.cat(norms, 2).reshape(S, K, -1)

    def per_example_grads_func(self, theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor, loss: Loss) -> torch.Tensor:
        """The generic ``torch.func.vmap(grad(...))`` per-example gradients (slower on CPU; for checks)."""
        return FunctionalModel.per_example_grads(self, theta, x, y, loss)

    def forward(self, theta: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """``theta (..., D)``, ``x (..., b, p)`` (leading dimensions broadcast) → ``(..., b, o)``.

        On CPU runs the models one at a time (channels-last convolutions, as :meth:`clipped_grad_sum`, over
        ``cpu_workers`` threads; on CUDA
        all at once with :meth:`_layers`) on chunks of
        the broadcast leading dimensions (at most ``GENERIC_MAX_ENTRIES`` input entries, and ``silo_chunk``
        models, per chunk)."""
        lead = torch.broadcast_shapes(theta.shape[:-1], x.shape[:-2])
        b, p = x.shape[-2:]
        L = math.prod(lead)
        th = theta.expand(*lead, theta.shape[-1])
        xe = x.expand(*lead, b, p)
        step = max(1, self.max_entries // max(1, b * p * 8))
        if self.silo_chunk is not None:
            step = min(step, self.silo_chunk)
        outs = []
        for s in range(0, L, step):
            if lead:
                idx = torch.unravel_index(torch.arange(s, min(L, s + step), device=x.device), lead)
                t, xi = th[idx], xe[idx]
            else:
                t, xi = th[None], xe[None]
            P = self.unflatten(t)
            if t.device.type != "cpu":
                outs.append(self._layers(P, xi)[0])
                continue
            outs.append(torch.stack(self._map_models(
                lambda g: self._apply_cl({n: v[g] for n, v in P.items()}, xi[g]), range(t.shape[0]))))
        return torch.cat(outs, 0).reshape(*lead, b, self.out_dim)


def convnet_module(input_shape: tuple[int, int, int], out_dim: int, padding: str | None = None) -> torch.nn.Module:
    """The ``nn.Module`` equal to :class:`ConvNetModel` (same parameter names, shapes and function).

    It takes images ``(N, C, H, W)`` (no bias column); load a flat vector with
    ``module.load_state_dict(model.unflatten(theta))``.  Used by the Opacus reference
    (:mod:`fedtrain.reference`) and the tests comparing per-example gradients with Opacus'.
    """
    spec = ConvNetModel(input_shape, out_dim, padding=padding)
    c1, c2 = CONVNET_CHANNELS
    C = spec.input_shape[0]
    return torch.nn.Sequential(collections.OrderedDict([
        ("conv1", torch.nn.Conv2d(C, c1, 3, padding=spec.pad)), ("relu1", torch.nn.ReLU()),
        ("pool1", torch.nn.MaxPool2d(2)),
        ("conv2", torch.nn.Conv2d(c1, c2, 3, padding=spec.pad)), ("relu2", torch.nn.ReLU()),
        ("pool2", torch.nn.MaxPool2d(2)), ("flat", torch.nn.Flatten()),
        ("fc", torch.nn.Linear(spec.features, spec.out_dim))]))
