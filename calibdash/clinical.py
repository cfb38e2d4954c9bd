"""Deprecated old name of the clinical statistics: use :mod:`calibdash.measures` (``recalibration``, ``smoother``,
``hypothesis``, ``decomposition``, ``binned``) and, for the diagrams' bin-count rule, :mod:`calibdash.diagrams`."""
from __future__ import annotations

from .diagrams import BIN_RULES, auto_bin_count, describe_rule  # noqa: F401
from .measures.binned import adaptive_ece, debiased_l2_ce
from .measures.decomposition import brier_decomposition
from .measures.hypothesis import hosmer_lemeshow, spiegelhalter_z
from .measures.recalibration import calibration_intercept_slope
from .measures.smoother import LOESS_DEGREE, LOESS_MAX_POINTS, LOESS_SPAN, ici, smoothed_calibration_curve

__all__ = [
    "calibration_intercept_slope", "ici", "smoothed_calibration_curve", "spiegelhalter_z", "hosmer_lemeshow",
    "brier_decomposition", "debiased_l2_ce", "adaptive_ece", "auto_bin_count", "describe_rule", "BIN_RULES",
    "LOESS_SPAN", "LOESS_DEGREE", "LOESS_MAX_POINTS",
]
