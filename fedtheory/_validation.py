"""Deprecated alias of :mod:`fedtheory.validation` (kept so that older imports keep working)."""
from fedtheory.validation import *  # noqa: F401,F403
from fedtheory.validation import __all__, _describe  # noqa: F401
