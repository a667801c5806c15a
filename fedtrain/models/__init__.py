"""Functional models: flat parameters, a pure ``apply``, per-example clipping; one module per model family.

Parameter layout (the one the engine and every method use).  A model's parameters are **one flat
float tensor of** ``D = model.num_params`` **entries**; for S stacked configurations and K silos they
are a tensor ``(S, K, D)`` (the server's models ``(S, D)``, IFCA's centres ``(S, G, D)``).  So a
method's arithmetic is shape-agnostic: averaging is ``einsum("k,skd->sd")``, a proximal gradient is
``λ[:, None, None] * (w − w̄[:, None])``, broadcasting is ``w̄[:, None].expand(...)``.  The model knows
its named shapes (:attr:`FunctionalModel.shapes`) and turns a flat vector into a dict of views
(:meth:`FunctionalModel.unflatten`) for its pure function :meth:`FunctionalModel.apply`.

Per-example gradients (DP-SGD's step 2, Abadi et al. 2016; the MR-MTL paper's Sec. 3, App. C.4) have
two paths behind one method, :meth:`FunctionalModel.clipped_grad_sum`:

* **generic** (every model): ``torch.func.vmap(torch.func.grad(ℓ ∘ apply))`` gives every example's
  gradient ``G_i`` (vectorized over configurations, silos and examples; silos processed in chunks of
  ``silo_chunk`` to bound memory); the summed vector ``v_i = G_i [+ P]`` is formed and its own norm
  sets the clip factor;
* **closed form** (:class:`LinearModel`, ``f = x̃ W``): ``G_i = x̃_i ⊗ ∂ℓ/∂f`` is never formed; the
  norm comes from ``‖x̃‖²‖g‖² [+ 2 x̃ᵀP g + ‖P‖²]`` and the sum is one ``einsum``.  That expanded form
  cancels catastrophically when a gradient nearly cancels the proximal term ``P``,
  so its rigorous float error bound ``2γ(‖x̃‖²‖g‖² + ‖P‖²)`` (``γ = 1.25·n·u``, ``n`` the longest
  dot product plus 3, ``u = 2⁻²⁴`` in float32; Higham, *Accuracy and Stability*, §3.1) is evaluated
  for every example, and the
  examples where it exceeds ``1e-4`` of the computed value (cancellation) take the explicit route:
  ``v_i = x̃_i g_iᵀ + P`` is formed, its norm sets the clip factor and ``v_i`` itself is summed.  Every
  clipped contribution therefore has norm ``≤ c·(1 + 5e-5)`` (the expanded form's rigorous error)
  up to float32 rounding, while ordinary examples keep the fast path bit for bit (in School training
  no example needed the explicit route, see ``benchmarks/bench_engine.py``).

* **blockwise** (:class:`ConvNetModel`, the paper's ConvNet for the image datasets, App. C.1): the
  per-example gradients of each parameter block come from one forward, one backward to the
  pre-activations and im2col patches (as Opacus' grad samplers compute them), vectorized over every
  configuration and silo; the squared norms are summed over the blocks and each block's clipped sum
  is one ``einsum`` (the flat ``(…, b, D)`` tensor is never formed).

Clip factor ``min(1, c / (‖v_i‖ + 1e-6))`` as in Opacus.  Models: :class:`LinearModel` (the paper's
convex tasks, App. C), :class:`MLPModel` (one tanh hidden layer, exercising the generic path end
to end) and :class:`ConvNetModel`.  On the CPU ``silo_chunk`` defaults to :data:`DEFAULT_SILO_CHUNK`
(its choice: ``benchmarks/README.md``); on CUDA the memory bound is :data:`CUDA_MAX_ENTRIES`.  :func:`build_model` maps
:data:`fedtrain.config.MODELS` names to models.  Losses live in :mod:`fedtrain.losses` (re-exported here).

Modules, one per model family: :mod:`fedtrain.models.base` (:class:`FunctionalModel`, the generic path),
:mod:`fedtrain.models.linear`, :mod:`fedtrain.models.mlp`, :mod:`fedtrain.models.convnet`, and
:mod:`fedtrain.models.client` (the client-level trainer's models: Table 6's FC network and the linear
regression of FedHDP's theory, :func:`client_model`).
"""
from __future__ import annotations

import math

import torch

from fedtrain.losses import HingeLoss, LogisticLoss, Loss, SquaredLoss, loss_for_task
from fedtrain.models.base import CUDA_MAX_ENTRIES, EXPANDED_NORM_REL_TOL, GENERIC_MAX_ENTRIES, FunctionalModel
from fedtrain.models.client import FCNet, LinearNet, client_loss, client_model, pad_clients
from fedtrain.models.convnet import (CONVNET_CHANNELS, CONVNET_EXAMPLE_CHUNK, CONVNET_MIN_VALID, ConvNetModel,
                                     convnet_module)
from fedtrain.models.linear import LinearModel
from fedtrain.models.mlp import MLP_HIDDEN, MLPModel

__all__ = ["Loss", "SquaredLoss", "HingeLoss", "LogisticLoss", "loss_for_task", "FunctionalModel",
           "LinearModel", "MLPModel", "ConvNetModel", "build_model", "MLP_HIDDEN", "CONVNET_CHANNELS",
           "convnet_module", "DEFAULT_SILO_CHUNK", "CUDA_MAX_ENTRIES", "GENERIC_MAX_ENTRIES",
           "EXPANDED_NORM_REL_TOL", "CONVNET_MIN_VALID", "CONVNET_EXAMPLE_CHUNK", "FCNet", "LinearNet", "client_model",
           "client_loss", "pad_clients"]


#: Default ``silo_chunk`` per model on CPU (``None``: as many silos as fit ``GENERIC_MAX_ENTRIES``), the
#: fastest in ``benchmarks/bench_convnet.py --chunks`` (its measurements: ``benchmarks/README.md``).  The
#: ConvNet's CPU ``clipped_grad_sum`` loops over models itself, so ``silo_chunk`` only bounds its CPU
#: ``forward`` chunks and the CUDA path.
#: On CUDA no chunk is set (all silos vectorized up to the memory bound).
DEFAULT_SILO_CHUNK: dict[str, int | None] = {"linear": None, "mlp": 4, "convnet": None}


def build_model(name: str, in_dim: int, out_dim: int, *, dtype: torch.dtype = torch.float32,
                device: str | torch.device = "cpu", input_shape: tuple[int, int, int] | None = None,
                **options) -> FunctionalModel:
    """The model a config's ``model`` field names (:data:`fedtrain.config.MODELS`).

    ``in_dim`` is the feature count ``d`` (the bias column is added here), ``out_dim`` the output
    width, ``input_shape`` the data's ``(C, H, W)`` (image data; ``convnet`` needs it and raises
    ``ValueError`` naming ``model`` on tabular data).  ``options`` are execution options that do not
    change the numbers beyond float32 rounding: ``silo_chunk`` (every model; default
    :data:`DEFAULT_SILO_CHUNK` on CPU), ``closed_form`` (``linear`` only) and ``example_chunk``
    (``convnet`` only: examples per micro-batch of the CPU clipped sum); ``padding`` for ``convnet`` (see
    :class:`ConvNetModel`).
    """
    if name not in ("linear", "mlp", "convnet"):
        raise ValueError(f"model must be one of 'linear', 'mlp', 'convnet' (got {name!r})")
    if "closed_form" in options and name != "linear":
        raise ValueError(f"closed_form applies to the 'linear' model only (the {name!r} model has no closed form)")
    for opt in ("padding", "example_chunk"):
        if opt in options and name != "convnet":
            raise ValueError(f"{opt} applies to the 'convnet' model only (got model={name!r})")
    if "silo_chunk" not in options and torch.device(device).type == "cpu":
        options["silo_chunk"] = DEFAULT_SILO_CHUNK[name]
    if name == "linear":
        return LinearModel(in_dim, out_dim, dtype, device, **options)
    if name == "mlp":
        return MLPModel(in_dim, out_dim, dtype, device, **options)
    if input_shape is None:
        raise ValueError("model='convnet' needs image data (a dataset with input_shape (C, H, W)); "
                         "this dataset is tabular: use model='linear' or 'mlp'")
    if math.prod(input_shape) != in_dim:
        raise ValueError(f"input_shape {tuple(input_shape)} does not match the feature count {in_dim}")
    return ConvNetModel(input_shape, out_dim, dtype, device, **options)
