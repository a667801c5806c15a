"""A tiny calculus of linear forms in independent zero-mean Gaussian sources (sympy).

The FedHDP analysis only ever needs variances and covariances of *linear* combinations of
independent Gaussian noises (sampling noise ``e_j``, heterogeneity ``p_j``, privacy noise ``l_j``).
Sums of i.i.d. sources over the other clients of a group are one source whose variance is the count
times the per-client variance.  A :class:`LinearForm` maps source names to sympy coefficients;
:func:`cov` then computes ``Cov(X, Y) = Σ_s c_X(s) c_Y(s) Var(s)`` exactly.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

import sympy as sp


@dataclass(frozen=True)
class LinearForm:
    """``Σ_s coeffs[s] · Z_s`` with independent zero-mean sources ``Z_s`` (variances kept separately)."""

    coeffs: Mapping[str, sp.Expr] = field(default_factory=dict)

    def __add__(self, other: "LinearForm") -> "LinearForm":
        out = dict(self.coeffs)
        for k, v in other.coeffs.items():
            out[k] = out.get(k, 0) + v
        return LinearForm(out)

    def __sub__(self, other: "LinearForm") -> "LinearForm":
        return self + (-1) * other

    def __rmul__(self, c) -> "LinearForm":
        return LinearForm({k: c * v for k, v in self.coeffs.items()})

    __mul__ = __rmul__

    def __truediv__(self, c) -> "LinearForm":
        return LinearForm({k: v / c for k, v in self.coeffs.items()})


def source(name: str) -> LinearForm:
    """The source ``name`` itself (coefficient 1)."""
    return LinearForm({name: sp.Integer(1)})


ZERO = LinearForm({})


def cov(x: LinearForm, y: LinearForm, variances: Mapping[str, sp.Expr]) -> sp.Expr:
    """Exact covariance of two linear forms in independent sources with the given variances."""
    keys = set(x.coeffs) & set(y.coeffs)
    return sp.Add(*[x.coeffs[k] * y.coeffs[k] * variances[k] for k in keys])


def var(x: LinearForm, variances: Mapping[str, sp.Expr]) -> sp.Expr:
    """Exact variance of a linear form."""
    return cov(x, x, variances)
