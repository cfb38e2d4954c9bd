"""Logistic recalibration: calibration-in-the-large and the calibration slope (Cox 1958), weighted logistic
regressions of the outcome on the logit of the prediction (a row of weight ``w`` counts as ``w`` rows)."""
from __future__ import annotations

import math

import numpy as np
from scipy import stats

from ..core.errors import DataError
from ..core.logistic import covariance, solve_logistic
from .binning import check_level, check_rows

__all__ = []


def _fit(x: np.ndarray, y: np.ndarray, w: np.ndarray | None, start, offset=None):
    """``(beta, covariance, converged)`` of ``logit P(y=1) = offset + x beta`` (:func:`solve_logistic`), the
    covariance the inverse observed information. Not converged when the solver ran out of steps, a coefficient is
    infinite or beyond 1e6, or the information is singular (the logits separate the classes)."""
    fit = solve_logistic(x, y, w, start, offset=offset)
    cov = covariance(fit.hessian)
    ok = bool(fit.converged and np.all(np.isfinite(fit.beta)) and np.max(np.abs(fit.beta)) < 1e6
              and np.all(np.isfinite(cov)) and np.all(np.diag(cov) > 0))
    return fit.beta, cov, ok


def calibration_intercept_slope(probs, labels, sample_weight=None, level: float = 0.95) -> dict:
    """Calibration-in-the-large (intercept) and calibration slope, with Wald intervals at ``level``.

    Both come from logistic regressions of the outcome on the logit of the prediction, ``x = log(p / (1 - p))`` (Cox,
    "Two further applications of a model for binary regression", Biometrika 1958; the "weak calibration" level of Van
    Calster et al. 2016):

    * **slope** ``b`` of ``logit P(y = 1) = a + b x`` (Cox's recalibration model): 1 is ideal, below 1 the predictions
      are too extreme (typical of overfitting), above 1 too moderate;
    * **intercept** (calibration-in-the-large) ``a`` of ``logit P(y = 1) = a + offset(x)``, the slope fixed at 1: 0 is
      ideal, above 0 the predictions are too low on average. This is the intercept Van Calster et al. (2019,
      "Calibration: the Achilles heel of predictive analytics", BMC Medicine) and the R tools (``rms::val.prob``,
      ``CalibrationCurves::val.prob.ci.2``) report, not the intercept of the slope model (``slope_model_intercept``).

    Both maximise the weighted Bernoulli likelihood (a row of weight w counts as w rows, also in the standard errors)
    with :func:`calibdash.core.logistic.solve_logistic`, started at ``a = 0, b = 1``. Standard errors are the square
    roots of the diagonal of the inverse observed information; the intervals ``estimate +- z_{(1+level)/2} SE``.

    A prediction of exactly 0 or 1 has an infinite logit: such rows are left out of both regressions, as
    ``rms::val.prob`` and ``CalibrationCurves::val.prob.ci.2`` do (clipping them would make the slope depend on the
    clipping constant), and their weight is returned as ``excluded``.

    Returns a dict of ``intercept``, ``intercept_se``, ``intercept_low``, ``intercept_high``, ``slope``,
    ``slope_se``, ``slope_low``, ``slope_high``, ``slope_model_intercept``, ``converged`` (False when a fit did not
    converge, for instance when the logits separate the classes and the slope is infinite: its numbers are then NaN),
    ``n`` (weight used) and ``excluded``. Raises DataError if, without the excluded rows, one class has no weight.
    """
    level = check_level(level)
    p, y, w, given = check_rows(probs, labels, sample_weight)
    inner = (p > 0.0) & (p < 1.0)
    excluded = float(w[~inner].sum())
    p, y, w = p[inner], y[inner], w[inner]
    fit_w = None if given is None else w                 # unit weights: the solver skips the products
    if p.size == 0:
        raise DataError("every prediction is exactly 0 or 1, so no logit is finite: the calibration "
                        "intercept and slope are undefined.")
    for cls in (0, 1):
        if not np.any((y == cls) & (w > 0)):
            raise DataError(f"The calibration intercept and slope needs both classes; every row of positive weight "
                            f"has label {1 - cls}.")
    x = np.log(p) - np.log1p(-p)
    z = float(stats.norm.ppf(0.5 + level / 2))
    ones = np.ones((p.size, 1))
    (a,), cov_a, ok_a = _fit(ones, y, fit_w, np.zeros(1), offset=x)
    if np.ptp(x[w > 0]) > 0:
        (a2, b), cov_b, ok_b = _fit(np.column_stack([np.ones(p.size), x]), y, fit_w, np.array([0.0, 1.0]))
    else:                                             # one logit value: the slope is not identified
        a2 = b = float("nan")
        cov_b, ok_b = np.full((2, 2), np.nan), False
    se_a = math.sqrt(cov_a[0, 0]) if ok_a else float("nan")
    se_b = math.sqrt(cov_b[1, 1]) if ok_b else float("nan")
    a = float(a) if ok_a else float("nan")
    b, a2 = (float(b), float(a2)) if ok_b else (float("nan"), float("nan"))
    return {
        "intercept": a, "intercept_se": se_a, "intercept_low": a - z * se_a, "intercept_high": a + z * se_a,
        "slope": b, "slope_se": se_b, "slope_low": b - z * se_b, "slope_high": b + z * se_b,
        "slope_model_intercept": a2, "converged": bool(ok_a and ok_b),
        "n": float(w.sum()), "excluded": excluded,
    }
