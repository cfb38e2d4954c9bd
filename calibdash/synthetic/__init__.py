"""Synthetic scenarios with a known true calibration function, for teaching.

A scenario is a population of (score, label) pairs whose true calibration
function ``f(s) = P(y = 1 | score = s)`` is known, so the true calibration
error of the raw scores or of any fitted calibrator can be computed from the
population instead of being estimated from a sample, and set beside the
sample estimates (ECE, MVCE) a dashboard shows. This is the design of the
MBCT paper's simulation study (Huang et al., KDD 2022, section 5.3): repeated
draws, the theoretical calibration error (TCE) from the known truth, and the
difference of each estimate from it.

The package, by concern: :mod:`~calibdash.synthetic.populations` (the
closed-form populations), :mod:`~calibdash.synthetic.svm` (the SVM
populations, their truth by numerical integration),
:mod:`~calibdash.synthetic.scenarios` (the scenarios and draws from them),
:mod:`~calibdash.synthetic.truth` (the true calibration error),
:mod:`~calibdash.synthetic.study` (trials and the estimator study) and
:mod:`~calibdash.synthetic.gaussian_classes` (a K-class scenario: Gaussian classes
whose true posterior is known, reported by an over-confident model).
"""
from __future__ import annotations

from .scenarios import MAX_N, MIN_N, SCENARIOS, draw, support, true_curve
from .study import TRUE_ERROR_COLUMNS, Trial, estimator_study, study_summary, trial
from .truth import true_calibration_error

__all__ = [
    "SCENARIOS", "Trial", "true_curve", "support", "trial", "estimator_study", "study_summary",
    "TRUE_ERROR_COLUMNS", "MAX_N", "MIN_N", "draw", "true_calibration_error"
]
