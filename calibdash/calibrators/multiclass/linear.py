"""The one solver of the scaling family: a weighted multinomial logistic regression on a linear map of the log-scores.

Every method of the family predicts

.. math::  \\hat q(x) = \\operatorname{softmax}(W x + b)

for a row ``x`` of K log-scores (logits, or log-probabilities), and differs only in the form of ``W``
(:class:`~.linear_map.LinearForm`): a scalar times the identity (temperature scaling, Guo et al. 2017, Eq. 9, with
``W = I / T``), a diagonal (vector scaling, Guo et al. Sec. 4.2), or a full K x K matrix (matrix scaling;
Dirichlet calibration, Kull et al. 2019, Eq. 4, on log-probabilities), with or without the intercept ``b``. The
parameters minimise the weighted mean negative log-likelihood plus a penalty:

.. math::  L(W, b) = \\frac{1}{\\sum_i w_i} \\sum_i w_i \\bigl[-\\log \\hat q_{y_i}(x_i)\\bigr] + R(W, b)

* ``penalty=None``: ``R = 0``;
* ``"l2"``: ``R = lambda * mean of the squares of every parameter``; for the full form
  ``lambda / (K (K + 1)) * (||W||^2 + ||b||^2)``, Kull et al.'s "Dir-L2" normalised as their ``dirichletcal``
  package does (``reg_norm=True``);
* ``"odir"``: Kull et al.'s Off-Diagonal and Intercept Regularisation (Sec. 3.2):
  ``R = lambda / (K (K - 1)) * sum_{j != k} W_jk^2 + mu / K * sum_j b_j^2``; the diagonal is free.

The mean (not the sum) of the row terms, as the paper writes, makes ``lambda`` and ``mu`` mean the same at any n;
a row of weight ``w`` counts as ``w`` rows, and multiplying every weight by ``c`` changes nothing.

Solver (:func:`fit_linear`): temperature scaling by Newton on its one factor (kept in ``[exp(-10), exp(10)]``,
scikit-learn's bounds); problems whose Hessian costs at most :data:`NEWTON_WORK` by damped Newton on the formed
Hessian (:mod:`.newton`); larger vector and full forms by Newton-CG (:mod:`.newton_cg`). All start at the fitted
temperature's map or a given warm start and end by the rule of :func:`.newton.descend`. The fit counts as
converged when the gradient rule stopped it, or when the decrease rule or the floating-point limit did with the
last Newton decrement at most ``10 ftol`` of the objective plus four times its rounding
(:func:`.linear_map.rounding`), or with the largest free gradient entry at most ``gtol (1 + max |W x + b|)``
(multiplying the log-scores by ``c`` multiplies the gradient by ``c``). Otherwise it warns
(:class:`~sklearn.exceptions.ConvergenceWarning`) and says so in ``converged``: it never returns the start
silently (netcal issue #61). The scalar form with intercepts (no method uses it) is left to scipy's L-BFGS-B.

Classes no row names: the likelihood would push their score to minus infinity (no finite optimum). Such a class
is left out of the objective's softmax and keeps the fitted temperature's map (``W_c = e_c / T``, ``b_c = 0``):
it keeps a probability above 0 at prediction.

Where we depart from the authors: log-scores of probabilities 0 are floored at
:data:`~calibdash.calibrators.multiclass.base.LOG_FLOOR` (1e-300, log -690.8). Kull et al.'s package clips at
``np.finfo(dtype).tiny`` (log -708.4), their Keras experiments at ``eps`` (2.2e-16); scikit-learn's temperature
scaling takes ``log(p + 1e-12)``. The floor is the package's float64 choice to within 18 nats and leaves every
probability from 1e-300 up unchanged (a floor of 1e-12 would flatten the many below it a confident network gives).

Threads: a fit and the penalty search run their n x K x K products on one BLAS thread (threadpoolctl): for K up
to a few hundred one thread is at full speed, and on a shared machine a second thread's spin-waits multiplied the
CPU time of a 100-class fit by about 15.
"""
from __future__ import annotations

import time
import warnings

import numpy as np
from scipy.optimize import minimize
from sklearn.exceptions import ConvergenceWarning
from threadpoolctl import threadpool_limits

from ...core.errors import DataError
from .linear_map import (SCALE_BOUNDS, LinearFit, LinearForm, free_gradient, free_mask, hessian_diagonal,
                         identity_start, n_parameters, objective, rounding, score_bound)
from .newton import damped_newton, newton_scalar
from .newton_cg import newton_cg_solve

__all__ = ["MAX_FULL_CLASSES"]

#: Newton's method on the formed Hessian is used when it costs at most this many multiply-adds (n * p^2, p
#: parameters): every form for 10 classes at 10,000 rows; Newton-CG beyond.
NEWTON_WORK = 2.5e8

#: The full maps are refused above this many classes: their block preconditioner holds K (K + 1)^2 floats
#: (127 MB at 250 classes, about 0.5 GB at the peak; 8 GB at 1,000), and each Hessian-vector product costs
#: 2 n K^2 multiply-adds.
MAX_FULL_CLASSES = 250

#: The wall-clock cap of one fit's solver (seconds): a safety net, never reached on the inputs measured.
MAX_SECONDS = 600.0


def check_size(form: LinearForm, k: int, what: str = "the linear calibration map") -> None:
    """Refuse (:class:`DataError`) a full map of more than :data:`MAX_FULL_CLASSES` classes, before anything is
    allocated."""
    if form.matrix == "full" and k > MAX_FULL_CLASSES:
        gib = k * (k + 1) ** 2 * 8 / 2 ** 30
        raise DataError(f"{what}: a full K x K map of {k:,} classes is beyond the limit of {MAX_FULL_CLASSES} "
                        f"classes (its solver would hold {gib:.1f} GiB of per-class Hessian blocks and take "
                        f"{k * k:,} parameters); use vector scaling or temperature scaling, which fit any number "
                        "of classes.")


def fit_linear(X: np.ndarray, y: np.ndarray, sample_weight: np.ndarray | None, form: LinearForm, lam: float = 0.0,
               mu: float = 0.0, start: np.ndarray | None = None, gtol: float = 1e-9, ftol: float = 1e-13,
               max_iter: int = 5000, what: str = "the linear calibration map",
               max_seconds: float | None = None) -> LinearFit:
    """Minimise :func:`~.linear_map.objective` from ``start`` (default the fitted temperature's map) by Newton's
    method, on the formed Hessian or by conjugate-gradient steps (module docstring).

    Parameters
    ----------
    X : ndarray (n, K)
        Log-scores, finite.
    y : ndarray (n,)
        Class indices.
    sample_weight : ndarray (n,) or None
        Row weights (None: 1 each).
    form : LinearForm
    lam, mu : float
        Penalty strengths (module docstring); ``mu`` is used by ODIR only.
    start : ndarray, optional
        Warm start (the fit at the neighbouring penalty of a grid); absent classes' parameters are set to the
        temperature map's whatever the start.
    gtol, ftol, max_iter, max_seconds
        The stopping rule (module docstring); ``max_seconds`` None: :data:`MAX_SECONDS`.
    what : str
        Names the fit in the warning when it does not converge.

    Returns
    -------
    LinearFit

    Raises
    ------
    DataError
        A full map of more than :data:`MAX_FULL_CLASSES` classes; no row of positive weight; non-finite values.
    """
    with threadpool_limits(1):
        return _fit_linear(X, y, sample_weight, form, lam, mu, start, gtol, ftol, max_iter, what,
                           MAX_SECONDS if max_seconds is None else float(max_seconds))


def _fit_linear(X, y, w, form, lam, mu, start, gtol, ftol, max_iter, what, max_seconds) -> LinearFit:
    """:func:`fit_linear`'s work, on the threads it allows."""
    n, k = X.shape
    check_size(form, k, what)
    deadline = time.monotonic() + max_seconds
    counts = np.bincount(y, weights=w, minlength=k)
    if not np.any(counts > 0):
        raise DataError(f"{what} could not be fitted: no row has a weight above 0.")
    absent = (counts <= 0) & (form.matrix != "scalar")
    free = free_mask(form, k, absent)
    theta0 = None if start is None else np.array(start, dtype=float)
    if form.matrix != "scalar" and (theta0 is None or absent.any()):
        # the fitted temperature's map, not the identity: the same optimum (convex), but on saturated scores the
        # identity sits where the softmax is flat to e^-690 and Newton's steps have no curvature to use
        beta = fit_linear(X, y, w, LinearForm("scalar", False), gtol=gtol, ftol=ftol, what=what,
                          max_seconds=max_seconds).theta[0]
        base = identity_start(form, k)
        base[:n_parameters(LinearForm(form.matrix, False), k)] *= beta
        theta0 = base if theta0 is None else np.where(free, theta0, base)
    elif theta0 is None:
        theta0 = identity_start(form, k)
    pin = absent if absent.any() else None
    if form.matrix == "scalar" and form.bias:
        theta, n_iter, why, converged = _lbfgs(theta0, X, y, w, form, lam, mu, gtol, ftol, max_iter, deadline)
    else:
        if form.matrix == "scalar":
            stop = newton_scalar(theta0, X, y, w, gtol, ftol, max_iter, deadline)
        elif n * int(free.sum()) ** 2 <= NEWTON_WORK:
            stop = damped_newton(theta0, X, y, w, form, lam, mu, gtol, ftol, max_iter, deadline, free, pin)
        else:
            stop = newton_cg_solve(theta0, X, y, w, form, lam, mu, gtol, ftol, max_iter, deadline, free, pin)
        theta, n_iter, why = stop.theta, stop.n_iter, stop.why
        xmax = np.abs(X).max(axis=0)
        gfree = free_gradient(theta, np.where(free, objective(theta, X, y, w, form, lam, mu, absent=pin)[2], 0.0),
                               form)
        converged = why == "gtol" or (why in ("ftol", "floating-point limit") and (
            stop.decrement <= 10 * ftol * max(abs(stop.f), 1.0) + 4 * rounding(theta, stop.f, form, xmax)
            or gfree <= gtol * (1.0 + score_bound(theta, form, xmax))))
    _, _, grad = objective(theta, X, y, w, form, lam, mu, absent=pin)
    gmax = free_gradient(theta, np.where(free, grad, 0.0), form)
    loss, nll, _ = objective(theta, X, y, w, form, lam, mu)
    if not np.all(np.isfinite(theta)) or not np.isfinite(loss):
        raise DataError(f"{what} could not be fitted: the solver reached non-finite values ({why}).")
    if not converged:
        cause = (f"reached its wall-clock cap of {max_seconds:g} s" if why == "time" else
                 f"stopped by {why} after {n_iter} iterations")
        warnings.warn(f"{what} did not converge: the solver {cause} with a gradient entry of {gmax:.2g}; the "
                      "map may be off its optimum.", ConvergenceWarning, stacklevel=3)
    return LinearFit(theta, float(loss), float(nll), int(n_iter), gmax, bool(converged), why,
                     tuple(int(c) for c in np.flatnonzero(absent)))


def _lbfgs(theta0, X, y, w, form, lam, mu, gtol, ftol, max_iter, deadline):
    """``(theta, n_iter, why, converged)`` of the scalar form with intercepts by scipy's L-BFGS-B, in variables
    scaled by the Hessian diagonal at the start; converged: success, or "ABNORMAL" with a gradient below
    ``100 gtol``."""
    scale = 1.0 / np.sqrt(hessian_diagonal(theta0, X, w, form, lam, mu))
    lo, hi = SCALE_BOUNDS
    bounds = [(lo / scale[0], hi / scale[0])] + [(None, None)] * (theta0.size - 1)
    work = np.empty(X.shape)

    def fun(phi):
        loss, _, grad = objective(phi * scale, X, y, w, form, lam, mu, work)
        return loss, grad * scale

    def callback(intermediate_result):  # noqa: ARG001 - scipy's name for the argument
        if time.monotonic() > deadline:
            raise StopIteration

    res = minimize(fun, theta0 / scale, jac=True, method="L-BFGS-B", bounds=bounds, callback=callback,
                   options={"maxiter": int(max_iter), "gtol": gtol, "ftol": ftol, "maxcor": 20})
    theta = res.x * scale
    gmax = free_gradient(theta, objective(theta, X, y, w, form, lam, mu, work)[2], form)
    timed_out = time.monotonic() > deadline and not res.success
    converged = not timed_out and (bool(res.success) or ("ABNORMAL" in str(res.message) and gmax <= 100 * gtol))
    return theta, int(res.nit), "time" if timed_out else f"L-BFGS-B: {res.message}", converged
