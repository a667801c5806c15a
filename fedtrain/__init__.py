"""fedtrain: silo-vectorized DP-SGD training that reproduces the papers' empirical curves.

CPU by default, CUDA when asked (``device="cuda"``).
"""
__version__ = "0.1.0"
