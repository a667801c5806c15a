"""The key a results-store row is filed under, and the check that a row hashes to the key it is filed under.

A row is filed under ``<config key>-<data key>`` (:func:`row_key`): the configuration's key
(:meth:`RunConfig.key <fedtrain.config.RunConfig.key>`, which holds the engine version) and a digest of the
identity of the data it was trained on (:func:`fedtrain.data.base.data_identity`: the SHA-256 of the files a
loader read, or the generator and its options for synthetic data), so a row trained on one copy of a dataset
is never served for another.  :func:`check_row_key` recomputes the key from a row's stored config and data
identity; a mismatch (a row file copied over another) raises :class:`ResultsStoreError` naming the file.

Both kinds of runs are keyed so: a method whose privacy unit is a record of a silo has a
:class:`~fedtrain.config.RunConfig`, one whose unit is a client a :class:`~fedtrain.clientdp.config.FedHDPConfig`
(:func:`row_kind`: the stored config's method, through the registry's privacy unit).
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING

from fedtrain.config import RunConfig
from fedtrain.data.base import data_identity, identity_digest
from fedtrain.clientdp.config import FedHDPConfig
from fedtrain.methods.registry import CLIENT, METHOD_REGISTRY, RECORD

if TYPE_CHECKING:  # pragma: no cover
    from fedtrain.engine import RunResult

__all__ = ["ResultsStoreError", "row_key", "result_row_key", "check_row_key", "row_kind", "config_of_row",
           "ROW_KEY_PATTERN"]

#: A row key: 16 hex digits of the configuration's key, a dash, 12 hex digits of the data's identity.
ROW_KEY_PATTERN = re.compile(r"^[0-9a-f]{16}-[0-9a-f]{12}$")


class ResultsStoreError(ValueError):
    """A results-store row that cannot be read, written or trusted; the message (one line) names the file."""


def row_kind(row: dict) -> str:
    """The privacy unit of the run a row holds (:data:`~fedtrain.methods.registry.CLIENT` or
    :data:`~fedtrain.methods.registry.RECORD`): that of its stored config's method in the method registry; a row
    whose method is not a registered client-level method is read as a record-level run."""
    config = row.get("config")
    method = config.get("method") if isinstance(config, dict) else None
    spec = METHOD_REGISTRY.get(method) if isinstance(method, str) else None
    return CLIENT if spec is not None and spec.unit == CLIENT else RECORD


def config_of_row(row: dict) -> "RunConfig | FedHDPConfig":
    """The configuration stored in ``row``, of the class of its kind (:func:`row_kind`)."""
    return (FedHDPConfig if row_kind(row) == CLIENT else RunConfig).from_dict(row["config"])


def row_key(config: "RunConfig | FedHDPConfig", identity: "dict | None") -> str:
    """The key a row is filed under: ``<config.key()>-<identity_digest(identity)>`` (module docstring)."""
    if not identity:
        raise ValueError(f"a results-store row needs the identity of its data (config {config.key()}: "
                         "result.data has no 'identity'; results of fedtrain.engine.run carry it)")
    return f"{config.key()}-{identity_digest(identity)}"


def result_row_key(result: "RunResult") -> str:
    """:func:`row_key` of a finished run (its config and the identity in ``result.data``)."""
    return row_key(result.config, data_identity(result.data or {}))


def check_row_key(row: dict, filed_as: str, where: str) -> None:
    """Raise :class:`ResultsStoreError` unless the row's stored config and data identity hash to ``filed_as``.

    ``row``: a row of either kind (:func:`row_kind`) as :meth:`ResultsStore.put <fedtrain.results.ResultsStore.put>` writes it (``config``
    and ``data`` with its ``identity``); ``where``: the file (or file and key) named in the error."""
    try:
        actual = row_key(config_of_row(row), data_identity(row.get("data") or {}))
    except (KeyError, TypeError, ValueError) as exc:
        raise ResultsStoreError(f"results store row {where} cannot be checked ({exc}); delete it to recompute "
                                "the run") from None
    if actual != filed_as:
        raise ResultsStoreError(f"results store row {where} is filed under key {filed_as} but its config and data "
                                f"hash to {actual} (a row file copied over another?); delete it to recompute the run")
