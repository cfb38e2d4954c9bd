"""Synthetic scenarios with a known true calibration function, for teaching.

A scenario is a population of (score, label) pairs whose true calibration function ``f(s) = P(y = 1 | score = s)``
is known, so the true calibration error of the raw scores or of any fitted calibrator is computed from the
population, not estimated from a sample, and set beside the sample estimates (ECE, MVCE). This is the design of the
MBCT paper's simulation study (Huang et al., KDD 2022, section 5.3): repeated draws, the theoretical calibration
error (TCE) from the known truth, and the difference of each estimate from it.
"""
from __future__ import annotations

from .scenarios import MAX_N, MIN_N, SCENARIOS, draw, support, true_curve
from .study import TRUE_ERROR_COLUMNS, Trial, estimator_study, study_summary, trial, true_calibration_error

__all__ = [
    "SCENARIOS", "Trial", "true_curve", "support", "trial", "estimator_study", "study_summary",
    "TRUE_ERROR_COLUMNS", "MAX_N", "MIN_N", "draw", "true_calibration_error"
]
