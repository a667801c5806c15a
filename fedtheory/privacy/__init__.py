"""Differential-privacy accounting used throughout the book.

Submodules: :mod:`~fedtheory.privacy.events` (mechanisms described as ``dp_accounting`` DpEvents),
:mod:`~fedtheory.privacy.accountants` (the rdp / pld / prv registry), :mod:`~fedtheory.privacy.calibration`
(:func:`calibrate`, the one noise calibration, and its on-disk cache),
:mod:`~fedtheory.privacy.gaussian` (Gaussian mechanism), :mod:`~fedtheory.privacy.rdp`
(RDP curves and conversions), :mod:`~fedtheory.privacy.dpsgd` (DP-SGD ε and noise multiplier), :mod:`~fedtheory.privacy.silos` (silo-specific sample-level DP),
:mod:`~fedtheory.privacy.exponential` (private cluster selection).  ``tuning`` and ``secagg`` are
importable as submodules (not imported here).  Adjacency is add/remove-one record unless stated.
"""
from fedtheory.privacy.accountants import ACCOUNTANTS, get_accountant
from fedtheory.privacy.calibration import calibrate
from fedtheory.privacy.dpsgd import epsilon, noise_multiplier
from fedtheory.privacy.events import dpsgd_event, gaussian_event, selection_event
from fedtheory.privacy.exponential import (error_rate_sensitivity, exponential_mechanism_rdp, ifca_budget_split,
                                           ifca_selection_rdp, private_argmin)
from fedtheory.privacy.gaussian import (analytic_gaussian_sigma, gaussian_delta, gaussian_epsilon, gaussian_rdp,
                                        gaussian_sigma, rdp_gaussian_sigma)
from fedtheory.privacy.rdp import (DEFAULT_ORDERS, rdp_to_epsilon, rdp_to_zcdp, subsampled_gaussian_rdp,
                                   zcdp_epsilon, zcdp_rho, zcdp_to_rdp)
from fedtheory.privacy.silos import silo_epsilons, silo_noise_multipliers, silo_sample_rates, silo_steps

__all__ = [
    "ACCOUNTANTS", "DEFAULT_ORDERS", "get_accountant", "calibrate", "dpsgd_event", "gaussian_event",
    "selection_event",
    "gaussian_sigma", "gaussian_rdp", "gaussian_delta", "gaussian_epsilon", "analytic_gaussian_sigma",
    "rdp_gaussian_sigma",
    "subsampled_gaussian_rdp", "rdp_to_epsilon", "zcdp_to_rdp", "rdp_to_zcdp", "zcdp_epsilon", "zcdp_rho",
    "epsilon", "noise_multiplier",
    "silo_steps", "silo_sample_rates", "silo_noise_multipliers", "silo_epsilons",
    "private_argmin", "exponential_mechanism_rdp", "error_rate_sensitivity", "ifca_selection_rdp",
    "ifca_budget_split",
]
