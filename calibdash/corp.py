"""Deprecated old name of :mod:`calibdash.measures.corp`: import from there (names here forward, with a warning)."""
from .core.deprecation import forwarding
from .measures import corp as _home

__getattr__ = forwarding(__name__, _home)
