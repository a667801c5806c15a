"""Differential-privacy accounting used throughout the book (see submodules)."""
from fedtheory.privacy.gaussian import gaussian_sigma

__all__ = ["gaussian_sigma"]
