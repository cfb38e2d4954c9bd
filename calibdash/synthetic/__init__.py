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

from .populations import IMBALANCE_BETA, IMBALANCE_PRIOR  # noqa: F401
from .scenarios import MAX_N, MIN_N, SCENARIOS, Draw, Scenario, draw, support, true_curve
from .study import DEFAULT_METHODS, TRUE_ERROR_COLUMNS, Trial, estimator_study, study_summary, trial
from .svm import N_SLICES, SVM_SEED
from .truth import N_NODES, true_calibration_error
from .gaussian_classes import ClassDraw, GaussianClasses, gaussian_classes, true_canonical_error

__all__ = ["Scenario", "SCENARIOS", "Draw", "Trial", "draw", "true_curve", "support", "true_calibration_error",
           "trial", "estimator_study", "study_summary", "DEFAULT_METHODS", "SVM_SEED", "N_NODES", "N_SLICES",
           "MIN_N", "MAX_N", "TRUE_ERROR_COLUMNS", "GaussianClasses", "ClassDraw", "gaussian_classes",
           "true_canonical_error"]
