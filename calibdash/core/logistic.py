"""The one weighted logistic-regression solver: Platt, beta and temperature scaling and the calibration slope.

``P(y = 1) = sigmoid(offset + x @ beta)`` by maximum weighted likelihood (:func:`solve_logistic`). Platt scaling
fits ``x = [logit(s), 1]``, beta calibration ``x = [ln s, -ln(1 - s), 1]`` (and its reduced forms), temperature
scaling ``x = logit(s)`` (``beta = 1/T``), the calibration intercept and slope ``x = [1, logit(p)]`` and ``x = 1``
with ``offset = logit(p)``.
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
    """Weighted negative log-likelihood of ``y`` under ``sigmoid(beta @ xt + offset)``, its gradient and Hessian in
    ``beta``, and the size of its rounding error.

    Each row's terms are computed without cancellation however large the log-odds ``f``: the loss as
    ``y softplus(-f) + (1 - y) softplus(f)`` (not ``softplus(f) - y f``, which loses ``eps |f|``), ``q - y`` as
    ``(1 - y) sigmoid(f) - y sigmoid(-f)`` (not 0 once ``sigmoid(f)`` rounds to 1), ``q (1 - q)`` as
    ``sigmoid(f) sigmoid(-f)``. ``xt`` is the design matrix transposed, (k, n), C-contiguous, so every sum over
    the rows is numpy's pairwise summation rather than a BLAS product, whose order changes with the library.
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


#: The log-likelihood's rounding error, in eps times the sum of its terms' sizes (generous: a term is off by a
#: few ulps of itself and of ``|q - y| |f|``, a pairwise sum of n terms by about log2(n) ulps).
_NOISE = 1024 * np.finfo(float).eps
#: A Newton step below this many ulps of the coefficients is at the floating-point limit.
_ULPS = 4 * np.finfo(float).eps
#: Largest change of any row's log-odds in one step: where the fit is saturated the Hessian is nearly 0 and
#: the Newton step enormous (1e12), beyond what the line search's halvings bring back.
_MAX_CHANGE = 16.0


def solve_logistic(x: np.ndarray, y: np.ndarray, sample_weight: np.ndarray | None, start, max_iter: int = 100,
                   tol: float = 0.0, offset=None) -> LogisticFit:
    """Unregularised weighted maximum-likelihood logistic regression, iterated to the floating-point limit.

    Newton's method with a backtracking (Armijo) line search (Lin, Lin & Weng, 2007, for Platt's two
    parameters). The step solves the Hessian system by least squares, singular values below 1e-10 of the
    largest dropped, so collinear columns (one distinct score) take the minimum-norm step.

    Stopping rule. Not a gradient tolerance, which leaves two fits of the same likelihood (rows, or the same
    rows as weighted cells) at different points (1.5e-8 relative apart for beta calibration on 4,000 rows).
    Instead: while Newton's predicted decrease ``g' H^-1 g / 2`` is above the loss's rounding error
    (:data:`_NOISE`), steps are damped by the line search (after shortening one that would move a row's
    log-odds by more than :data:`_MAX_CHANGE`); below it the loss is flat to rounding and full Newton steps
    are taken (refused if the loss rises by more than its rounding) while each is smaller than the one before.
    It ends when a step is below 4 ulps of the coefficients (that step taken), when a quadratic-phase step is
    not smaller than the previous (the previous iterate kept), when the line search fails, or after
    ``max_iter``. The coefficients are then off the optimum by about the rounding of the gradient's pairwise
    sums through the inverse Hessian: fits of one likelihood, in any row order, as rows or cells, on any CPU,
    agree to about 1e-11 relative (against 1.5e-6 for a gradient rule ``tol = 1e-10``).

    ``x``: the (n, k) design matrix (a column of ones for an intercept); ``y``: targets in [0, 1] (labels, or
    Platt's smoothed targets); ``sample_weight``: row weights or None; ``start``: k starting coefficients;
    ``tol``: also stop when the gradient's largest entry is below ``tol`` times the total weight (0: never);
    ``offset``: a known term of each row's log-odds. Returns the coefficients, the weighted NLL and its Hessian
    there, the iterations, and ``converged`` (False when the line search failed or ``max_iter`` ran out).
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
    """The coefficients' covariance, the inverse of the observed information (the NLL's Hessian); NaN where it is
    singular (separated classes, one distinct value)."""
    try:
        return np.linalg.inv(hessian)
    except np.linalg.LinAlgError:
        return np.full_like(hessian, np.nan)


