"""Calibration statistics of the clinical-prediction and machine-learning literature.

:mod:`calibdash.metrics` holds the binned errors of the calibration papers
(ECE, MCE, MVCE); this module adds the summaries a clinical validation
report or a deep-learning calibration study quotes:

===================================  ==============================================================
:func:`calibration_intercept_slope`  calibration-in-the-large and calibration slope (Cox 1958;
                                     Van Calster et al. 2016, 2019), Wald 95% intervals
:func:`ici`                          ICI, E50, E90, Emax of the loess calibration curve
                                     (Austin & Steyerberg 2019)
:func:`smoothed_calibration_curve`   that loess curve, for charts
:func:`spiegelhalter_z`              Spiegelhalter's (1986) z test
:func:`hosmer_lemeshow`              the Hosmer-Lemeshow C-hat test over deciles of risk
:func:`brier_decomposition`          Murphy's (1973) reliability, resolution, uncertainty
:func:`debiased_l2_ce`               Kumar, Liang & Ma's (2019) debiased l2 calibration error
:func:`adaptive_ece`                 Nixon et al.'s (2019) adaptive calibration error (ACE)
:func:`auto_bin_count`               a stated rule for the number of bins of a reliability diagram,
:func:`describe_rule`                and the caption that says which rule gave it (both re-exported
                                     from :mod:`calibdash.diagrams`, where the rule lives)
===================================  ==============================================================

Inputs and weights
------------------
Every statistic takes ``probs`` (predicted probability of the positive
class, in [0, 1]), ``labels`` (0/1) and ``sample_weight``, validated as in
:mod:`calibdash.metrics` (its ``_check``). A row of weight ``w`` counts as
``w`` rows: with whole-number weights every statistic equals, to rounding,
its value on the rows repeated (``np.repeat(probs, w)``), so a table of score
cells gives the value of its rows (``tests/test_clinical.py`` checks this for
each function). Weights are counts everywhere, also where a statistic depends
on the sample size (standard errors, the tests' statistics, the debiasing
term, the loess neighbourhood): weights that sum to 1 describe one row, not a
distribution. Equal-count bins are :mod:`calibdash.metrics`' ``"quantile"``
bins (tied predictions split proportionally), so the Hosmer-Lemeshow groups,
the debiased l2 error and ACE bin exactly as the package's ECE does.

Cost
----
Everything but the loess curve is one sort and O(rows) sums (a few Newton
steps for the intercept and slope). The loess curve is fitted exactly at no
more than ``max_points`` (default 500) nodes and interpolated between them
(:func:`smoothed_calibration_curve`); ``bench/bench_clinical.py`` measures
each statistic on 65,536 weighted points (target: under 0.5 s each).
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import special, stats
from scipy.interpolate import CubicSpline

from .diagrams import BIN_RULES, auto_bin_count, describe_rule  # noqa: F401  (the bin-count rule lives there)
from .errors import DataError, SettingsError
from .metrics import (STRATEGIES, _Groups, _bins, _check, _groups, _is_whole, _quantile_bins, _row_bins,
                      _uniform_ids, check_binning)

__all__ = [
    "calibration_intercept_slope", "ici", "smoothed_calibration_curve", "spiegelhalter_z", "hosmer_lemeshow",
    "brier_decomposition", "debiased_l2_ce", "adaptive_ece", "auto_bin_count", "describe_rule", "BIN_RULES",
    "LOESS_SPAN", "LOESS_DEGREE", "LOESS_MAX_POINTS",
]

#: R's ``loess`` defaults, used by Austin & Steyerberg (2019): span 0.75, local quadratics.
LOESS_SPAN = 0.75
LOESS_DEGREE = 2
#: The loess curve is fitted exactly at no more than this many nodes and interpolated between them.
LOESS_MAX_POINTS = 500


# ----------------------------------------------------------------------------
# shared pieces
# ----------------------------------------------------------------------------
def _rows(probs, labels, sample_weight):
    """Validated ``(p, y, w, w_or_none)``: ``y`` as floats, ``w`` always an array (ones when unweighted)."""
    p, y, w = _check(probs, labels, sample_weight)
    return p, y.astype(float), (np.ones(p.size) if w is None else w), w


def _need_both_classes(y, w, what: str) -> None:
    for cls in (0, 1):
        if not np.any((y == cls) & (w > 0)):
            raise DataError(f"{what} needs both classes; every row of positive weight has label {1 - cls}.")


def _check_level(level: float) -> float:
    if not 0.0 < float(level) < 1.0:
        raise SettingsError(f"level must lie strictly between 0 and 1, got {level}.")
    return float(level)


def _reading(p_value: float, alpha: float, test: str, detail: str) -> str:
    """One plain sentence on a calibration test's p-value."""
    pct = f"{100 * alpha:g}%"
    if not np.isfinite(p_value):
        return f"{test} cannot be computed on these data ({detail})."
    if p_value < alpha:
        return f"Evidence of miscalibration at the {pct} level ({test}: {detail})."
    return f"No evidence of miscalibration at the {pct} level ({test}: {detail})."


def _fmt_p(p_value: float) -> str:
    return "p < 0.0001" if p_value < 1e-4 else f"p = {p_value:.4f}".rstrip("0").rstrip(".")


def _weighted_quantile7(values: np.ndarray, weights: np.ndarray, prob: float) -> float:
    """R's default quantile (type 7) of the rows ``np.repeat(values, weights)``.

    Position ``h = (N - 1) prob`` (from 0) in the sorted rows, linear
    interpolation between the rows at ``floor(h)`` and ``floor(h) + 1``; the row
    at position ``j`` is the first value whose cumulative weight exceeds ``j``.
    With whole weights this is exactly ``np.quantile`` of the repeated rows;
    fractional weights are read as (fractional) row counts.
    """
    keep = weights > 0
    v, wt = values[keep], weights[keep]
    order = np.argsort(v, kind="stable")
    v, c = v[order], np.cumsum(wt[order])
    h = min(max((c[-1] - 1.0) * prob, 0.0), max(c[-1] - 1.0, 0.0))
    lo = math.floor(h)
    i_lo = min(int(np.searchsorted(c, lo, side="right")), v.size - 1)
    i_hi = min(int(np.searchsorted(c, lo + 1, side="right")), v.size - 1)
    return float(v[i_lo] + (h - lo) * (v[i_hi] - v[i_lo]))


# ----------------------------------------------------------------------------
# 1. calibration intercept and slope
# ----------------------------------------------------------------------------
def _logistic_fit(X: np.ndarray, offset: np.ndarray, y: np.ndarray, w: np.ndarray, start: np.ndarray,
                  max_iter: int = 100, tol: float = 1e-10):
    """Weighted logistic regression ``logit P(y=1) = offset + X beta`` by Newton's method with step halving.

    Returns ``(beta, covariance, converged)``; the covariance is the inverse of
    the observed information ``X' diag(w mu (1 - mu)) X`` at the estimate (for
    the canonical logit link it equals the expected information). Products
    are ``einsum`` rather than BLAS: with two columns, BLAS threads only
    spin-wait (measured: 10x slower on a busy two-core machine).
    """
    def loglik(b):
        eta = offset + np.einsum("ni,i->n", X, b)
        return float(np.einsum("n,n->", w, y * eta - np.logaddexp(0.0, eta)))

    beta = start.astype(float).copy()
    ll = loglik(beta)
    converged = False
    for _ in range(max_iter):
        mu = special.expit(offset + np.einsum("ni,i->n", X, beta))
        grad = np.einsum("ni,n->i", X, w * (y - mu))
        info = np.einsum("ni,nj,n->ij", X, X, w * mu * (1.0 - mu))
        try:
            step = np.linalg.solve(info, grad)
        except np.linalg.LinAlgError:
            break
        if not np.all(np.isfinite(step)):
            break
        if np.max(np.abs(step)) < tol * (1.0 + np.max(np.abs(beta))):   # the Newton step at beta is nil
            # Taken: Newton converges quadratically, so after a step below tol (1e-10) of the
            # coefficients they are within about tol^2 of the optimum, below the rounding of the
            # gradient sums: the fit is at the floating-point limit, not at a tolerance.
            beta = beta + step
            converged = bool(np.max(np.abs(beta)) < 1e6)
            break
        t = 1.0
        while True:                                   # step halving keeps every iterate an improvement
            new = beta + t * step
            ll_new = loglik(new)
            if ll_new >= ll - 1e-12 * max(1.0, abs(ll)) or t < 1e-10:
                break
            t /= 2
        beta, ll = new, ll_new
    mu = special.expit(offset + np.einsum("ni,i->n", X, beta))
    info = np.einsum("ni,nj,n->ij", X, X, w * mu * (1.0 - mu))
    try:
        cov = np.linalg.inv(info)
    except np.linalg.LinAlgError:
        cov = np.full_like(info, np.nan)
    if not (np.all(np.isfinite(cov)) and np.all(np.diag(cov) > 0)):
        converged = False
    return beta, cov, converged


def calibration_intercept_slope(probs, labels, sample_weight=None, level: float = 0.95) -> dict:
    """Calibration-in-the-large (intercept) and calibration slope, with Wald intervals.

    Both come from logistic regressions of the outcome on the logit of the
    prediction, ``x = log(p / (1 - p))`` (Cox, "Two further applications of a
    model for binary regression", Biometrika 1958; the "weak calibration"
    level of Van Calster et al. 2016):

    * **slope** ``b`` of ``logit P(y = 1) = a + b x`` (Cox's recalibration
      model): 1 is ideal, below 1 the predictions are too extreme (typical of
      overfitting), above 1 too moderate;
    * **intercept** (calibration-in-the-large) ``a`` of
      ``logit P(y = 1) = a + offset(x)``, the slope fixed at 1: 0 is ideal,
      above 0 the predictions are too low on average, below 0 too high.
      This is the intercept Van Calster et al. (2019, "Calibration: the
      Achilles heel of predictive analytics", BMC Medicine) and the R tools
      (``rms::val.prob``, ``CalibrationCurves::val.prob.ci.2``) report, not
      the intercept ``a`` of the slope model, which is returned separately as
      ``slope_model_intercept``.

    Both maximise the weighted Bernoulli likelihood by Newton's method
    (started at ``a = 0, b = 1``, perfect calibration, with step halving).
    Standard errors are the square roots of the diagonal of the inverse
    observed information at the estimate; the intervals are Wald intervals
    ``estimate +- z_{(1+level)/2} SE``.

    Parameters
    ----------
    probs, labels : array-like
        Predicted probabilities and 0/1 outcomes.
    sample_weight : array-like, optional
        Row weights (a row of weight w counts as w rows, also in the standard errors).
    level : float, default 0.95
        Coverage of the Wald intervals.

    Returns
    -------
    dict
        ``intercept``, ``intercept_se``, ``intercept_low``, ``intercept_high``,
        ``slope``, ``slope_se``, ``slope_low``, ``slope_high``,
        ``slope_model_intercept``, ``converged`` (False when a fit did not
        converge, for instance when the logits separate the classes
        perfectly and the slope is infinite: its numbers are then NaN),
        ``n`` (weight used) and ``excluded`` (weight of rows with ``p`` exactly
        0 or 1).

    Notes
    -----
    A prediction of exactly 0 or 1 has an infinite logit. Such rows are left
    out of both regressions, as ``rms::val.prob`` and
    ``CalibrationCurves::val.prob.ci.2`` do ("observations deleted from
    logistic calibration due to probs. of 0 or 1"); their weight is returned
    as ``excluded`` so a caller can say so. Clipping them instead would make
    the slope depend on the arbitrary clipping constant.

    Raises
    ------
    DataError
        If, without those rows, one class has no weight.
    """
    level = _check_level(level)
    p, y, w, _ = _rows(probs, labels, sample_weight)
    inner = (p > 0.0) & (p < 1.0)
    excluded = float(w[~inner].sum())
    p, y, w = p[inner], y[inner], w[inner]
    if p.size == 0:
        raise DataError("every prediction is exactly 0 or 1, so no logit is finite: the calibration "
                        "intercept and slope are undefined.")
    _need_both_classes(y, w, "The calibration intercept and slope")
    x = np.log(p) - np.log1p(-p)
    z = float(stats.norm.ppf(0.5 + level / 2))
    ones = np.ones((p.size, 1))
    (a,), cov_a, ok_a = _logistic_fit(ones, x, y, w, np.zeros(1))
    if np.ptp(x[w > 0]) > 0:
        (a2, b), cov_b, ok_b = _logistic_fit(np.column_stack([np.ones(p.size), x]), np.zeros(p.size), y, w,
                                             np.array([0.0, 1.0]))
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


# ----------------------------------------------------------------------------
# 2. loess calibration curve and ICI
# ----------------------------------------------------------------------------
class _Distinct:
    """The distinct predictions of positive weight: value ``x``, weight ``w``, mean outcome ``y``."""

    def __init__(self, p, y, w):
        g = _groups(p, y, w)
        keep = g.weight > 0
        self.x = g.value[keep]
        self.w = g.weight[keep]
        self.y = g.pos[keep] / self.w
        self.whole = g.whole
        self.total = float(self.w.sum())


def _loess_q(d: _Distinct, span: float) -> float:
    """R's neighbourhood size ``floor(N span)`` (``N span`` for fractional weights), at most ``N``."""
    q = min(d.total, math.floor(d.total * span + 1e-9)) if d.whole else min(d.total, d.total * span)
    if q <= 0:
        raise DataError(f"loess with span {span} needs at least {math.ceil(1 / span)} rows; there are "
                        f"{d.total:g}.")
    return q


def _loess_bandwidth(d: _Distinct, at: np.ndarray, q: float, span: float) -> np.ndarray:
    """Distance from each point of ``at`` to its ``q``-th nearest row (rows counted by weight).

    The smallest ``h`` with weight at least ``q`` within ``[x0 - h, x0 + h]``:
    bisection on ``h``, then snapped to the distance of the farthest point
    inside, so it is exactly a point's distance (R's ``rho``).
    """
    cum = np.r_[0.0, np.cumsum(d.w)]
    tol = 0.0 if d.whole else 1e-12 * d.total
    lo = np.zeros(at.size)
    hi = np.maximum(at - d.x[0], d.x[-1] - at)
    for _ in range(64):
        mid = (lo + hi) / 2
        inside = cum[np.searchsorted(d.x, at + mid, side="right")] - cum[np.searchsorted(d.x, at - mid, side="left")]
        enough = inside >= q - tol
        hi = np.where(enough, mid, hi)
        lo = np.where(enough, lo, mid)
    left = np.searchsorted(d.x, at - hi, side="left")
    right = np.searchsorted(d.x, at + hi, side="right") - 1
    h = np.maximum(at - d.x[left], d.x[right] - at)
    if np.any(h <= 0):
        x0 = float(at[np.argmax(h <= 0)])
        raise DataError(f"the loess neighbourhood of the prediction {x0:.6g} (its {q:g} nearest rows: span "
                        f"{span:g} x {d.total:g} rows) holds only rows tied at that prediction, so it has zero "
                        "width (R's loess stops with 'span too small'): there are too few rows, or too many "
                        "share one prediction, for the smoothed calibration curve and ICI.")
    return h


def _loess_at(d: _Distinct, at: np.ndarray, span: float, degree: int, chunk: int = 64) -> np.ndarray:
    """The loess fit (Cleveland, Grosse & Shyu 1992; R's ``loess``, ``surface = "direct"``) at ``at``.

    At each point ``x0``: ``q = floor(N span)`` (``N span`` for fractional
    weights), ``h`` the distance of the ``q``-th nearest row, tricube weights
    ``(1 - (|x - x0| / h)^3)^3`` for ``|x - x0| < h`` times the rows' weights,
    and the weighted least-squares polynomial of degree ``degree`` in ``x``,
    evaluated at ``x0``. Rows that share a prediction are merged (their
    weights summed, their outcomes averaged), which leaves the least-squares
    solution unchanged.

    The normal equations of a chunk of neighbouring points are built with
    one matrix product, in the coordinate ``z = (x - c) / s`` centred on the
    chunk and scaled by its bandwidth (a polynomial of degree ``degree`` in
    ``x`` is one in ``z``, so the fit is the same and well conditioned), and
    solved with a pseudo-inverse of the equilibrated matrix, as R's
    ``ehg127`` does when a neighbourhood holds too few distinct points. The
    tricube weights are computed in single precision (on coordinates centred
    in double precision), which is five times faster and moves the fit by
    about 1e-9; the moments are summed in double precision.
    """
    h = _loess_bandwidth(d, at, _loess_q(d, span), span)
    k = degree + 1
    fit = np.empty(at.size)
    for start in range(0, at.size, chunk):
        a = at[start:start + chunk]
        hh = h[start:start + chunk]
        lo = int(np.searchsorted(d.x, np.min(a - hh), side="left"))
        hi = int(np.searchsorted(d.x, np.max(a + hh), side="right"))
        x = d.x[lo:hi]
        c = 0.5 * (a[0] + a[-1])
        s = float(np.mean(hh))
        z = (x - c) / s
        powers = np.vander(z, 2 * k - 1, increasing=True)           # z^0 .. z^(2 degree)
        wz = powers * d.w[lo:hi, None]
        design = np.column_stack([wz, wz[:, :k] * d.y[lo:hi, None]])
        # tricube weights in single precision, on coordinates already centred on the chunk in double
        # precision (so a narrow bandwidth loses nothing); the moments are summed in double precision
        zc = z.astype(np.float32)
        u = np.abs(zc[None, :] - ((a - c) / s).astype(np.float32)[:, None])
        u *= (s / hh).astype(np.float32)[:, None]
        np.minimum(u, np.float32(1.0), out=u)
        u3 = u * u
        u3 *= u
        np.subtract(np.float32(1.0), u3, out=u3)
        kern = u3 * u3
        kern *= u3
        m = np.einsum("gm,mk->gk", kern.astype(np.float64), design)  # chunk x (2k - 1 + k) moments
        idx = np.arange(k)
        A = m[:, idx[:, None] + idx[None, :]]                        # sum K w z^(i+j)
        rhs = m[:, 2 * k - 1:]                                       # sum K w y z^i
        diag = np.sqrt(np.einsum("gii->gi", A))
        scale = np.where(diag > 0, 1.0 / np.where(diag > 0, diag, 1.0), 1.0)
        As = A * scale[:, :, None] * scale[:, None, :]
        coef = np.einsum("gij,gj->gi", np.linalg.pinv(As, rcond=1e-12), rhs * scale) * scale
        z0 = (a - c) / s
        fit[start:start + chunk] = np.sum(coef * z0[:, None] ** idx[None, :], axis=1)
    return fit


def _check_loess(span, degree, max_points) -> tuple[float, int, int | None]:
    if not 0.0 < float(span) <= 1.0:
        raise SettingsError(f"span must lie in (0, 1], got {span}.")
    if degree not in (0, 1, 2):
        raise SettingsError(f"degree must be 0, 1 or 2, got {degree}.")
    if max_points is not None and (int(max_points) != max_points or max_points < 10):
        raise SettingsError(f"max_points must be a whole number of at least 10 (or None), got {max_points}.")
    return float(span), int(degree), None if max_points is None else int(max_points)


def _nodes(d: _Distinct, max_points: int | None, span: float) -> np.ndarray:
    """Where the loess curve is fitted exactly: every distinct prediction, or ``max_points`` nodes.

    The curve at ``x0`` changes on the scale of its bandwidth ``h(x0)`` (the
    tricube window's half-width), which is small where the rows are dense.
    So the nodes are spread evenly in ``integral dx / h(x)``, the number of
    bandwidths crossed: spacing proportional to ``h``. ``h`` is computed
    (cheaply: it needs only the cumulative weights) on a fine grid of 2,048
    equally spaced points and the predictions at 2,048 weighted quantiles.
    Both ends are always nodes.
    """
    if max_points is None or d.x.size <= max_points:
        return d.x
    ends = np.cumsum(d.w)
    quant = d.x[np.minimum(np.searchsorted(ends, np.linspace(0.0, d.total, 2048), side="left"), d.x.size - 1)]
    fine = np.unique(np.r_[np.linspace(d.x[0], d.x[-1], 2048), quant])
    density = 1.0 / _loess_bandwidth(d, fine, _loess_q(d, span), span)
    crossed = np.r_[0.0, np.cumsum(0.5 * (density[1:] + density[:-1]) * np.diff(fine))]
    nodes = np.interp(np.linspace(0.0, crossed[-1], max_points), crossed, fine)
    return np.unique(np.r_[nodes, d.x[0], d.x[-1]])


def _smooth(d: _Distinct, span, degree, max_points):
    """``(nodes, fit at nodes, fit at every distinct prediction)``."""
    nodes = _nodes(d, max_points, span)
    at_nodes = _loess_at(d, nodes, span, degree)
    if nodes.size == d.x.size:
        return nodes, at_nodes, at_nodes
    return nodes, at_nodes, CubicSpline(nodes, at_nodes)(d.x)


def smoothed_calibration_curve(probs, labels, sample_weight=None, span: float = LOESS_SPAN,
                               degree: int = LOESS_DEGREE, max_points: int | None = LOESS_MAX_POINTS) -> pd.DataFrame:
    """The loess calibration curve of Austin & Steyerberg (2019): outcome smoothed against prediction.

    Local regression (Cleveland, Grosse & Shyu 1992) of the 0/1 outcome on
    the predicted probability with R's ``loess`` defaults, which is what the
    paper's appendix code runs (``loess(y ~ p)``): span 0.75 (each local fit
    uses the 75% of rows nearest to the point), local quadratics (degree 2),
    tricube neighbourhood weights, no robustness iterations (``family =
    "gaussian"``). Row weights multiply the tricube weights, and the
    neighbourhood is counted in weight (a row of weight w is w rows), so
    whole weights give exactly the curve of the repeated rows; R instead
    counts weighted rows as one each when it sizes the neighbourhood.

    Parameters
    ----------
    probs, labels, sample_weight : array-like
    span : float in (0, 1], default 0.75
    degree : {0, 1, 2}, default 2
    max_points : int or None, default 500
        With at most this many distinct predictions the curve is fitted
        exactly at each of them. Otherwise it is fitted exactly at
        ``max_points`` nodes spaced in proportion to the local bandwidth
        (dense where the rows are dense) and a cubic spline through them
        gives the curve between nodes. The curve changes on the scale of its
        bandwidth, which holds 75% of the rows, so the spline stays far
        closer to the exact fit than the curve's sampling error: on 8,000
        uniform or beta(0.3, 3) predictions the largest difference is below
        2e-4 and ICI moves by less than 1e-6 (``tests/test_clinical.py``).
        R's default (``surface = "interpolate"``) interpolates too, from a
        handful of k-d tree vertices. ``None`` fits every distinct prediction
        exactly (O(distinct^2): slow beyond ~10,000).

    Returns
    -------
    pandas.DataFrame
        ``score`` (the nodes, ascending) and ``calibrated`` (the curve there).
        The curve is not clipped to [0, 1] (as in R).
    """
    span, degree, max_points = _check_loess(span, degree, max_points)
    p, y, w, _ = _rows(probs, labels, sample_weight)
    d = _Distinct(p, y, w)
    nodes = _nodes(d, max_points, span)
    return pd.DataFrame({"score": nodes, "calibrated": _loess_at(d, nodes, span, degree)})


def ici(probs, labels, sample_weight=None, span: float = LOESS_SPAN, degree: int = LOESS_DEGREE,
        max_points: int | None = LOESS_MAX_POINTS) -> dict:
    """Integrated Calibration Index and its relatives E50, E90, Emax (Austin & Steyerberg 2019).

    With ``c(p)`` the loess calibration curve
    (:func:`smoothed_calibration_curve`, R's ``loess(y ~ p)`` defaults as in
    the paper's appendix), the absolute calibration error of row ``i`` is
    ``e_i = |c(p_i) - p_i|`` and

    * ``ICI`` = the (weighted) mean of ``e_i`` over the rows (the paper's
      integral of ``|c(p) - p|`` against the distribution of the predictions);
    * ``E50``, ``E90`` = the median and 90th percentile of ``e_i`` over the
      rows (R's ``median`` and ``quantile(..., 0.9)``, type 7; with weights,
      those of the repeated rows);
    * ``Emax`` = the largest ``e_i`` (Harrell's Emax, over the observed
      predictions). Of the four it is the one the interpolation between
      loess nodes can move most (by up to ~2e-4 in the tests; ICI by ~1e-7).

    Parameters
    ----------
    probs, labels, sample_weight : array-like
    span, degree, max_points
        As for :func:`smoothed_calibration_curve`.

    Returns
    -------
    dict
        ``ICI``, ``E50``, ``E90``, ``Emax``.
    """
    span, degree, max_points = _check_loess(span, degree, max_points)
    p, y, w, _ = _rows(probs, labels, sample_weight)
    d = _Distinct(p, y, w)
    _, _, curve = _smooth(d, span, degree, max_points)
    err = np.abs(curve - d.x)
    return {
        "ICI": float(np.dot(d.w, err) / d.total),
        "E50": _weighted_quantile7(err, d.w, 0.5),
        "E90": _weighted_quantile7(err, d.w, 0.9),
        "Emax": float(np.max(err)),
    }


# ----------------------------------------------------------------------------
# 3. Spiegelhalter's z
# ----------------------------------------------------------------------------
def spiegelhalter_z(probs, labels, sample_weight=None, alpha: float = 0.05) -> dict:
    """Spiegelhalter's (1986) z test of calibration.

    ``z = sum (y - p)(1 - 2p) / sqrt( sum (1 - 2p)^2 p (1 - p) )``: the Brier
    score minus its expectation under perfect calibration, divided by its
    standard deviation under perfect calibration (Spiegelhalter, "Probabilistic
    prediction in patient management and clinical trials", Stat Med 1986).
    Under the null hypothesis that every ``p`` is the true probability, ``z``
    is approximately standard normal; the p-value is two-sided.

    Parameters
    ----------
    probs, labels, sample_weight : array-like
        Sums are weighted (a row of weight w counts as w rows).
    alpha : float, default 0.05
        Level of the plain-language ``reading``.

    Returns
    -------
    dict
        ``z``, ``p_value``, ``reading`` (one sentence). ``z`` is NaN when
        every prediction is 0, 0.5 or 1 (zero variance).
    """
    alpha = _check_level(alpha)
    p, y, w, _ = _rows(probs, labels, sample_weight)
    a = 1.0 - 2.0 * p
    num = float(np.dot(w, (y - p) * a))
    var = float(np.dot(w, a * a * p * (1.0 - p)))
    if var > 0:
        z = num / math.sqrt(var)
        pv = float(2.0 * stats.norm.sf(abs(z)))
        detail = f"z = {z:.2f}, {_fmt_p(pv)}"
    else:
        z = pv = float("nan")
        detail = "every prediction is 0, 0.5 or 1, so z has no variance"
    return {"z": z, "p_value": pv, "reading": _reading(pv, alpha, "Spiegelhalter's z test", detail)}


# ----------------------------------------------------------------------------
# 4. Hosmer-Lemeshow
# ----------------------------------------------------------------------------
def hosmer_lemeshow(probs, labels, sample_weight=None, n_groups: int = 10, alpha: float = 0.05) -> dict:
    """Hosmer-Lemeshow goodness-of-fit test over groups of equal size ("deciles of risk").

    The rows sorted by prediction are cut into ``n_groups`` groups of equal
    weight (:mod:`calibdash.metrics`' ``"quantile"`` bins, so tied
    predictions that straddle a cut are split proportionally, exactly as the
    package's ECE bins them). With ``n_g`` the weight, ``O_g`` the observed
    positives and ``E_g = sum p`` the expected positives of group ``g``,

    ``C = sum_g (O_g - E_g)^2 / E_g + ((n_g - O_g) - (n_g - E_g))^2 / (n_g - E_g)
        = sum_g (O_g - E_g)^2 / (n_g pbar_g (1 - pbar_g))``,

    referred to a chi-squared distribution with ``G - 2`` degrees of freedom
    (Hosmer & Lemeshow 1980; Lemeshow & Hosmer 1982, the C-hat statistic),
    ``G`` the number of non-empty groups. This is the test for the data a
    model was fitted on; on new data ``G`` degrees of freedom are sometimes
    used instead (Hosmer & Lemeshow, Applied Logistic Regression, 2013,
    section 5.2.2): the ``df`` returned is ``G - 2`` as in the original.

    R's ``ResourceSelection::hoslem.test`` cuts at the values of the sample
    quantiles instead, which keeps ties together and can make groups of
    unequal size; without ties and with ``N`` a multiple of ``n_groups`` the
    groups are the same.

    Parameters
    ----------
    probs, labels, sample_weight : array-like
    n_groups : int, default 10
    alpha : float, default 0.05
        Level of the plain-language ``reading``.

    Returns
    -------
    dict
        ``statistic``, ``df``, ``p_value``, ``reading`` and ``table``, a
        DataFrame with one row per group: ``group``, ``lower``, ``upper``
        (smallest and largest prediction), ``count``, ``observed``,
        ``expected``, ``observed_rate``, ``mean_pred``. A group whose
        expected count of a class is 0 contributes 0 when the observed count
        is 0 too, infinity otherwise.
    """
    alpha = _check_level(alpha)
    p, y, w_or_none = _check(probs, labels, sample_weight)
    n_groups = check_binning(n_groups, "quantile", w_or_none is not None)
    if n_groups < 3:
        raise SettingsError(f"the Hosmer-Lemeshow test needs at least 3 groups (it has G - 2 degrees of "
                            f"freedom), got {n_groups}.")
    b = _quantile_bins(_groups(p, y, w_or_none), n_groups)
    keep = b.count > 0
    n, obs, exp_ = b.count[keep], b.sum_y[keep], b.sum_p[keep]

    def part(o, e):
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(e > 0, (o - e) ** 2 / np.where(e > 0, e, 1.0), np.where(np.isclose(o, 0.0), 0.0, np.inf))

    stat = float(np.sum(part(obs, exp_) + part(n - obs, n - exp_)))
    df = int(keep.sum()) - 2
    pv = float(stats.chi2.sf(stat, df)) if df > 0 else float("nan")
    detail = (f"C = {stat:.2f} on {df} df, {_fmt_p(pv)}" if df > 0
              else f"only {df + 2} non-empty groups, too few for G - 2 degrees of freedom")
    whole = _is_whole(w_or_none)
    table = pd.DataFrame({
        "group": np.arange(int(keep.sum())),
        "lower": b.lower[keep], "upper": b.upper[keep],
        "count": np.round(n).astype(np.int64) if whole else n,
        "observed": obs, "expected": exp_,
        "observed_rate": obs / n, "mean_pred": exp_ / n,
    })
    return {"statistic": stat, "df": df, "p_value": pv,
            "reading": _reading(pv, alpha, "Hosmer-Lemeshow test", detail), "table": table}


# ----------------------------------------------------------------------------
# 5. Brier score decomposition
# ----------------------------------------------------------------------------
def brier_decomposition(probs, labels, sample_weight=None, n_bins: int | None = None,
                        strategy: str = "quantile") -> dict:
    """Murphy's (1973) decomposition of the Brier score: reliability - resolution + uncertainty.

    With the forecasts grouped into ``K`` groups of weight ``n_k``, mean
    forecast ``f_k`` and observed frequency ``o_k`` (``N`` rows in all,
    overall frequency ``o``),

    * reliability ``REL = 1/N sum_k n_k (f_k - o_k)^2`` (0 is perfect),
    * resolution ``RES = 1/N sum_k n_k (o_k - o)^2`` (larger is better),
    * uncertainty ``UNC = o (1 - o)`` (of the outcomes alone),

    (Murphy, "A new vector partition of the probability score", J. Appl.
    Meteor. 1973). With the default ``n_bins=None`` each group is one
    distinct forecast value and ``Brier = REL - RES + UNC`` holds exactly.
    With ``n_bins`` the forecasts are binned (``strategy`` ``"quantile"``:
    equal-count bins as the package's ECE; ``"uniform"``: equal-width) and
    two within-bin terms complete the identity (Stephenson, Coelho &
    Jolliffe, "Two extra components in the Brier score decomposition",
    Weather and Forecasting 2008):

    ``Brier = REL - RES + UNC + WBV - WBC`` with the within-bin variance
    ``WBV = 1/N sum_k sum_{i in k} (f_i - f_k)^2`` and the within-bin
    covariance ``WBC = 2/N sum_k sum_{i in k} (f_i - f_k)(y_i - o_k)``.
    Both are 0 without binning.

    Parameters
    ----------
    probs, labels, sample_weight : array-like
    n_bins : int, optional
        None (default): group by distinct forecast.
    strategy : {"quantile", "uniform"}, default "quantile"
        Binning when ``n_bins`` is given.

    Returns
    -------
    dict
        ``reliability``, ``resolution``, ``uncertainty``, ``brier`` (computed
        directly from the rows), ``within_bin_variance``,
        ``within_bin_covariance``, ``groups`` (number of non-empty groups).
    """
    p, y, w, w_or_none = _rows(probs, labels, sample_weight)
    total = float(w.sum())
    if n_bins is None:
        g = _groups(p, y, w_or_none)
        count, sum_p, sum_y = g.weight, g.value * g.weight, g.pos
        sum_pp, sum_py = g.value * g.value * g.weight, g.value * g.pos
    else:
        if strategy not in STRATEGIES:
            raise SettingsError(f"strategy must be one of {STRATEGIES}, got {strategy!r}.")
        n_bins = check_binning(n_bins, strategy, w_or_none is not None)
        if strategy == "quantile":
            g = _groups(p, y, w_or_none)
            first = _quantile_bins(g, n_bins)
            # the bins depend on the weights only, so the same cut carries f^2 and f*y (tied rows share f)
            second = _quantile_bins(_Groups(g.value * g.value, g.weight, g.value * g.pos, g.whole), n_bins)
        else:
            ids = _uniform_ids(p, n_bins)
            first = _bins(p, y, w_or_none, n_bins, strategy)
            second = _row_bins(p * p, p * y, w_or_none, ids, n_bins, first.lower, first.upper)
        count, sum_p, sum_y, sum_pp, sum_py = first.count, first.sum_p, first.sum_y, second.sum_p, second.sum_y
    keep = count > 0
    count, sum_p, sum_y, sum_pp, sum_py = count[keep], sum_p[keep], sum_y[keep], sum_pp[keep], sum_py[keep]
    f = sum_p / count
    o = sum_y / count
    obar = float(sum_y.sum() / total)
    rel = float(np.dot(count, (f - o) ** 2) / total)
    res = float(np.dot(count, (o - obar) ** 2) / total)
    if n_bins is None:
        wbv = wbc = 0.0
    else:
        wbv = float(np.sum(sum_pp - count * f * f) / total)
        wbc = float(2.0 * np.sum(sum_py - count * f * o) / total)
    return {
        "reliability": rel, "resolution": res, "uncertainty": obar * (1.0 - obar),
        "brier": float(np.dot(w, (p - y) ** 2) / total),
        "within_bin_variance": wbv, "within_bin_covariance": wbc, "groups": int(keep.sum()),
    }


# ----------------------------------------------------------------------------
# 6. debiased l2 calibration error
# ----------------------------------------------------------------------------
def debiased_l2_ce(probs, labels, sample_weight=None, n_bins: int | None = 15, squared: bool = False) -> float:
    """Debiased estimator of the l2 calibration error (Kumar, Liang & Ma 2019).

    With equal-mass bins ``b`` of weight ``n_b`` (``N`` in all), mean
    prediction ``pbar_b`` and observed frequency ``ybar_b``, the plug-in
    estimate of the squared l2 calibration error ``sum_b (n_b/N) (pbar_b -
    ybar_b)^2`` is biased upwards by the sampling variance of ``ybar_b``; the
    debiased estimate subtracts it,

    ``CE^2 = sum_b (n_b / N) [ (pbar_b - ybar_b)^2 - ybar_b (1 - ybar_b) / (n_b - 1) ]``,

    a bin of fewer than 2 rows contributing 0 ("Verified uncertainty
    calibration", NeurIPS 2019, section 5). This is their
    ``calibration`` package's ``unbiased_l2_ce`` as called by
    ``get_calibration_error(probs, labels, p=2, debias=True)`` on continuous
    predictions (``lower_bound_scaling_ce`` with 15 equal-mass bins): it
    returns ``sqrt(max(CE^2, 0))``, the l2 error itself, and so does this
    function; ``tests/test_clinical.py`` reproduces its numbers.

    Two differences from the authors' code, both only where predictions are
    tied: (1) their bins are cut at midpoints between the sorted
    predictions, so a group of tied predictions falls whole in the lower
    bin; here the bins are :mod:`calibdash.metrics`' equal-count bins, which
    split such a group proportionally (as the package's ECE does), so the
    bins stay of equal mass and the value depends only on the multiset of
    rows. (2) ``get_calibration_error`` switches to one bin per distinct
    prediction when there are fewer than ``N / 4`` distinct values; here
    that is asked for explicitly with ``n_bins=None`` (their
    ``get_binning_ce``).

    Parameters
    ----------
    probs, labels, sample_weight : array-like
        Weights count rows, also in the ``n_b - 1`` of the variance term.
    n_bins : int or None, default 15
        Number of equal-mass bins (the authors' default); None bins by
        distinct prediction.
    squared : bool, default False
        Return the debiased estimate of the *squared* error, ``CE^2``,
        unclipped (it is unbiased, so it can be negative when the
        calibration error is small).
    """
    p, y, w_or_none = _check(probs, labels, sample_weight)
    g = _groups(p, y, w_or_none)
    if n_bins is None:
        count, sum_p, sum_y = g.weight, g.value * g.weight, g.pos
    else:
        n_bins = check_binning(n_bins, "quantile", w_or_none is not None)
        b = _quantile_bins(g, n_bins)
        count, sum_p, sum_y = b.count, b.sum_p, b.sum_y
    total = float(g.weight.sum())
    keep = count >= 2
    n_b = count[keep]
    pbar = sum_p[keep] / n_b
    ybar = sum_y[keep] / n_b
    ce2 = float(np.sum(n_b / total * ((pbar - ybar) ** 2 - ybar * (1.0 - ybar) / (n_b - 1.0))))
    return ce2 if squared else math.sqrt(max(ce2, 0.0))


# ----------------------------------------------------------------------------
# 7. adaptive calibration error
# ----------------------------------------------------------------------------
def adaptive_ece(probs, labels, sample_weight=None, n_bins: int = 15, classes: str = "both") -> float:
    """Adaptive calibration error, ACE (Nixon et al., "Measuring calibration in deep learning", CVPR-W 2019).

    ``ACE = 1/(K R) sum_k sum_r |acc(r, k) - conf(r, k)|``: for each class
    ``k`` the predictions of that class's probability are cut into ``R``
    equal-mass ranges; ``conf`` is the range's mean predicted probability of
    ``k`` and ``acc`` the share of its rows whose label is ``k``. Unlike ECE,
    every range counts equally (a plain mean over ranges, not weighted by
    their size; with equal-mass ranges the two nearly agree).

    Which classes: the paper's definition runs over all ``K`` classes, and a
    binary classifier is a ``K = 2`` softmax, so by default
    (``classes="both"``) the positive class's probabilities ``p`` and the
    negative class's ``1 - p`` both enter. Per range the two classes have the
    same gap (``|mean(1 - y) - mean(1 - p)| = |mean y - mean p|``), so the
    value differs from the positive class alone only through the ranges:
    the negative class's ranges are cut from the other end, so when ``N`` is
    not a multiple of ``R`` the leftover rows land in other ranges. Both
    classes are kept because then ACE does not change when the classes are
    swapped (relabelling which class is "positive"), a property the
    positive-class-only value lacks; ``classes="positive"`` gives that value
    (equal to an unweighted-mean equal-mass ECE), which some libraries report
    for binary problems.

    The ranges are :mod:`calibdash.metrics`' equal-count bins (tied
    predictions split proportionally). Empty ranges (``N < R``) are skipped.

    Parameters
    ----------
    probs, labels, sample_weight : array-like
    n_bins : int, default 15
        R, the number of ranges per class.
    classes : {"both", "positive"}, default "both"
    """
    if classes not in ("both", "positive"):
        raise SettingsError(f"classes must be 'both' or 'positive', got {classes!r}.")
    p, y, w_or_none = _check(probs, labels, sample_weight)
    n_bins = check_binning(n_bins, "quantile", w_or_none is not None)
    g = _groups(p, y, w_or_none)

    def per_class(groups: _Groups) -> float:
        b = _quantile_bins(groups, n_bins)
        keep = b.count > 0
        return float(np.mean(np.abs(b.sum_p[keep] - b.sum_y[keep]) / b.count[keep]))

    pos = per_class(g)
    if classes == "positive":
        return pos
    # the negative class: probability 1 - p ascending is the groups of p reversed; its "positives" are the zeros
    neg = per_class(_Groups(1.0 - g.value[::-1], g.weight[::-1], (g.weight - g.pos)[::-1], g.whole))
    return 0.5 * (pos + neg)
