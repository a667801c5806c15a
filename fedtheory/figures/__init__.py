"""Plotting functions behind the book's figures and widgets, one module per chapter.

Each function takes plain parameters, returns a matplotlib Figure, and is tested in ``tests/``.
"""
