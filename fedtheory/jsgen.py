"""JavaScript generated from the sympy derivations, for the book's live widgets.

The static HTML book has no kernel, but the theory's quantities are closed forms: this module prints
the sympy expressions that :mod:`fedtheory.mean_estimation.symbolic` and
:mod:`fedtheory.linear_regression.symbolic` derive as JavaScript functions (sympy's JavaScript code
printer, :func:`sympy.printing.jscode`), so the formulas the reader's browser evaluates are the
derived ones, not a transcription.  Each generated function carries a comment naming the sympy
expression it comes from (module, function and key), the paper's equation, and the expression itself
(``sympy.sstr``), so the provenance is readable in the page source.

:data:`FUNCTIONS` lists every generated function by name; :func:`js_function` prints one,
:func:`js_library` a set of them.  ``tests/book/test_jsgen.py`` runs the printed code with Node.js at random
arguments and compares it with the numeric functions of :mod:`fedtheory` (written independently of
the sympy derivations); the browser test does the same inside the built book.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Iterable

import sympy as sp

from fedtheory.linear_regression import symbolic as L
from fedtheory.mean_estimation import symbolic as ME

__all__ = ["GeneratedFunction", "FUNCTIONS", "js_function", "js_library", "expression"]


@dataclass(frozen=True)
class GeneratedFunction:
    """A JavaScript function printed from one sympy expression.

    ``source`` names the expression (``module.function()[key]``), ``paper`` the result it is,
    ``args`` the JavaScript argument names in order and ``build`` returns ``(expr, symbols)``: the
    sympy expression and its symbols in the order of ``args``.
    """

    name: str
    source: str
    paper: str
    args: tuple[str, ...]
    build: Callable[[], tuple[sp.Expr, tuple[sp.Symbol, ...]]]


def _me():
    return ME


def _lr():
    return L


def _me_sigma_loc2_dp():
    S = _me()
    return S.crossover()["sigma_loc2_of_eps"], (S.n, S.sigma2, S.eps, S.delta, S.c)


def _me_sigma_loc2():
    S = _me()
    return S.local_variance()["homogeneous"], (S.n, S.sigma2, S.sdp2)


def _me_E():
    S = _me()
    return S.error_curve()["E"], (S.lam, S.s, S.tau2, S.K)


def _me_E_fed():
    S = _me()
    return S.error_curve()["E_fedavg"], (S.s, S.tau2, S.K)


def _me_lambda_star():
    S = _me()
    return S.theorem_6_3()["by_matching"], (S.s, S.tau2)


def _me_E_star():
    S = _me()
    return S.corollary_6_4()["E_star"], (S.s, S.tau2, S.K)


def _me_gap_local():
    S = _me()
    return S.proposition_6_5()["gap_local"], (S.s, S.tau2, S.K)


def _me_gap_fed():
    S = _me()
    return S.proposition_6_6()["gap_fed"], (S.s, S.tau2, S.K)


def _me_eps_cross():
    S = _me()
    return S.crossover()["epsilon_cross"], (S.sigma2, S.tau2, S.n, S.delta, S.c)


def _lr_args():
    L = _lr()
    return (L.N1, L.N2, L.alpha2, L.tau2, L.gamma1_2, L.gamma2_2)


def _lr_server_V():
    L = _lr()
    return L.server().V, (L.r, *_lr_args())


def _lr_r_star():
    return _lr().server().r_min, _lr_args()


def _lr_server_opt():
    return _lr().server().V_at_rmin, _lr_args()


def _lr_lambda_star(group: int):
    return lambda: (_lr().optimal_lambda_symbolic(group), _lr_args())


def _lr_local_error(group: int):
    def build():
        L = _lr()
        return L.fedhdp_local(group).error, (L.lam, L.r, *_lr_args())
    return build


def _lr_lambda_opt(group: int):
    def build():
        L = _lr()
        return L.fedhdp_local(group).lambda_opt, (L.r, *_lr_args())
    return build


_ME = "fedtheory.mean_estimation.symbolic"
_LR = "fedtheory.linear_regression.symbolic"
_LR_ARGS = ("N1", "N2", "alpha2", "tau2", "gamma1_2", "gamma2_2")

#: every generated function, by its JavaScript name
FUNCTIONS: dict[str, GeneratedFunction] = {f.name: f for f in [
    GeneratedFunction("me_sigma_loc2_dp", f'{_ME}.crossover()["sigma_loc2_of_eps"]',
                      "eq. (5) with the classic Gaussian mechanism σ_DP = c·sqrt(2 ln(1.25/δ))/ε",
                      ("n", "sigma2", "eps", "delta", "c"), _me_sigma_loc2_dp),
    GeneratedFunction("me_sigma_loc2", f'{_ME}.local_variance()["homogeneous"]', "eq. (5) σ_loc² = σ²/n + σ_DP²/n²",
                      ("n", "sigma2", "sdp2"), _me_sigma_loc2),
    GeneratedFunction("me_E", f'{_ME}.error_curve()["E"]', "Lemma 6.7, the error E(λ)",
                      ("lam", "s", "tau2", "K"), _me_E),
    GeneratedFunction("me_E_fed", f'{_ME}.error_curve()["E_fedavg"]', "Prop. 6.6, FedAvg's error E(∞)",
                      ("s", "tau2", "K"), _me_E_fed),
    GeneratedFunction("me_lambda_star", f'{_ME}.theorem_6_3()["by_matching"]', "Theorem 6.3, λ* = σ_loc²/τ²",
                      ("s", "tau2"), _me_lambda_star),
    GeneratedFunction("me_E_star", f'{_ME}.corollary_6_4()["E_star"]', "Corollary 6.4, E* = E(λ*)",
                      ("s", "tau2", "K"), _me_E_star),
    GeneratedFunction("me_gap_local", f'{_ME}.proposition_6_5()["gap_local"]', "Prop. 6.5, Δ_loc = E(0) − E*",
                      ("s", "tau2", "K"), _me_gap_local),
    GeneratedFunction("me_gap_fed", f'{_ME}.proposition_6_6()["gap_fed"]', "Prop. 6.6, Δ_fed = E(∞) − E*",
                      ("s", "tau2", "K"), _me_gap_fed),
    GeneratedFunction("me_eps_cross", f'{_ME}.crossover()["epsilon_cross"]',
                      "the crossover ε× where σ_loc²(ε) = τ² (E_loc = E_fed)",
                      ("sigma2", "tau2", "n", "delta", "c"), _me_eps_cross),
    GeneratedFunction("lr_server_error", f"{_LR}.server().V", "σ_s²(r), the r-weighted server average's variance",
                      ("r", *_LR_ARGS), _lr_server_V),
    GeneratedFunction("lr_r_star", f"{_LR}.server().r_min", "Lemma 2, eq. (28), r*", _LR_ARGS, _lr_r_star),
    GeneratedFunction("lr_server_error_opt", f"{_LR}.server().V_at_rmin", "Lemma 2, eq. (29), Σ_s,opt = σ_s²(r*)",
                      _LR_ARGS, _lr_server_opt),
    GeneratedFunction("lr_lambda_star_1", f"{_LR}.optimal_lambda_symbolic(1)", "eq. (47), λ* of a group-1 client",
                      _LR_ARGS, _lr_lambda_star(1)),
    GeneratedFunction("lr_lambda_star_2", f"{_LR}.optimal_lambda_symbolic(2)", "eq. (47), λ* of a group-2 client",
                      _LR_ARGS, _lr_lambda_star(2)),
    GeneratedFunction("lr_local_error_1", f"{_LR}.fedhdp_local(1).error",
                      "a group-1 client's error of θ̂_j(λ), eq. (44)'s convention (own noise removed)",
                      ("lam", "r", *_LR_ARGS), _lr_local_error(1)),
    GeneratedFunction("lr_local_error_2", f"{_LR}.fedhdp_local(2).error",
                      "a group-2 client's error of θ̂_j(λ), eq. (44)'s convention (own noise removed)",
                      ("lam", "r", *_LR_ARGS), _lr_local_error(2)),
    GeneratedFunction("lr_lambda_opt_1", f"{_LR}.fedhdp_local(1).lambda_opt",
                      "the λ minimising a group-1 client's error at a given r", ("r", *_LR_ARGS), _lr_lambda_opt(1)),
    GeneratedFunction("lr_lambda_opt_2", f"{_LR}.fedhdp_local(2).lambda_opt",
                      "the λ minimising a group-2 client's error at a given r", ("r", *_LR_ARGS), _lr_lambda_opt(2)),
]}


@lru_cache(maxsize=None)
def expression(name: str) -> tuple[sp.Expr, tuple[sp.Symbol, ...]]:
    """The sympy expression behind the generated function ``name`` and its symbols (argument order)."""
    if name not in FUNCTIONS:
        raise ValueError(f"name must be one of {sorted(FUNCTIONS)} (got {name!r})")
    expr, symbols = FUNCTIONS[name].build()
    if expr is None:
        raise ArithmeticError(f"the derivation behind {name} returned no expression")
    extra = expr.free_symbols - set(symbols)
    if extra:
        raise ArithmeticError(f"{name}: the expression has symbols {sorted(map(str, extra))} that are not arguments")
    return expr, symbols


def _comment(text: str) -> str:
    return text.replace("*/", "* /")


@lru_cache(maxsize=None)
def js_function(name: str) -> str:
    """The JavaScript source of the generated function ``name``, with its provenance comment."""
    f = FUNCTIONS[name] if name in FUNCTIONS else None
    expr, symbols = expression(name)
    plain = {s: sp.Symbol(a, real=True) for s, a in zip(symbols, f.args)}
    body = sp.jscode(expr.xreplace(plain))
    return (f"/* {_comment(f.name)}: generated by sympy.jscode from {_comment(f.source)}\n"
            f"   ({_comment(f.paper)});\n"
            f"   sympy: {_comment(sp.sstr(expr))} */\n"
            f"function {f.name}({', '.join(f.args)}) {{ return {body}; }}")


def js_library(names: Iterable[str]) -> str:
    """The JavaScript source of the generated functions ``names`` (each once, in the given order)."""
    seen: list[str] = []
    for n in names:
        if n not in seen:
            seen.append(n)
    return "\n".join(js_function(n) for n in seen)
