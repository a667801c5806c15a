"""The Flower ClientApp: one SuperNode's silos (:class:`fedtrain.federate.silos.SiloNode`) behind Flower's Message API.

Messages (content: a :class:`flwr.app.RecordDict`):

* ``query`` (set-up): ``"run"`` ConfigRecord (``config``: the run's :class:`~fedtrain.config.RunConfig` as JSON).
  Reply: the node's silos, their training sizes ``n_k`` and the model's initial parameters (the same for every
  silo; no record of any silo enters them).
* ``train``: ``"run"`` (``config``, ``round``) and, for FedAvg and MR-MTL, ``"server"`` ArrayRecord (``wbar``).
  Reply: ``"update"`` ArrayRecord (``delta``: the silos' model updates, ``(A, D)`` float32; none for Local) and
  ``"silos"`` ConfigRecord (silo ids, ε spent so far, ``status`` ``"trained"`` or ``"budget-spent"``: a node whose
  next round would exceed its plan trains nothing and says so).
* ``evaluate``: ``"run"`` and ``"server"`` as for ``train``. Reply: ``"result"`` ConfigRecord (JSON: each silo's
  test metric with its own or the server's model, test sizes, ε spent, δ, noise multipliers, steps run, and the
  data summary the node trained on).

Node configuration (``flower-supernode --node-config``; the simulation engine sets the first two):
``partition-id`` and ``num-partitions`` (which block of silos, :func:`fedtrain.federate.silos.silos_of_node`),
optional ``data-dir``, ``budget-rounds`` (the rounds this node calibrates for and accepts; default the run's)
and ``private-noise`` (seed the noise from the OS's entropy).

A ClientApp process handles one message and exits; the node's state (parameters, generator, ledger) is kept in
the Flower :class:`~flwr.app.Context`'s ``state`` between messages: on the node, never sent.
"""
from __future__ import annotations

import json

import numpy as np
from flwr.app import Array, ArrayRecord, ConfigRecord, Context, Message, RecordDict
from flwr.clientapp import ClientApp

from fedtrain.config import RunConfig
from fedtrain.data.registry import load_dataset
from fedtrain.encoding import encode
from fedtrain.federate.silos import SiloNode, silos_of_node

__all__ = ["app", "node_from_context"]

app = ClientApp()

_STATE = "fedtrain.silos"


def node_from_context(msg: Message, context: Context) -> SiloNode:
    """The node's :class:`SiloNode` for the run in ``msg``, its state restored from ``context.state``."""
    cfg = RunConfig.from_dict(json.loads(str(msg.content["run"]["config"])))
    nc = context.node_config
    data = load_dataset(cfg.dataset, data_dir=nc.get("data-dir") or None, **dict(cfg.dataset_options))
    owned = silos_of_node(int(nc["partition-id"]), int(nc["num-partitions"]), data.num_silos)
    budget = nc.get("budget-rounds")
    node = SiloNode(cfg, data, owned, budget_rounds=int(budget) if budget else None,
                    private_noise=bool(nc.get("private-noise", False)))
    if _STATE in context.state:
        node.restore({k: v.numpy() for k, v in context.state[_STATE].items()})
    return node


def _save(node: SiloNode, context: Context) -> None:
    context.state[_STATE] = ArrayRecord({k: Array(np.ascontiguousarray(v)) for k, v in node.state().items()})


def _wbar(msg: Message):
    return msg.content["server"]["wbar"].numpy() if "server" in msg.content else None


@app.query()
def setup(msg: Message, context: Context) -> Message:
    node = node_from_context(msg, context)
    _save(node, context)
    info = ConfigRecord({"silos": node.owned, "n": [int(node.tr.n[k]) for k in node.owned],
                         "num-silos": int(node.tr.K), "budget-rounds": node.budget_rounds})
    init = ArrayRecord({"w0": Array(node.tr.init_params(per_silo=False)[0].numpy())})
    return Message(RecordDict({"silos": info, "init": init}), reply_to=msg)


@app.train()
def train(msg: Message, context: Context) -> Message:
    node = node_from_context(msg, context)
    content = RecordDict()
    if not node.can_train():  # the silos' budget is spent: train nothing, say so, stay for the evaluation
        status = "budget-spent"
    else:
        delta = node.train_round(_wbar(msg))
        if delta is not None:
            content["update"] = ArrayRecord({"delta": Array(delta)})
        status = "trained"
        _save(node, context)
    content["silos"] = ConfigRecord({"silos": node.owned, "status": status,
                                     "eps-spent": [float(v) for v in node.eps_spent()]})
    return Message(content, reply_to=msg)


@app.evaluate()
def evaluate(msg: Message, context: Context) -> Message:
    node = node_from_context(msg, context)
    result = node.evaluate(_wbar(msg))
    result["data"] = node.summary
    return Message(RecordDict({"result": ConfigRecord({"json": json.dumps(encode(result))})}), reply_to=msg)
