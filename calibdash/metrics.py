"""Deprecated old name of :mod:`calibdash.measures.calibration` (the papers' metrics and their binning)."""
from __future__ import annotations

from .measures.calibration import *  # noqa: F401,F403
from .measures.calibration import __all__ as _calibration_all

__all__ = list(_calibration_all)
