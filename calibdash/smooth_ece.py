"""Deprecated old name of :mod:`calibdash.measures.smooth_ece`: import from there (names here forward, with a warning)."""
from .core.deprecation import forwarding
from .measures import smooth_ece as _home

__getattr__ = forwarding(__name__, _home)
