"""The one solver of the scaling family: a weighted multinomial logistic regression on a linear map of the log-scores.

Every method of the family predicts :math:`\\hat q(x) = \\operatorname{softmax}(W x + b)` for a row ``x`` of K
log-scores (logits, or log-probabilities) and differs only in the form of ``W`` (:class:`~.linear_map.LinearForm`):
a scalar times the identity (temperature scaling, Guo et al. 2017, Eq. 9, ``W = I / T``), a diagonal (vector
scaling, Guo et al. Sec. 4.2) or a full K x K matrix (matrix scaling; Dirichlet calibration, Kull et al. 2019, Eq. 4,
on log-probabilities), with or without the intercept ``b``. The parameters minimise

.. math::  L(W, b) = \\frac{1}{\\sum_i w_i} \\sum_i w_i \\bigl[-\\log \\hat q_{y_i}(x_i)\\bigr] + R(W, b)

with ``R = 0`` (``penalty=None``); ``"l2"``: ``lambda`` times the mean square of every parameter, for the full form
``lambda / (K (K + 1)) * (||W||^2 + ||b||^2)``, Kull et al.'s "Dir-L2" normalised as their ``dirichletcal``
package (``reg_norm=True``); ``"odir"``: Kull et al.'s Off-Diagonal and Intercept Regularisation (Sec. 3.2),
``lambda / (K (K - 1)) * sum_{j != k} W_jk^2 + mu / K * sum_j b_j^2``, the diagonal free. The mean (not the sum)
of the row terms, as the paper writes, makes ``lambda`` and ``mu`` mean the same at any n; a row of weight ``w``
counts as ``w`` rows, and multiplying every weight by ``c`` changes nothing.

Solver (:func:`fit_linear`): Newton on temperature scaling's one factor (in scikit-learn's ``[exp(-10), exp(10)]``), on
the formed Hessian up to :data:`NEWTON_WORK`, Newton-CG beyond (:mod:`.newton`), from the fitted temperature's map,
ending by :func:`.newton.descend`'s rule. Converged: the gradient rule, or a decrease or floating-point end with the
last Newton decrement at most ``10 ftol |L|`` plus four times the rounding, or the largest free gradient entry at most
``gtol (1 + max |W x + b|)``; otherwise a ConvergenceWarning (never the start returned silently, netcal issue #61).

A class no row names would have its score pushed to minus infinity (no finite optimum): it is left out of the
objective's softmax and keeps the fitted temperature's map (``W_c = e_c / T``, ``b_c = 0``), so a probability above 0.

Where we depart from the authors: log-scores of probabilities 0 are floored at
:data:`~calibdash.calibrators.multiclass.base.LOG_FLOOR` (1e-300, log -690.8), where Kull et al.'s package clips at
``np.finfo(dtype).tiny`` (log -708.4), their Keras experiments at ``eps`` (2.2e-16) and scikit-learn's temperature
scaling takes ``log(p + 1e-12)``: the package's float64 choice to within 18 nats, leaving every probability from
1e-300 up unchanged (a floor of 1e-12 would flatten the many below it a confident network gives).

Threads: a fit and the penalty search run their n x K x K products on one BLAS thread (threadpoolctl): for K up to a
few hundred one thread is at full speed, and on a shared machine a second thread's spin-waits multiplied the CPU
time of a 100-class fit by about 15.
"""
from __future__ import annotations

import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from threadpoolctl import threadpool_limits

from ...core.errors import DataError
from .linear_map import (LinearFit, LinearForm, free_gradient, free_mask, identity_start, n_parameters, objective,
                         rounding, score_bound)
from .newton import damped_newton, newton_cg_solve, newton_scalar

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
    """Refuse (:class:`DataError`) a full map of over :data:`MAX_FULL_CLASSES` classes, before any allocation."""
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
    """The :class:`~.linear_map.LinearFit` of ``form`` to finite log-scores ``X`` (n, K) and class indices ``y`` by
    Newton's method (module docstring), on one BLAS thread. ``lam``, ``mu``: the penalty strengths (``mu``: ODIR only).
    ``start``: a warm start (absent classes' parameters set to the temperature map's whatever it is); None: the fitted
    temperature's map, not the identity Kull et al. start from: the same optimum (convex), but on saturated scores the
    identity sits where the softmax is flat to e^-690 and Newton's steps have no curvature to use. ``gtol``, ``ftol``,
    ``max_iter``, ``max_seconds`` (None: :data:`MAX_SECONDS`): the stopping rule. ``what`` names the fit in messages.
    :class:`DataError`: a full map above :data:`MAX_FULL_CLASSES` classes, no row of positive weight, or non-finite
    values."""
    w, max_seconds = sample_weight, MAX_SECONDS if max_seconds is None else float(max_seconds)
    with threadpool_limits(1):
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
            beta = fit_linear(X, y, w, LinearForm("scalar", False), gtol=gtol, ftol=ftol, what=what,
                              max_seconds=max_seconds).theta[0]
            base = identity_start(form, k)
            base[:n_parameters(LinearForm(form.matrix, False), k)] *= beta
            theta0 = base if theta0 is None else np.where(free, theta0, base)
        elif theta0 is None:
            theta0 = identity_start(form, k)
        pin = absent if absent.any() else None
        if form.matrix == "scalar":
            stop = newton_scalar(theta0, X, y, w, gtol, ftol, max_iter, deadline)
        elif n * int(free.sum()) ** 2 <= NEWTON_WORK:
            stop = damped_newton(theta0, X, y, w, form, lam, mu, gtol, ftol, max_iter, deadline, free, pin)
        else:
            stop = newton_cg_solve(theta0, X, y, w, form, lam, mu, gtol, ftol, max_iter, deadline, free, pin)
        theta, n_iter, why = stop.theta, stop.n_iter, stop.why
        xmax = np.abs(X).max(axis=0)
        gmax = free_gradient(theta, np.where(free, objective(theta, X, y, w, form, lam, mu, absent=pin)[2], 0.0), form)
        converged = why == "gtol" or (why in ("ftol", "floating-point limit") and (
            stop.decrement <= 10 * ftol * max(abs(stop.f), 1.0) + 4 * rounding(theta, stop.f, form, xmax)
            or gmax <= gtol * (1.0 + score_bound(theta, form, xmax))))
        loss, nll, _ = objective(theta, X, y, w, form, lam, mu)
        if not np.all(np.isfinite(theta)) or not np.isfinite(loss):
            raise DataError(f"{what} could not be fitted: the solver reached non-finite values ({why}).")
        if not converged:
            cause = (f"reached its wall-clock cap of {max_seconds:g} s" if why == "time" else
                     f"stopped by {why} after {n_iter} iterations")
            warnings.warn(f"{what} did not converge: the solver {cause} with a gradient entry of {gmax:.2g}; the "
                          "map may be off its optimum.", ConvergenceWarning, stacklevel=2)
        return LinearFit(theta, float(loss), float(nll), int(n_iter), bool(converged), why,
                         tuple(int(c) for c in np.flatnonzero(absent)))
