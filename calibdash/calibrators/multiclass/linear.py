"""The one solver of the scaling family: a weighted multinomial logistic regression on a linear map of the log-scores.

Every method of the family (temperature, vector, matrix and Dirichlet scaling) predicts

.. math::  \\hat q(x) = \\operatorname{softmax}(W x + b)

for a row ``x`` of K log-scores (logits, or log-probabilities), and differs only in the form of ``W``
(:class:`LinearForm`): a scalar times the identity (temperature scaling, Guo et al. 2017, Eq. 9, with
``W = I / T``), a diagonal (vector scaling, Guo et al. Sec. 4.2), or a full K x K matrix (matrix scaling;
Dirichlet calibration, Kull et al. 2019, Eq. 4, on log-probabilities), with or without the intercept
``b``. The parameters minimise the weighted mean negative log-likelihood (the cross-entropy of the
softmax) plus a penalty:

.. math::  L(W, b) = \\frac{1}{\\sum_i w_i} \\sum_i w_i \\bigl[-\\log \\hat q_{y_i}(x_i)\\bigr] + R(W, b)

* ``penalty=None``: ``R = 0``;
* ``"l2"``: ``R = lambda * mean of the squares of every parameter`` (the entries of W in its form, and of
  b); for the full form this is ``lambda / (K (K + 1)) * (||W||^2 + ||b||^2)``, the L2 of Kull et al.'s
  "Dir-L2", normalised as their ``dirichletcal`` package does (``reg_norm=True``), towards 0 as theirs;
* ``"odir"``: Kull et al.'s Off-Diagonal and Intercept Regularisation (Sec. 3.2):
  ``R = lambda / (K (K - 1)) * sum_{j != k} W_jk^2 + mu / K * sum_j b_j^2`` (lambda times the mean square
  of the off-diagonal entries, mu times the mean square of the intercepts). The diagonal is free.

The mean (not the sum) of the row terms is what the paper writes and is what makes ``lambda`` and ``mu``
mean the same at any n; a row of weight ``w`` counts as ``w`` rows (the mean over the rows repeated equals
the weighted mean), and multiplying every weight by ``c`` changes nothing.

Modules. The map and its objective: :mod:`.linear_map`; dense Newton and the loop every solver shares
(with its stopping rule): :mod:`.newton`; Newton with conjugate-gradient steps: :mod:`.newton_cg`; the
choice of lambda and mu by cross-validation: :mod:`.penalty_search`; the calibrator class:
:mod:`.scaling`. This module drives them (:func:`fit_linear`) and re-exports what the rest of calibdash
imports from it.

Solver (:func:`fit_linear`). Temperature scaling: Newton on its one factor. Small problems (the Hessian
costs at most :data:`NEWTON_WORK` multiply-adds: every form for 10 classes at 10,000 rows) by damped Newton
on the formed Hessian; the vector and full forms beyond that by Newton's method with conjugate-gradient
steps on Hessian-vector products. All start at the fitted temperature's map or a given warm start, and
all end by the rule of :func:`.newton.descend`: the gradient rule (``gtol``), a step's relative decrease at
most ``ftol``, no step lowering the objective strictly (the floating-point limit), ``max_iter``
iterations, or the wall clock past ``max_seconds`` (default :data:`MAX_SECONDS`, a safety net). The fit
counts as converged when the gradient rule stopped it, or when the decrease rule or the floating-point
limit did with the Newton decrement of the last direction (the objective's predicted remaining decrease)
at most ``10 ftol`` of the objective plus four times its rounding (:func:`.linear_map.rounding`:
:data:`ROUNDING` times ``eps (1 + |L| + max |W x + b|)``, the rounding of the scores being what the
objective cannot see below: log-scores of 690 nats from probabilities of 0, or logits of 1e4, make it
large), or with the largest free gradient entry at most ``gtol`` times ``1 + max |W x + b|`` (the
gradient relative to the scale of the scores: multiplying the log-scores by ``c`` divides the fitted
``W`` by ``c`` and multiplies its gradient by ``c``). Otherwise
:func:`fit_linear` warns (a :class:`sklearn.exceptions.ConvergenceWarning`) and says so in
:attr:`LinearFit.converged`: it never returns the start silently (netcal issue #61). The scalar form with
intercepts (no method uses it) is left to scipy's L-BFGS-B.

Cost in K classes and n rows (each iteration): temperature ``n K``; vector ``n K`` per Hessian-vector
product; matrix and Dirichlet ``n K^2`` per product, and ``K^3`` floats for the block preconditioner: they
are refused above :data:`MAX_FULL_CLASSES` classes, before anything is allocated (:func:`check_size`).

Classes no row names. The likelihood pushes an absent class's score to minus infinity (no finite
optimum: the solvers wandered to their iteration cap). :func:`fit_linear` leaves such a class out of its
objective's softmax and keeps its parameters (its row of ``[W | b]``, or its diagonal entry and intercept)
at the fitted temperature's map (``W_c = e_c / T``, ``b_c = 0``), whatever the start: the other classes
are fitted among themselves, and the absent class keeps a probability above 0 at prediction. The
softmax's invariance among the others is then removed by their penalty, or left where the start puts it
(Newton's steps lie in the range of the Hessian). One class only: its softmax is constant, so the fit only
minimises the penalty from the temperature map (the calibrators refuse such labels).

The temperature form keeps its factor in ``[exp(-10), exp(10)]`` (scikit-learn's bounds on the inverse
temperature): when the likelihood keeps growing past a bound, the fit stops at the bound.

Log-scores of probabilities of exactly 0 are finite: :class:`~calibdash.calibrators.multiclass.base.Scores` floors
probabilities at :data:`~calibdash.calibrators.multiclass.base.LOG_FLOOR` (1e-300, log -690.8) before the logarithm.
Kull et al.'s package clips at ``np.finfo(dtype).tiny`` (2.2e-308 in float64, log -708.4) and their Keras
experiments at ``np.finfo(float).eps`` (2.2e-16); scikit-learn's temperature scaling takes
``log(p + 1e-12)``. The floor is kept: it is the authors' package's float64 choice to within 18 nats, it
leaves the logarithm of every float64 probability from 1e-300 up unchanged (a floor of 1e-12 would flatten
the many probabilities below it that a confident network gives), and the scores stay finite through the
softmax (it is computed from the log-sum-exp, whatever the size of ``W x``).

Threads: a fit (:func:`fit_linear`, its start and its last evaluation included) and the penalty search
run their n x K x K products on one BLAS thread (threadpoolctl): for K up to a few hundred one thread does
them at full speed, and on a machine shared with other work a second thread's spin-waits multiplied the
CPU time of a 100-class fit by about 15.
"""
from __future__ import annotations

import importlib
import time
import warnings

import numpy as np
from scipy.optimize import minimize
from sklearn.exceptions import ConvergenceWarning
from threadpoolctl import threadpool_limits

from ...core.errors import DataError
from .linear_map import (SCALE_BOUNDS, LinearFit, LinearForm, free_gradient, hessian_diagonal, penalty_curvature,
                         free_mask, identity_start, n_parameters, objective, predict_linear,
                         rounding, score_bound)
from .newton import hessian, damped_newton, newton_scalar
from .newton_cg import block_preconditioner, hessian_product, newton_cg_solve

__all__ = [
    "MAX_FULL_CLASSES", "penalty_curvature", "predict_linear", "hessian", "block_preconditioner",
    "hessian_product"
]

#: Newton's method on the formed Hessian is used when it costs at most this many multiply-adds (n * p^2, p
#: parameters): every form for 10 classes at 10,000 rows; Newton-CG beyond.
NEWTON_WORK = 2.5e8

#: The full maps (matrix scaling, Dirichlet calibration) are refused above this many classes: their block
#: preconditioner holds K (K + 1)^2 floats (127 MB at 250 classes, with its inverse and their temporaries
#: about 0.5 GB at the peak; 8 GB at 1,000 classes), and each Hessian-vector product costs 2 n K^2
#: multiply-adds (the CIFAR-100 search, K = 100, takes 15 s; at K = 250 about six times as long).
MAX_FULL_CLASSES = 250

#: The wall-clock cap of one fit's solver (seconds): a safety net, never reached on the inputs measured; a
#: fit stopped by it warns (ConvergenceWarning).
MAX_SECONDS = 600.0

_LAZY = {"penalty_search": ("fold_ids", "cv_log_loss", "select_penalty", "search_rows", "SEARCH_ROWS",
                            "penalty_grid", "_row_hashes"),
         "scaling": ("ScalingCalibrator",)}


def __getattr__(name: str):
    """The names of :mod:`.penalty_search` and :mod:`.scaling` (which import this module), on first use."""
    for module, names in _LAZY.items():
        if name in names:
            return getattr(importlib.import_module(f"{__package__}.{module}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def check_size(form: LinearForm, k: int, what: str = "the linear calibration map") -> None:
    """Refuse a full map of more than :data:`MAX_FULL_CLASSES` classes, before anything is allocated.

    Raises
    ------
    DataError
        ``form`` is full and ``k > MAX_FULL_CLASSES``.
    """
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
    """Minimise :func:`objective` from ``start`` (default the fitted temperature's map) by Newton's method,
    on the formed Hessian or by conjugate-gradient steps, whichever the problem's size calls for (module
    docstring).

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
        Warm start (for example the fit at the neighbouring penalty of a grid). The parameters of classes
        no row names are set to the temperature map's whatever the start (module docstring).
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
        A full map of more than :data:`MAX_FULL_CLASSES` classes; no row of positive weight; a fit that
        reached non-finite values.
    """
    # one BLAS thread for everything the fit does (the last objective and the start's temperature too): the
    # n x K x K products of K <= a few hundred run at full speed on one, and after a call on two, the second
    # thread's spin-waits on a busy machine cost up to 10x the CPU
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
        # from the fitted temperature's map (W = I / T, b = 0), not the identity: the objective is convex,
        # so the optimum is the same, but on saturated scores (log-scores of probabilities 0 and 1) the
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
    """The scalar form with intercepts by scipy's L-BFGS-B, in variables scaled by the inverse square root of
    the Hessian diagonal at the start, the factor in :data:`SCALE_BOUNDS`. Converged: scipy's success, or
    its line search's end ("ABNORMAL") with the largest gradient entry at most ``100 gtol``. Returns
    ``(theta, n_iter, why, converged)``."""
    scale = 1.0 / np.sqrt(hessian_diagonal(theta0, X, w, form, lam, mu))
    lo, hi = SCALE_BOUNDS
    bounds = [(lo / scale[0], hi / scale[0])] + [(None, None)] * (theta0.size - 1)
    work = np.empty(X.shape)

    def fun(phi):
        loss, _, grad = objective(phi * scale, X, y, w, form, lam, mu, work)
        return loss, grad * scale

    def callback(intermediate_result):
        if time.monotonic() > deadline:
            raise StopIteration

    res = minimize(fun, theta0 / scale, jac=True, method="L-BFGS-B", bounds=bounds, callback=callback,
                   options={"maxiter": int(max_iter), "gtol": gtol, "ftol": ftol, "maxcor": 20})
    theta = res.x * scale
    gmax = free_gradient(theta, objective(theta, X, y, w, form, lam, mu, work)[2], form)
    timed_out = time.monotonic() > deadline and not res.success
    converged = not timed_out and (bool(res.success) or ("ABNORMAL" in str(res.message) and gmax <= 100 * gtol))
    return theta, int(res.nit), "time" if timed_out else f"L-BFGS-B: {res.message}", converged
