"""FedHDP theory for federated linear regression (Aldaghri, Mahdavifar, Beirami, Appendix A).

Numeric API (vectorized, validated; see :mod:`.numeric`): :func:`optimal_ratio`,
:func:`server_error`, :func:`optimal_server_error`, :func:`optimal_lambda`, :func:`local_error`,
:func:`optimal_lambda_for_ratio`, :func:`bayes_local_error`, :func:`bayes_local_coefficients`,
:func:`opt_out_effect`, and for ``l`` privacy levels :func:`optimal_weights`, :func:`optimal_lambdas`.
The sympy derivations and derived-vs-printed checks live in :mod:`.symbolic` (imported on demand,
it needs sympy); the Monte Carlo simulator in :mod:`.simulation`; κ² (the paper's γ²) as a client-level (ε, δ)
guarantee in :mod:`.privacy_level` (imported on demand).
"""
from .numeric import (OptOut, bayes_local_coefficients, bayes_local_error, local_error,
                      opt_out_effect, optimal_lambda, optimal_lambda_for_ratio, optimal_lambdas,
                      optimal_ratio, optimal_server_error, optimal_weights, server_error)

__all__ = [
    "optimal_ratio", "server_error", "optimal_server_error", "optimal_lambda", "local_error",
    "optimal_lambda_for_ratio", "bayes_local_error", "bayes_local_coefficients", "OptOut",
    "opt_out_effect", "optimal_weights", "optimal_lambdas",
]
