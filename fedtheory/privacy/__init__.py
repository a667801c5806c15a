"""Differential-privacy accounting used throughout the book.

Submodules: :mod:`~fedtheory.privacy.events` (mechanisms described as ``dp_accounting`` DpEvents),
:mod:`~fedtheory.privacy.accountants` (the rdp / pld / prv registry), :mod:`~fedtheory.privacy.calibration`
(:func:`calibrate`, the one noise calibration, and its on-disk cache),
:mod:`~fedtheory.privacy.gaussian` (Gaussian mechanism), :mod:`~fedtheory.privacy.rdp`
(RDP curves and conversions), :mod:`~fedtheory.privacy.dpsgd_accounting` (DP-SGD ε and noise multiplier), :mod:`~fedtheory.privacy.silos` (silo-specific sample-level DP),
:mod:`~fedtheory.privacy.exponential` (private cluster selection).  ``tuning``, ``secagg``,
``step_fusion`` (App. A.3 fused local steps) and ``model_averaging`` (averaging locally private models) are
importable as submodules (not imported here).  Adjacency is add/remove-one record unless stated.
"""
import importlib

# The names below are imported from their submodules on first use (PEP 562), so that importing one
# submodule (e.g. the accountants, for `fedtrain run`) does not import them all (scipy.optimize, ...).
_LAZY = {
    'ACCOUNTANTS': 'fedtheory.privacy.accountants',
    'get_accountant': 'fedtheory.privacy.accountants',
    'calibrate': 'fedtheory.privacy.calibration',
    'epsilon': 'fedtheory.privacy.dpsgd_accounting',
    'noise_multiplier': 'fedtheory.privacy.dpsgd_accounting',
    'dpsgd_event': 'fedtheory.privacy.events',
    'gaussian_event': 'fedtheory.privacy.events',
    'selection_event': 'fedtheory.privacy.events',
    'error_rate_sensitivity': 'fedtheory.privacy.exponential',
    'exponential_mechanism_rdp': 'fedtheory.privacy.exponential',
    'ifca_budget_split': 'fedtheory.privacy.exponential',
    'ifca_selection_rdp': 'fedtheory.privacy.exponential',
    'private_argmin': 'fedtheory.privacy.exponential',
    'analytic_gaussian_sigma': 'fedtheory.privacy.gaussian',
    'gaussian_delta': 'fedtheory.privacy.gaussian',
    'gaussian_epsilon': 'fedtheory.privacy.gaussian',
    'gaussian_rdp': 'fedtheory.privacy.gaussian',
    'gaussian_sigma': 'fedtheory.privacy.gaussian',
    'rdp_gaussian_sigma': 'fedtheory.privacy.gaussian',
    'DEFAULT_ORDERS': 'fedtheory.privacy.rdp',
    'rdp_to_epsilon': 'fedtheory.privacy.rdp',
    'rdp_to_zcdp': 'fedtheory.privacy.rdp',
    'subsampled_gaussian_rdp': 'fedtheory.privacy.rdp',
    'zcdp_epsilon': 'fedtheory.privacy.rdp',
    'zcdp_rho': 'fedtheory.privacy.rdp',
    'zcdp_to_rdp': 'fedtheory.privacy.rdp',
    'silo_epsilons': 'fedtheory.privacy.silos',
    'silo_noise_multipliers': 'fedtheory.privacy.silos',
    'silo_sample_rates': 'fedtheory.privacy.silos',
    'silo_steps': 'fedtheory.privacy.silos',
}


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'fedtheory.privacy' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))


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
