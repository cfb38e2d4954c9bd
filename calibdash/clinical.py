"""Deprecated old name of the clinical statistics: use :mod:`calibdash.measures` (``recalibration``, ``smoother``,
``hypothesis``, ``decomposition``, ``binned``) and, for the diagrams' bin-count rule, :mod:`calibdash.diagrams`
(names here forward, with a warning)."""
from . import diagrams as _diagrams
from .core.deprecation import forwarding
from .measures import binned, decomposition, hypothesis, recalibration, smoother

__getattr__ = forwarding(__name__, recalibration, smoother, hypothesis, decomposition, binned, _diagrams, names=frozenset({
    "calibration_intercept_slope", "ici", "smoothed_calibration_curve", "spiegelhalter_z", "hosmer_lemeshow",
    "brier_decomposition", "debiased_l2_ce", "adaptive_ece", "auto_bin_count", "describe_rule", "BIN_RULES",
    "LOESS_SPAN", "LOESS_DEGREE", "LOESS_MAX_POINTS"}))
