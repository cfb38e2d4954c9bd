"""The one weighted logistic-regression solver: Platt, beta and temperature scaling and the calibration slope.

``P(y = 1) = sigmoid(offset + x @ beta)`` by maximum weighted likelihood, Newton's method with a
backtracking line search, iterated to the floating-point limit (:func:`solve_logistic`). Platt
scaling fits ``x = [logit(s), 1]``, beta calibration ``x = [ln s, -ln(1 - s), 1]`` (and its
reduced forms), temperature scaling ``x = logit(s)`` without an intercept (``beta = 1/T``), and the
calibration intercept and slope (:mod:`calibdash.measures.recalibration`) ``x = [1, logit(p)]`` and
``x = 1`` with ``offset = logit(p)``. It sits at the root of the package, below both
:mod:`calibdash.calibrators` and :mod:`calibdash.measures`, and imports neither.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

__all__ = ["solve_logistic", "fit_logistic", "covariance"]


class LogisticFit(NamedTuple):
    """What :func:`solve_logistic` returns."""

    beta: np.ndarray             # the coefficients
    nll: float                   # weighted negative log-likelihood at them
    n_iter: int                  # Newton iterations taken
    hessian: np.ndarray          # of the negative log-likelihood at ``beta`` (the observed information)
    converged: bool              # stopped at the floating-point limit or the gradient rule, not for want of steps


def logistic_terms(beta: np.ndarray, xt: np.ndarray, y: np.ndarray, sample_weight: np.ndarray | None, offset=None):
    """Negative log-likelihood of targets ``y`` under ``sigmoid(beta @ xt)`` (row terms weighted by ``sample_weight``),
    its gradient and Hessian in ``beta``, and the size of its rounding error (see :func:`fit_logistic`).

    Each row's terms are computed without cancellation, to a few ulps of themselves however large
    the log-odds ``f``: the loss ``-[y ln q + (1 - y) ln(1 - q)]`` as
    ``y softplus(-f) + (1 - y) softplus(f)`` (not ``softplus(f) - y f``, which loses
    ``eps |f|``), the residual ``q - y`` as ``(1 - y) sigmoid(f) - y sigmoid(-f)`` (not
    ``sigmoid(f) - y``, which is 0 once ``sigmoid(f)`` rounds to 1) and ``q (1 - q)`` as
    ``sigmoid(f) sigmoid(-f)``. ``xt`` is the design matrix transposed, shape (k, n), C-contiguous,
    so that every sum over the rows is numpy's pairwise summation (error about log2(n) ulps of the
    summed magnitudes) rather than a BLAS product, whose summation order changes with the library
    and its threads. ``offset``: a known term added to every row's log-odds (None: none).
    """
    f = beta[0] * xt[0]
    for j in range(1, beta.size):
        f = f + beta[j] * xt[j]
    if offset is not None:
        f = f + offset
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
    if sample_weight is not None:
        loss, r, v, size = sample_weight * loss, sample_weight * r, sample_weight * v, sample_weight * size
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


def solve_logistic(x: np.ndarray, y: np.ndarray, sample_weight: np.ndarray | None, start, max_iter: int = 100,
                   tol: float = 0.0, offset=None) -> LogisticFit:
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
    sample_weight : ndarray of shape (n,) or None
        Row weights (a row of weight ``sample_weight`` counts as ``sample_weight`` rows); None for unit weights.
    start : sequence of k floats
        Starting coefficients.
    max_iter : int
        Newton iterations at most.
    tol : float
        Also stop, early, when the gradient's largest entry falls below ``tol * N`` (``N`` the total
        weight). 0 (the default): iterate to the floating-point limit.

    offset : ndarray of shape (n,), optional
        A known term of each row's log-odds (the calibration intercept's ``logit(p)``).

    Returns
    -------
    LogisticFit
        Coefficients, the weighted negative log-likelihood and its Hessian at them, the iterations
        taken, and ``converged``: False when the line search failed or ``max_iter`` ran out.
    """
    y = np.asarray(y, dtype=float)
    xt = np.ascontiguousarray(np.asarray(x, dtype=float).T)
    beta = np.asarray(start, dtype=float).copy()
    off = None if offset is None else np.asarray(offset, dtype=float)
    nll, g, h, noise = logistic_terms(beta, xt, y, sample_weight, off)
    converged = False
    stop = float(tol) * (y.size if sample_weight is None else float(sample_weight.sum()))
    last = math.inf                      # size of the previous full step of the quadratic phase
    it = 0
    for it in range(1, int(max_iter) + 1):
        if not np.max(np.abs(g)) > stop:
            converged = True
            break
        step = np.linalg.lstsq(h, g, rcond=1e-10)[0]
        slope = float(np.dot(g, step))              # -(directional derivative) along -step
        if not (slope > 0 and np.all(np.isfinite(step))):
            tr = max(float(np.trace(h)), 1e-300)
            step, slope = g / tr, float(np.dot(g, g)) / tr
        size = float(np.max(np.abs(step)))
        if size <= _ULPS * float(np.max(np.abs(beta))):       # at the floating-point limit
            beta = beta - step
            nll, g, h, noise = logistic_terms(beta, xt, y, sample_weight, off)
            converged = True
            break
        change = float(np.max(np.abs(step @ xt)))
        if change > _MAX_CHANGE:                   # far from the optimum: a shorter step, same direction
            step, slope = step * (_MAX_CHANGE / change), slope * (_MAX_CHANGE / change)
        if slope <= noise:                          # quadratic phase: full steps while they shrink
            if not size < last:
                converged = True
                break
            new = beta - step
            nll_new, g_new, h_new, noise_new = logistic_terms(new, xt, y, sample_weight, off)
            if not nll_new <= nll + noise:
                converged = True
                break
            last = size
        else:
            lr = 1.0
            while lr > 1e-10:
                new = beta - lr * step
                nll_new, g_new, h_new, noise_new = logistic_terms(new, xt, y, sample_weight, off)
                if nll_new <= nll - 1e-4 * lr * slope:
                    break
                lr /= 2
            else:
                break
        beta, nll, g, h, noise = new, nll_new, g_new, h_new, noise_new
    return LogisticFit(beta, float(nll), it, h, converged)


def fit_logistic(x: np.ndarray, y: np.ndarray, sample_weight: np.ndarray | None, start, max_iter: int = 100,
                 tol: float = 0.0, offset=None) -> tuple[np.ndarray, float, int]:
    """``(beta, nll, n_iter)`` of :func:`solve_logistic` (the calibrators' form)."""
    fit = solve_logistic(x, y, sample_weight, start, max_iter, tol, offset)
    return fit.beta, fit.nll, fit.n_iter


def covariance(hessian: np.ndarray) -> np.ndarray:
    """The inverse of the observed information (the Hessian of the negative log-likelihood): the
    coefficients' covariance, NaN where the Hessian is singular (separated classes, one distinct value)."""
    try:
        cov = np.linalg.inv(hessian)
    except np.linalg.LinAlgError:
        cov = np.full_like(hessian, np.nan)
    return cov


