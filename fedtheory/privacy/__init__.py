"""Differential-privacy accounting used throughout the book.

Submodules: :mod:`~fedtheory.privacy.gaussian` (Gaussian mechanism), :mod:`~fedtheory.privacy.rdp`
(RDP curves and conversions), :mod:`~fedtheory.privacy.dpsgd` (DP-SGD ε and calibration with the
rdp / pld / prv accountants), :mod:`~fedtheory.privacy.silos` (silo-specific sample-level DP),
:mod:`~fedtheory.privacy.exponential` (private cluster selection).  ``tuning`` and ``secagg`` are
importable as submodules (not imported here).  Adjacency is add/remove-one record unless stated.
"""
from fedtheory.privacy.dpsgd import ACCOUNTANTS, epsilon, noise_multiplier
from fedtheory.privacy.exponential import (error_rate_sensitivity, exponential_mechanism_rdp, ifca_budget_split,
                                           ifca_selection_rdp, private_argmin)
from fedtheory.privacy.gaussian import (analytic_gaussian_sigma, gaussian_delta, gaussian_epsilon, gaussian_rdp,
                                        gaussian_sigma, rdp_gaussian_sigma)
from fedtheory.privacy.rdp import (DEFAULT_ORDERS, rdp_to_epsilon, rdp_to_zcdp, subsampled_gaussian_rdp,
                                   zcdp_epsilon, zcdp_rho, zcdp_to_rdp)
from fedtheory.privacy.silos import silo_epsilons, silo_noise_multipliers, silo_sample_rates, silo_steps

__all__ = [
    "ACCOUNTANTS", "DEFAULT_ORDERS",
    "gaussian_sigma", "gaussian_rdp", "gaussian_delta", "gaussian_epsilon", "analytic_gaussian_sigma",
    "rdp_gaussian_sigma",
    "subsampled_gaussian_rdp", "rdp_to_epsilon", "zcdp_to_rdp", "rdp_to_zcdp", "zcdp_epsilon", "zcdp_rho",
    "epsilon", "noise_multiplier",
    "silo_steps", "silo_sample_rates", "silo_noise_multipliers", "silo_epsilons",
    "private_argmin", "exponential_mechanism_rdp", "error_rate_sensitivity", "ifca_selection_rdp",
    "ifca_budget_split",
]
