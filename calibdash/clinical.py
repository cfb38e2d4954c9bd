"""Calibration statistics of the clinical-prediction literature (re-exported), and the diagrams' bin-count rule.

The statistics live in :mod:`calibdash.measures` (one module per concern) and
are re-exported here under their old names:

===================================  ==============================================================
:func:`calibration_intercept_slope`  :mod:`calibdash.measures.recalibration`
:func:`ici`,                         :mod:`calibdash.measures.smoother`
:func:`smoothed_calibration_curve`
:func:`spiegelhalter_z`,             :mod:`calibdash.measures.hypothesis`
:func:`hosmer_lemeshow`
:func:`brier_decomposition`          :mod:`calibdash.measures.decomposition`
:func:`debiased_l2_ce`,              :mod:`calibdash.measures.binned`
:func:`adaptive_ece`
===================================  ==============================================================

:func:`auto_bin_count` (a stated rule for the number of bins of a reliability
diagram), :func:`describe_rule` (the caption that says which rule gave it) and
``BIN_RULES`` are re-exported from :mod:`calibdash.diagrams`, where the rule lives.
"""
from __future__ import annotations


from .diagrams import BIN_RULES, auto_bin_count, describe_rule  # noqa: F401  (the bin-count rule lives there)
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
