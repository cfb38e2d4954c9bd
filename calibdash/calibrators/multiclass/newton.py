"""Damped Newton for the scaling family's small problems, and the loop every Newton solver shares.

:func:`descend` ends with one of these (its ``why``):

* ``"gtol"``: the solver's gradient rule;
* ``"ftol"``: an accepted step lowered the objective by at most ``ftol max(|f_k|, |f_{k+1}|, 1)`` plus its
  rounding (on classes separable by their own score, whose parameters run to infinity, the decreases shrink
  into the rounding, which grows with the scores);
* ``"floating-point limit"``: no step along the direction, halved down to 2^-40 (or until the decrease it
  predicts is within the rounding), lowers the objective *strictly* (where it is flat to rounding, equal-valued
  steps were accepted and the iterate wandered until the iteration cap);
* ``"max_iter"``; ``"time"``: the wall clock passed ``deadline`` (a safety net).

With the stop it returns the Newton decrement of the last direction, ``-g.d / 2`` (the decrease the quadratic
model predicts), by which :func:`~calibdash.calibrators.multiclass.linear.fit_linear` judges "ftol" and
"floating-point limit" ends.
"""
from __future__ import annotations

import time
from typing import Callable, NamedTuple

import numpy as np

from .linear_map import (SCALE_BOUNDS, LinearForm, free_gradient, penalty_curvature, objective, predict_linear,
                         rounding)

__all__ = []

#: The line search halves the step down to this (then the floating-point limit ends the loop).
SMALLEST_STEP = 2.0 ** -40


class Stop(NamedTuple):
    """How a Newton loop ended."""

    theta: np.ndarray
    n_iter: int              # accepted steps
    why: str                 # one of the rules of the module docstring
    decrement: float         # -g.d / 2 of the last direction computed (0 when none was: the gradient rule)
    f: float                 # the objective at theta


def descend(theta: np.ndarray, evaluate: Callable, direction: Callable, small: Callable, ftol: float,
            max_iter: int, deadline: float, project: Callable | None = None,
            rounding: Callable | None = None) -> Stop:
    """The Newton loop: ``evaluate(theta) -> (f, g, aux)``, ``direction(theta, g, aux) -> d``, ``small(theta, g)``
    (the gradient rule), ``project(theta)`` (onto bounds; the decrease is measured along the projected step),
    ``rounding(theta, f)``: the objective's rounding (None: 0). A step is halved until the objective falls
    strictly and by at least 1e-4 of the decrease its slope predicts (Armijo)."""
    f, g, aux = evaluate(theta)
    decrement = 0.0
    for it in range(int(max_iter)):
        if small(theta, g):
            return Stop(theta, it, "gtol", 0.0, f)
        if time.monotonic() > deadline:
            return Stop(theta, it, "time", decrement, f)
        d = direction(theta, g, aux)
        decrement = max(-float(g @ d) / 2.0, 0.0)
        noise = 0.0 if rounding is None else rounding(theta, f)
        step = 1.0
        while True:
            cand = theta + step * d
            if project is not None:
                cand = project(cand)
            f_new, g_new, aux_new = evaluate(cand)
            if f_new < f and f_new <= f + 1e-4 * float(g @ (cand - theta)):
                break
            step /= 2.0
            if step < SMALLEST_STEP or step * decrement <= noise:        # no visible decrease is left
                return Stop(theta, it, "floating-point limit", decrement, f)
        theta, f_old, f, g, aux = cand, f, f_new, g_new, aux_new
        if f_old - f <= ftol * max(abs(f_old), abs(f), 1.0) + noise:
            return Stop(theta, it + 1, "ftol", decrement, f)
    return Stop(theta, int(max_iter), "max_iter", decrement, f)


def hessian(theta, X, sample_weight, form, lam, mu, absent=None):
    """The objective's Hessian at ``theta`` (diagonal and full forms, and the scalar form without intercepts).

    With ``S_i = diag(q_i) - q_i q_i^T`` the softmax's Jacobian, a parameter ``p`` acting on class ``c_p`` with
    coefficient ``phi_ip`` (``x_il`` for ``W_{c_p l}``, 1 for ``b_{c_p}``) has
    ``H_pr = sum_i w_i phi_ip phi_ir S_i[c_p, c_r] / sum(w)``; the scalar form's one entry is the weighted mean
    variance of ``x_i`` under ``q_i``; the penalty adds its diagonal. Cost: ``n p^2`` for ``p`` parameters.
    """
    n, k = X.shape
    Q = predict_linear(X, theta, form, absent)
    u = np.full(n, 1.0 / n) if sample_weight is None else sample_weight / sample_weight.sum()
    if form.matrix == "scalar":
        mean = np.einsum("ij,ij->i", Q, X)
        H = np.array([[float(u @ (np.einsum("ij,ij->i", Q, X * X) - mean * mean))]])
    else:
        if form.matrix == "full":
            phi, cls = np.tile(X, k), np.repeat(np.arange(k), k)
        else:
            phi, cls = X, np.arange(k)
        if form.bias:
            phi, cls = np.hstack([phi, np.ones((n, k))]), np.concatenate([cls, np.arange(k)])
        Qc = Q[:, cls]
        U = phi * Qc
        H = ((phi * (u[:, None] * Qc)).T @ phi) * (cls[:, None] == cls[None, :]) - (U * u[:, None]).T @ U
    return H + np.diag(penalty_curvature(theta.size, form, k, lam, mu))


def damped_newton(theta, X, y, sample_weight, form, lam, mu, gtol, ftol, max_iter, deadline, free=None,
                  absent=None) -> Stop:
    """Damped Newton on the formed Hessian: the step solves ``H d = -g`` on the ``free`` parameters (None: all) and
    on the range of ``H`` (eigenvalues above 1e-12 of the largest; the null directions, the softmax's
    invariances, are left as they are). Gradient rule: the largest free entry at most ``gtol``."""
    work = np.empty(X.shape)
    free = np.ones(theta.size, dtype=bool) if free is None else free

    def evaluate(t):
        f, _, g = objective(t, X, y, sample_weight, form, lam, mu, work, absent=absent)
        return f, np.where(free, g, 0.0), None

    def direction(t, g, _):
        vals, vecs = np.linalg.eigh(hessian(t, X, sample_weight, form, lam, mu, absent)[np.ix_(free, free)])
        keep = vals > vals.max() * 1e-12
        d = np.zeros_like(t)
        d[free] = -vecs[:, keep] @ ((vecs[:, keep].T @ g[free]) / vals[keep])
        return d

    xmax = np.abs(X).max(axis=0)
    return descend(theta, evaluate, direction, lambda t, g: float(np.max(np.abs(g))) <= gtol, ftol, max_iter,
                   deadline, rounding=lambda t, f: rounding(t, f, form, xmax))


def scalar_terms(beta: float, X: np.ndarray, y: np.ndarray, u: np.ndarray, work: np.ndarray,
                  work2: np.ndarray) -> tuple[float, float, float]:
    """The NLL of ``softmax(beta x)`` and its first two derivatives in ``beta``, from one exponential of the rows:

    .. math::  f = \\sum_i u_i [\\operatorname{lse}(\\beta x_i) - \\beta x_{i y_i}], \\quad
               f' = \\sum_i u_i [E_{q_i} x - x_{i y_i}], \\quad f'' = \\sum_i u_i \\operatorname{Var}_{q_i} x,

    ``u`` the weights divided by their sum; ``work`` and ``work2`` (n, K) buffers."""
    np.multiply(X, beta, out=work)
    top = work.max(axis=1)
    work -= top[:, None]
    np.exp(work, out=work)
    total = work.sum(axis=1)
    np.multiply(work, X, out=work2)
    m1 = work2.sum(axis=1) / total                       # E_q x
    m2 = np.einsum("ij,ij->i", work2, X) / total         # E_q x^2
    xy = X[np.arange(y.size), y]
    f = float(u @ (np.log(total) + top - beta * xy))
    return f, float(u @ (m1 - xy)), float(u @ np.maximum(m2 - m1 * m1, 0.0))


def newton_scalar(theta, X, y, sample_weight, gtol, ftol, max_iter, deadline) -> Stop:
    """Newton's method on temperature scaling's one factor ``beta`` (the NLL is convex in it), clipped to
    :data:`SCALE_BOUNDS`. Gradient rule: ``|f'| <= gtol``, or ``beta`` at a bound with the slope pushing out."""
    lo, hi = SCALE_BOUNDS
    u = np.full(y.size, 1.0 / y.size) if sample_weight is None else sample_weight / sample_weight.sum()
    work, work2 = np.empty(X.shape), np.empty(X.shape)
    form = LinearForm("scalar", False)
    xmax = np.abs(X).max(axis=0)

    def evaluate(t):
        f, g, h = scalar_terms(float(t[0]), X, y, u, work, work2)
        return f, np.array([g]), h

    def direction(t, g, h):
        return np.array([-g[0] / h if h > 0 else -np.sign(g[0]) * t[0]])

    return descend(np.array([float(theta[0])]), evaluate, direction,
                   lambda t, g: free_gradient(t, g, form) <= gtol, ftol, max_iter, deadline,
                   project=lambda t: np.clip(t, lo, hi), rounding=lambda t, f: rounding(t, f, form, xmax))
