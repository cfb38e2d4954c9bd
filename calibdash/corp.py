"""Deprecated old name of :mod:`calibdash.measures.corp`."""
from __future__ import annotations

from .measures.corp import *  # noqa: F401,F403
from .measures.corp import __all__ as _all

__all__ = list(_all)
