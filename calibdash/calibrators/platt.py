"""Platt scaling: a logistic function of the score's logit."""
from __future__ import annotations

import math

import numpy as np
from scipy.special import expit

from .base import Calibrator, HyperParam
from ..sql import ClosedForm, SqlWriter, literal

__all__ = ["PlattCalibrator", "logit", "class_totals", "targets", "log_likelihood", "fit_logistic", "EPS",
           "logit_sql"]

#: Scores are clipped to [EPS, 1 - EPS] before the logit so 0 and 1 stay finite.
EPS = 1e-12


def logit(s: np.ndarray) -> np.ndarray:
    """log(s / (1 - s)) of scores clipped to [EPS, 1 - EPS]."""
    s = np.clip(s, EPS, 1 - EPS)
    return np.log(s) - np.log1p(-s)


def logit_sql(w: SqlWriter) -> str:
    """SQL of :func:`logit` of the writer's score: ``ln(c) - log1p(-c)``, ``c`` the score clipped to
    [EPS, 1 - EPS] (the closed forms of :mod:`calibdash.sql`)."""
    return w.logit(w.clip(w.score, EPS, 1 - EPS))


def class_totals(y: np.ndarray, w: np.ndarray | None = None) -> tuple[float, float]:
    """``(N+, N-)``: the rows of each class, or their weight sums with weights ``w``."""
    if w is None:
        n_pos = int(y.sum())
        return n_pos, y.size - n_pos
    n_pos = float(np.dot(w, y))
    return n_pos, float(w.sum()) - n_pos


def targets(y: np.ndarray, smooth: bool, w: np.ndarray | None = None) -> np.ndarray:
    """The fit's targets: the labels, or Platt's smoothed ``(N+ + 1) / (N+ + 2)`` and ``1 / (N- + 2)``
    (``N+``, ``N-`` the weighted class totals with weights ``w``: :func:`class_totals`)."""
    if not smooth:
        return y.astype(float)
    n_pos, n_neg = class_totals(y, w)
    return np.where(y == 1, (n_pos + 1.0) / (n_pos + 2.0), 1.0 / (n_neg + 2.0))


def log_likelihood(a: float, b: float, s: np.ndarray, t: np.ndarray, w: np.ndarray | None = None) -> float:
    """Bernoulli log-likelihood of targets ``t`` under ``sigmoid(a logit(s) + b)``, each row's term
    times its weight in ``w`` (if given)."""
    return -_nll_grad_hess(a, b, logit(s), t, w)[0]


def _nll_grad_hess(a: float, b: float, z: np.ndarray, t: np.ndarray, w: np.ndarray | None = None):
    """Negative log-likelihood of sigmoid(a z + b) against targets t (row terms weighted by w),
    with gradient and Hessian."""
    f = a * z + b
    # -[t log q + (1-t) log(1-q)] = log(1 + e^f) - t f, computed stably
    loss = np.logaddexp(0.0, f) - t * f
    q = expit(f)
    r = q - t
    v = q * (1 - q)
    if w is not None:
        loss, r, v = w * loss, w * r, w * v
    nll = float(np.sum(loss))
    g = np.array([np.dot(r, z), r.sum()])
    h = np.array([[np.dot(v, z * z), np.dot(v, z)], [np.dot(v, z), v.sum()]])
    return nll, g, h


def _logistic_terms(beta: np.ndarray, xt: np.ndarray, y: np.ndarray, w: np.ndarray | None):
    """Negative log-likelihood of targets ``y`` under ``sigmoid(beta @ xt)`` (row terms weighted by ``w``),
    its gradient and Hessian in ``beta``, and the size of its rounding error (see :func:`fit_logistic`).

    Each row's terms are computed without cancellation, to a few ulps of themselves however large
    the log-odds ``f``: the loss ``-[y ln q + (1 - y) ln(1 - q)]`` as
    ``y softplus(-f) + (1 - y) softplus(f)`` (not ``softplus(f) - y f``, which loses
    ``eps |f|``), the residual ``q - y`` as ``(1 - y) sigmoid(f) - y sigmoid(-f)`` (not
    ``sigmoid(f) - y``, which is 0 once ``sigmoid(f)`` rounds to 1) and ``q (1 - q)`` as
    ``sigmoid(f) sigmoid(-f)``. ``xt`` is the design matrix transposed, shape (k, n), C-contiguous,
    so that every sum over the rows is numpy's pairwise summation (error about log2(n) ulps of the
    summed magnitudes) rather than a BLAS product, whose summation order changes with the library
    and its threads.
    """
    f = beta[0] * xt[0]
    for j in range(1, beta.size):
        f = f + beta[j] * xt[j]
    e = np.exp(-np.abs(f))
    big = 1.0 / (1.0 + e)                                # sigmoid(|f|)
    small = e * big                                      # sigmoid(-|f|)
    pos = f >= 0
    up, down = np.where(pos, big, small), np.where(pos, small, big)      # q and 1 - q
    tail = np.log1p(e)                                   # softplus(-|f|)
    loss = y * (np.maximum(-f, 0.0) + tail) + (1.0 - y) * (np.maximum(f, 0.0) + tail)
    r = (1.0 - y) * up - y * down
    v = up * down
    size = loss + np.abs(r * f)                          # a term's error: ulps of itself and of f
    if w is not None:
        loss, r, v, size = w * loss, w * r, w * v, w * size
    g = (xt * r).sum(axis=1)
    xv = xt * v
    k = beta.size
    h = np.empty((k, k))
    for i in range(k):
        for j in range(i, k):
            h[i, j] = h[j, i] = np.sum(xv[i] * xt[j])
    return float(np.sum(loss)), g, h, _NOISE * float(np.sum(size))


#: The rounding error of the log-likelihood is taken as this many times the machine epsilon times
#: the sum of its terms' sizes (generous: a term is off by a few ulps of itself and, through its
#: log-odds, of ``|q - y| |f|``; a pairwise sum of n terms by about log2(n) ulps of their total).
_NOISE = 1024 * np.finfo(float).eps
#: A Newton step below this many ulps of the coefficients is at the floating-point limit.
_ULPS = 4 * np.finfo(float).eps
#: Largest change of any row's log-odds in one step. Where the fit is saturated (every row's
#: sigmoid within 1e-12 of 0 or 1) the Hessian is nearly 0 and the Newton step enormous (1e12
#: in the log-odds for scores all 0, clipped to logit 1e-12), beyond what the line search's
#: halvings can bring back: the step is shortened to this first.
_MAX_CHANGE = 16.0


def fit_logistic(x: np.ndarray, y: np.ndarray, w: np.ndarray | None, start, max_iter: int = 100,
                 tol: float = 0.0) -> tuple[np.ndarray, float, int]:
    """Unregularised weighted maximum-likelihood logistic regression ``P(y = 1) = sigmoid(x @ beta)``,
    iterated to the floating-point limit.

    Newton's method with a backtracking (Armijo) line search (Lin, Lin & Weng, 2007, for Platt's
    two parameters). The step solves the Hessian system by least squares with singular values below
    1e-10 of the largest dropped, so that collinear columns (a single distinct score, two distinct
    scores with three parameters) take the minimum-norm step instead of an unbounded one.

    Stopping rule. The iteration does not stop on a gradient tolerance: a gradient below
    ``tol * N`` leaves the coefficients off the optimum by up to ``tol * N`` times the inverse
    Hessian's norm, and two fits of the same likelihood (rows, or the same rows as weighted cells)
    stop at different points (with ``tol = 1e-10``, beta calibration's maps on 4,000 rows and on
    their cells differed by 1.5e-8 relative). Instead:

    * while Newton's predicted decrease of the loss, ``g' H^-1 g / 2``, is above the loss's own
      rounding error (:data:`_NOISE` times the sum of the terms' sizes), steps are damped by the
      line search as usual (after shortening a step that would move some row's log-odds by more
      than :data:`_MAX_CHANGE`, which only happens far from the optimum);
    * below it the line search can no longer tell better from worse (the loss is flat to rounding),
      the iterate is in Newton's region of quadratic convergence, and full Newton steps are taken
      (refused only if the loss rises by more than its rounding error) for as long as each step is
      smaller than the one before;
    * the iteration ends when a step is below 4 ulps of the coefficients (``max |step| <=
      4 eps max |beta|``; that step is taken), when a step in the quadratic phase is not smaller than
      the previous one (the steps are then rounding noise of the gradient: the previous iterate is
      kept), when the line search fails, or after ``max_iter`` iterations.

    At exit the coefficients are off the optimum by about the rounding error of the gradient sums
    carried through the inverse Hessian, ``|H^-1| (log2(N) eps sum_i w_i |x_i| |q_i - y_i|)`` (the
    sums over the rows are numpy's pairwise sums, not BLAS products whose order changes with the
    library and its threads). Two fits of the same likelihood, in any row order, as rows or as
    cells, on any CPU, therefore agree to that bound (about 1e-11 relative in the map for 4,000
    rows of beta calibration; 1e-13 seen), against ``|H^-1| tol N`` (1.5e-6 there) for a gradient
    rule.

    Parameters
    ----------
    x : ndarray of shape (n, k)
        Design matrix (include a column of ones for an intercept).
    y : ndarray of shape (n,)
        Targets in [0, 1] (0/1 labels, or Platt's smoothed targets).
    w : ndarray of shape (n,) or None
        Row weights (a row of weight ``w`` counts as ``w`` rows); None for unit weights.
    start : sequence of k floats
        Starting coefficients.
    max_iter : int
        Newton iterations at most.
    tol : float
        Also stop, early, when the gradient's largest entry falls below ``tol * N`` (``N`` the total
        weight). 0 (the default): iterate to the floating-point limit.

    Returns
    -------
    (beta, nll, n_iter)
        Coefficients, the weighted negative log-likelihood at them, and the iterations taken.
    """
    y = np.asarray(y, dtype=float)
    xt = np.ascontiguousarray(np.asarray(x, dtype=float).T)
    beta = np.asarray(start, dtype=float).copy()
    nll, g, h, noise = _logistic_terms(beta, xt, y, w)
    stop = float(tol) * (y.size if w is None else float(w.sum()))
    last = math.inf                      # size of the previous full step of the quadratic phase
    it = 0
    for it in range(1, int(max_iter) + 1):
        if not np.max(np.abs(g)) > stop:
            break
        step = np.linalg.lstsq(h, g, rcond=1e-10)[0]
        slope = float(np.dot(g, step))              # -(directional derivative) along -step
        if not (slope > 0 and np.all(np.isfinite(step))):
            tr = max(float(np.trace(h)), 1e-300)
            step, slope = g / tr, float(np.dot(g, g)) / tr
        size = float(np.max(np.abs(step)))
        if size <= _ULPS * float(np.max(np.abs(beta))):       # at the floating-point limit
            beta = beta - step
            nll, g, h, noise = _logistic_terms(beta, xt, y, w)
            break
        change = float(np.max(np.abs(step @ xt)))
        if change > _MAX_CHANGE:                   # far from the optimum: a shorter step, same direction
            step, slope = step * (_MAX_CHANGE / change), slope * (_MAX_CHANGE / change)
        if slope <= noise:                          # quadratic phase: full steps while they shrink
            if not size < last:
                break
            new = beta - step
            nll_new, g_new, h_new, noise_new = _logistic_terms(new, xt, y, w)
            if not nll_new <= nll + noise:
                break
            last = size
        else:
            lr = 1.0
            while lr > 1e-10:
                new = beta - lr * step
                nll_new, g_new, h_new, noise_new = _logistic_terms(new, xt, y, w)
                if nll_new <= nll - 1e-4 * lr * slope:
                    break
                lr /= 2
            else:
                break
        beta, nll, g, h, noise = new, nll_new, g_new, h_new, noise_new
    return beta, nll, it


class PlattCalibrator(Calibrator):
    """Platt scaling (Platt, 1999): ``p = sigmoid(A * logit(s) + B)``.

    A and B maximise the Bernoulli likelihood of the training labels (Newton's
    method with backtracking line search, as in Lin, Lin & Weng, 2007, "A note on
    Platt's probabilistic outputs", iterated to the floating-point limit:
    :func:`fit_logistic`). The input is the logit of the score: for
    scores that are the sigmoid of an SVM margin this is the margin itself,
    which is what Platt fitted.

    Sample weights (``fit(..., sample_weight=w)``): each row's term of the
    log-likelihood is multiplied by its weight, so the gradient and Hessian
    of the Newton steps are weighted sums; ``N+`` and ``N-`` (the smoothed
    targets, the starting intercept ``log((N+ + 1) / (N- + 1))``) and the
    ``N`` of ``tol`` are weight totals. With integer weights the fit is the
    fit on the rows repeated up to the rounding of the sums: the solver stops
    at the floating-point limit, not at a gradient tolerance, so both fits
    land on the same optimum. Scaling every weight by ``c`` leaves the
    maximiser and so the map unchanged with ``smooth_targets=False``; with
    ``smooth_targets=True`` it does not: ``t+`` and ``t-`` are computed from
    ``c N+`` and ``c N-``, as for ``c`` times as many rows (``c < 1`` pulls
    the targets towards 1/2, ``c > 1`` towards 0 and 1).

    Parameters
    ----------
    smooth_targets : bool, default False
        Use Platt's smoothed targets ``t+ = (N+ + 1) / (N+ + 2)`` for positives
        and ``t- = 1 / (N- + 2)`` for negatives instead of 1 and 0 (a prior that
        keeps the fit finite on separable data); ``N+``, ``N-`` are the
        classes' weight totals when fitted with weights.
    max_iter : int, default 100
        Newton iterations at most.
    tol : float, default 0.0
        Stop early when the gradient's largest entry falls below ``tol * N``
        (``N`` the total weight when fitted with weights); 0 iterates to the
        floating-point limit (:func:`fit_logistic`).

    Attributes
    ----------
    a_, b_ : float
        Slope A and intercept B.
    log_likelihood_ : float
        Log-likelihood of the training targets at the fit (weighted: the sum
        of each row's term times its weight).
    n_iter_ : int
        Newton iterations taken.
    """

    name = "platt"
    order = 10
    color = "#E69F00"   # orange (Okabe-Ito)
    label = "Platt scaling"
    summary = "logistic fit on the score's logit"
    paper = "Platt (1999), Probabilistic outputs for support vector machines"
    hyperparams = (
        HyperParam("smooth_targets", "t±", "bool", False,
                   help="Platt's smoothed targets (N+ + 1)/(N+ + 2) and 1/(N- + 2) instead of 1 and 0."),
    )

    def __init__(self, smooth_targets: bool = False, max_iter: int = 100, tol: float = 0.0):
        self.smooth_targets = smooth_targets
        self.max_iter = max_iter
        self.tol = tol

    def _fit(self, s, y, features, w):
        z = logit(s)
        t = targets(y, self.smooth_targets, w)
        n_pos, n_neg = class_totals(y, w)
        # Start at the prior log-odds with unit slope, as Lin et al. do.
        start = [1.0, float(np.log((n_pos + 1.0) / (n_neg + 1.0)))]
        (a, b), nll, it = fit_logistic(np.column_stack([z, np.ones_like(z)]), t, w, start, self.max_iter, self.tol)
        self.a_, self.b_ = float(a), float(b)
        self.log_likelihood_ = -float(nll)
        self.n_iter_ = int(it)

    def _predict(self, s, features):
        return expit(self.a_ * logit(s) + self.b_)

    def sql_map(self) -> ClosedForm:
        """``1 / (1 + exp(-(a logit(s) + b)))`` with :func:`logit_sql`: a closed form."""
        a, b = float(self.a_), float(self.b_)
        return ClosedForm(lambda w: w.sigmoid(f"{literal(a)} * {logit_sql(w)} + {literal(b)}"))

    def _export_state(self) -> dict:
        """What ``predict`` needs (for :mod:`calibdash.export`): slope ``a`` and intercept ``b``."""
        return {"a": self.a_, "b": self.b_}

    def _import_state(self, state) -> None:
        """Restore the state of :meth:`_export_state` (``state``: a :class:`calibdash.export.State`)."""
        self.a_, self.b_ = state.number("a"), state.number("b")
