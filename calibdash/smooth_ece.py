"""Deprecated old name of :mod:`calibdash.measures.smooth_ece`."""
from __future__ import annotations

from .measures.smooth_ece import *  # noqa: F401,F403
from .measures.smooth_ece import __all__ as _all

__all__ = list(_all)
