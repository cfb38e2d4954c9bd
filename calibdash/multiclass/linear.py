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

Solver (:func:`fit_linear`). Small problems (the Hessian costs at most :data:`NEWTON_WORK` multiply-adds:
every form for 10 classes at 10,000 rows, temperature scaling always) are solved by damped Newton on the
analytic gradient and Hessian (:func:`_newton`), to a largest gradient entry of ``gtol`` (or the
floating-point limit: 1e-12 times the largest log-score, the rounding of the gradient's sums). Full maps
beyond that (matrix scaling and Dirichlet calibration of 100 classes: 10,100 parameters) by Newton's method
with its steps solved by preconditioned conjugate gradients on Hessian-vector products
(:func:`_newton_cg`); the other larger ones (vector scaling of 100 classes: 200 parameters) by scipy's
L-BFGS-B on the analytic gradient. Both start at the fitted temperature's map or a given warm start. The
stopping rule is the same for both, in variables scaled by the inverse square root of the objective's
Hessian diagonal at the start (a Jacobi scaling: the log-scores of a confident network span tens of nats,
so the unscaled problem is badly conditioned; the scaling changes the path, not the optimum): the largest
entry of the (scaled, projected) gradient at most ``gtol``, or the objective's relative reduction in a step
at most ``ftol`` (``(f_k - f_{k+1}) / max(|f_k|, |f_{k+1}|, 1) <= ftol``), or ``max_iter`` iterations. A
Newton step near the optimum removes nearly all of the remaining gap, so there the second rule leaves the
objective far closer to its minimum than the same rule after an L-BFGS step. The fit counts as converged
when the first or second rule stopped it, or when it stopped in the line search (the floating-point limit;
scipy's "ABNORMAL" ending) with the largest entry of the gradient at most ``100 * gtol``; otherwise
:func:`fit_linear` warns (a :class:`sklearn.exceptions.ConvergenceWarning`) and says so in
:attr:`LinearFit.converged`: it never returns the start silently (netcal issue #61).

Why Newton-CG for the full maps (measured on CIFAR-100, 10,000 x 100, the 5-fold penalty search of
Dirichlet calibration with 8,000-row folds, on a shared 2-core machine): L-BFGS-B needed 70 iterations at
lambda = 1e4 and 2,000 at lambda = 1 (each a gradient: two 8,000 x 100 x 100 products and an
exponential, 14 ms), 250 s of CPU for the search and the final fit. The ill-conditioning that costs
L-BFGS-B those iterations is structured: the Hessian is a K x K grid of (K + 1) x (K + 1) blocks, each
class's own block is well described by its rows, and the softmax's "common" directions (one vector added
to every row of ``[W | b]``) are flat except for the penalty. :func:`_block_preconditioner` inverts the
blocks and solves those directions exactly, so each Newton step needs 1 to 40 conjugate-gradient steps and a
fit 4 to 10 Newton steps (Hessian-vector products run in float32, :func:`_newton_cg` says why that changes
the path only); the search and the final fit then take 14 s of CPU (15 s wall; the same machine, busy).

The temperature form keeps its factor in ``[exp(-10), exp(10)]`` (scikit-learn's bounds on the inverse
temperature): when the likelihood keeps growing past a bound (scores that rank the labels no better than
chance: ``T -> infinity``; or that separate them: ``T -> 0``), the fit stops at the bound.

Unidentified directions. The softmax ignores a constant added to every class's score, so without a
penalty, adding one vector to every row of ``[W | b]`` leaves the loss unchanged. The gradient is
orthogonal to those directions and L-BFGS moves only along gradients, so from the identity the fit stays
on the one solution nearest it along them (Newton-CG's preconditioner may move along them, which changes
no probability); the fitted probabilities are unique in any case.

Log-scores of probabilities of exactly 0 are finite: :class:`~calibdash.multiclass.base.Scores` floors
probabilities at :data:`~calibdash.multiclass.base.LOG_FLOOR` (1e-300, log -690.8) before the logarithm.
Kull et al.'s package clips at ``np.finfo(dtype).tiny`` (2.2e-308 in float64, log -708.4; 1.2e-38 for
float32 input) and their Keras experiments at ``np.finfo(float).eps`` (2.2e-16); scikit-learn's temperature
scaling takes ``log(p + 1e-12)``. The floor is kept: it is the authors' package's float64 choice to within
18 nats, it leaves the logarithm of every float64 probability from 1e-300 up unchanged (a floor of 1e-12
or 1e-16 would flatten the many probabilities below it that a confident network gives, e.g. 7e-23 in the
CIFAR-10 wide ResNet file), and the scores stay finite through the softmax (it is computed from the
log-sum-exp, whatever the size of ``W x``).

Regularisation chosen by cross-validation (:func:`select_penalty`): see its docstring (the search runs
on at most :data:`SEARCH_ROWS` distinct rows, chosen by value; the chosen map is fitted on every row).

Threads: a fit (:func:`fit_linear`, its start and its last evaluation included) and the penalty search
(:func:`cv_log_loss`, its held-out scoring included) run their n x K x K products on one BLAS thread
(threadpoolctl). For K up to a few hundred one thread does them at full speed, and on a machine shared
with other work a second thread's spin-waits multiplied the CPU time of a 100-class fit by about 15 (and
those after the few products left on two threads made the 10-class search 1.7 times slower).
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import ClassVar, NamedTuple, Sequence

import numpy as np
from scipy.optimize import minimize
from scipy.special import log_softmax, softmax
from sklearn.exceptions import ConvergenceWarning
from threadpoolctl import threadpool_limits

from ..errors import DataError, SettingsError
from .base import MulticlassCalibrator, Scores

__all__ = ["LinearForm", "LinearFit", "FORMS", "PENALTIES", "n_parameters", "identity_start", "unpack",
           "linear_scores", "predict_linear", "objective", "fit_linear", "fold_ids", "cv_log_loss",
           "select_penalty", "search_rows", "SEARCH_ROWS", "penalty_grid", "ScalingCalibrator", "SCALE_BOUNDS"]

#: The forms of W: a scalar times the identity, a diagonal, a full matrix.
FORMS = ("scalar", "diagonal", "full")
#: The penalties: none, L2 on every parameter, Kull et al.'s ODIR.
PENALTIES = (None, "l2", "odir")
#: Bounds on the scalar form's factor (the inverse temperature), as scikit-learn's ``exp(+-10)``.
SCALE_BOUNDS = (float(np.exp(-10.0)), float(np.exp(10.0)))


@dataclass(frozen=True)
class LinearForm:
    """What is fitted: the form of ``W`` (one of :data:`FORMS`), whether there is an intercept ``b``, and the
    penalty (one of :data:`PENALTIES`)."""

    matrix: str
    bias: bool
    penalty: str | None = None

    def __post_init__(self):
        if self.matrix not in FORMS:
            raise SettingsError(f"the linear map's form must be one of {FORMS}, got {self.matrix!r}.")
        if self.penalty not in PENALTIES:
            raise SettingsError(f"the penalty must be one of {PENALTIES}, got {self.penalty!r}.")


class LinearFit(NamedTuple):
    """What :func:`fit_linear` returns."""

    theta: np.ndarray        # the parameters: W's free entries (1, K or K*K, row-major), then b (if any)
    loss: float              # the objective at theta (weighted mean NLL + penalty)
    nll: float               # the weighted mean negative log-likelihood at theta
    n_iter: int              # solver iterations (Newton steps, or L-BFGS-B iterations)
    grad_max: float          # largest entry of the objective's gradient at theta
    converged: bool          # by the stopping rule of the module docstring


def n_parameters(form: LinearForm, k: int) -> int:
    """How many parameters ``form`` has for ``k`` classes."""
    m = {"scalar": 1, "diagonal": k, "full": k * k}[form.matrix]
    return m + (k if form.bias else 0)


def identity_start(form: LinearForm, k: int) -> np.ndarray:
    """The parameters of the identity map (``W = I``, ``b = 0``)."""
    m = {"scalar": np.ones(1), "diagonal": np.ones(k), "full": np.eye(k).ravel()}[form.matrix]
    return np.concatenate([m, np.zeros(k)]) if form.bias else m.copy()


def unpack(theta: np.ndarray, form: LinearForm, k: int) -> tuple[np.ndarray, np.ndarray]:
    """``(W_part, b)``: W's free entries in their shape (a 1-vector, a K-vector, or a K x K matrix) and the
    intercepts (zeros without one)."""
    theta = np.asarray(theta)
    if theta.dtype not in (np.float64, np.float32):     # float32 for the Hessian's products (_newton_cg)
        theta = theta.astype(float)
    m = n_parameters(LinearForm(form.matrix, False), k)
    w = theta[:m].reshape(k, k) if form.matrix == "full" else theta[:m]
    b = theta[m:] if form.bias else np.zeros(k)
    return w, b


def linear_scores(X: np.ndarray, theta: np.ndarray, form: LinearForm, out: np.ndarray | None = None) -> np.ndarray:
    """``Z = X W^T + b`` for the rows ``X`` (n, K); written into ``out`` (an (n, K) float array) if given."""
    k = X.shape[1]
    w, b = unpack(theta, form, k)
    if form.matrix == "full":
        Z = np.matmul(X, w.T, out=out)
    else:
        Z = np.multiply(X, w[0] if form.matrix == "scalar" else w[None, :], out=out)
    if form.bias:
        Z += b
    return Z


def predict_linear(X: np.ndarray, theta: np.ndarray, form: LinearForm) -> np.ndarray:
    """``softmax(W x + b)`` of each row of ``X``: rows summing to 1."""
    return softmax(linear_scores(X, theta, form), axis=1)


def _penalty(theta: np.ndarray, form: LinearForm, k: int, lam: float, mu: float):
    """The penalty and its gradient (see the module docstring)."""
    g = np.zeros_like(theta)
    if form.penalty is None or (lam == 0 and mu == 0):
        return 0.0, g
    if form.penalty == "l2":
        c = lam / theta.size
        return c * float(theta @ theta), 2.0 * c * theta
    m = theta.size - (k if form.bias else 0)        # odir
    value = 0.0
    if form.matrix == "full" and k > 1 and lam:
        off = theta[:m].reshape(k, k).copy()
        np.fill_diagonal(off, 0.0)
        c = lam / (k * (k - 1))
        value += c * float(np.sum(off * off))
        g[:m] = 2.0 * c * off.ravel()
    if form.bias and mu:
        b = theta[m:]
        value += mu / k * float(b @ b)
        g[m:] = 2.0 * mu / k * b
    return value, g


def _project(R: np.ndarray, X: np.ndarray, form: LinearForm) -> np.ndarray:
    """``sum_i R_i x_i^T`` projected on W's form (the full matrix, its diagonal, or its trace), then
    ``sum_i R_i`` for the intercepts: the derivative of ``sum_i R_i . (W x_i + b)`` in the parameters. With
    ``R`` the weighted residuals it is the gradient (:func:`objective`); with the weighted change of the
    residuals along a direction, the Hessian's product with it (:func:`_hessian_product`)."""
    if form.matrix == "full":
        gw = (R.T @ X).ravel()
    elif form.matrix == "diagonal":
        gw = np.einsum("ij,ij->j", R, X)
    else:
        gw = np.array([np.einsum("ij,ij->", R, X)])
    return np.concatenate([gw, R.sum(axis=0)]) if form.bias else gw


def objective(theta: np.ndarray, X: np.ndarray, y: np.ndarray, w: np.ndarray | None, form: LinearForm,
              lam: float = 0.0, mu: float = 0.0, work: np.ndarray | None = None,
              probabilities: np.ndarray | None = None) -> tuple[float, float, np.ndarray]:
    """``(L, NLL, gradient of L)`` at ``theta``: the weighted mean negative log-likelihood of the labels
    ``y`` under ``softmax(W x + b)`` plus the penalty (module docstring), and its analytic gradient
    ``dL/dW = R^T X`` (projected on W's form) and ``dL/db = sum_i R_i``, where ``R_i = w_i (q_i - e_{y_i}) /
    sum(w)``.

    ``work``: an (n, K) float array to compute in (a solver calls this hundreds of times; reusing one
    buffer avoids allocating, and page-faulting, fresh n x K arrays at each call). Its content is
    overwritten. ``probabilities``: an (n, K) float array that receives ``softmax(W x + b)`` (what the
    Hessian's products need, :func:`_newton_cg`), if given.
    """
    n, k = X.shape
    rows = np.arange(n)
    Z = linear_scores(X, theta, form, out=work)
    top = Z.max(axis=1)
    Z -= top[:, None]
    nll_rows = -Z[rows, y]
    np.exp(Z, out=Z)
    total = Z.sum(axis=1)
    nll_rows += np.log(total)
    Z /= total[:, None]
    if probabilities is not None:
        probabilities[...] = Z
    Z[rows, y] -= 1.0                            # R, up to the weights
    if w is None:
        nll = float(np.mean(nll_rows))
        Z *= 1.0 / n
    else:
        s = float(w.sum())
        nll = float(w @ nll_rows) / s
        Z *= (w / s)[:, None]
    pen, pen_grad = _penalty(theta, form, k, lam, mu)
    return nll + pen, nll, _project(Z, X, form) + pen_grad


def _hessian_diagonal(theta, X, w, form, lam, mu, Q=None):
    """The objective's Hessian diagonal at ``theta`` (for the Jacobi scaling of :func:`fit_linear`);
    ``Q``: the map's probabilities at ``theta``, if known."""
    n, k = X.shape
    Q = predict_linear(X, theta, form) if Q is None else Q
    V = Q * (1.0 - Q)
    V *= (1.0 / n) if w is None else (w / w.sum())[:, None]
    if form.matrix == "full":
        hw = (V.T @ (X * X)).ravel()
    elif form.matrix == "diagonal":
        hw = np.einsum("ij,ij->j", V, X * X)
    else:
        # d2/da2 of the NLL of softmax(a x) is the weighted mean of the variance of x under q.
        mean = np.einsum("ij,ij->i", Q, X)
        var = np.einsum("ij,ij->i", Q, X * X) - mean * mean
        hw = np.array([float(np.mean(var) if w is None else (w @ var) / w.sum())])
    h = np.concatenate([hw, V.sum(axis=0)]) if form.bias else hw
    h = h + _penalty_curvature(theta.size, form, k, lam, mu)
    return np.maximum(h, 1e-12)


#: Newton's method is used when the Hessian costs at most this many multiply-adds (n * p^2, p parameters):
#: every form for 10 classes at 10,000 rows, temperature always; Newton-CG (full maps) or L-BFGS-B beyond.
NEWTON_WORK = 2.5e8


def _hessian(theta, X, w, form, lam, mu):
    """The objective's Hessian at ``theta`` (forms whose parameters each act on one class's score: diagonal
    and full, with or without intercepts; and the scalar form without one), for Newton's method.

    With ``q_i`` the fitted probabilities and ``S_i = diag(q_i) - q_i q_i^T`` the softmax's Jacobian, a
    parameter ``p`` acting on class ``c_p`` with coefficient ``phi_ip`` (``x_il`` for ``W_{c_p l}``, 1 for
    ``b_{c_p}``) has ``H_pr = sum_i w_i phi_ip phi_ir S_i[c_p, c_r] / sum(w)``; the scalar form's one entry
    is the weighted mean of the variance of ``x_i`` under ``q_i``. The penalty adds its constant diagonal.
    """
    n, k = X.shape
    Q = predict_linear(X, theta, form)
    u = np.full(n, 1.0 / n) if w is None else w / w.sum()
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
    return H + np.diag(_penalty_curvature(theta.size, form, k, lam, mu))


def _penalty_curvature(size, form, k, lam, mu) -> np.ndarray:
    """The penalty's Hessian diagonal (it is diagonal: ``2 c`` for a term ``c theta_p^2``)."""
    probe = np.ones(size)
    return _penalty(probe, form, k, lam, mu)[1] - _penalty(0 * probe, form, k, lam, mu)[1]


def _newton(theta, X, y, w, form, lam, mu, gtol, max_iter):
    """Damped Newton from ``theta``: the step solves ``H d = -g`` on the range of ``H`` (its eigenvalues
    above 1e-12 of the largest; the null directions are the softmax's invariances, left as they are),
    halved until the objective falls by at least 1e-4 of the step's predicted decrease (Armijo). Stops when
    the largest gradient entry is at most ``gtol``, when no halving (down to 2^-40) lowers the objective
    (the floating-point limit), or after ``max_iter`` steps. Returns ``(theta, n_steps)``."""
    lo, hi = SCALE_BOUNDS
    work = np.empty(X.shape)
    f, _, g = objective(theta, X, y, w, form, lam, mu, work)
    it = 0
    for it in range(1, max_iter + 1):
        if _free_gradient(theta, g, form) <= gtol:
            return theta, it - 1
        vals, vecs = np.linalg.eigh(_hessian(theta, X, w, form, lam, mu))
        keep = vals > vals.max() * 1e-12
        d = -vecs[:, keep] @ ((vecs[:, keep].T @ g) / vals[keep])
        slope = float(g @ d)
        step = 1.0
        while step > 2.0 ** -40:
            cand = theta + step * d
            if form.matrix == "scalar":
                cand[0] = min(max(cand[0], lo), hi)
            f_new, _, g_new = objective(cand, X, y, w, form, lam, mu, work)
            if f_new <= f + 1e-4 * step * slope:
                break
            step /= 2
        else:
            return theta, it
        theta, f, g = cand, f_new, g_new
    return theta, it


def _scalar_terms(beta: float, X: np.ndarray, y: np.ndarray, u: np.ndarray, work: np.ndarray,
                  work2: np.ndarray) -> tuple[float, float, float]:
    """The NLL of ``softmax(beta x)`` and its first and second derivatives in ``beta`` from one pass over
    the rows (one exponential of the n x K array): with ``q_i = softmax(beta x_i)``,

    .. math::  f = \\sum_i u_i [\\operatorname{lse}(\\beta x_i) - \\beta x_{i y_i}], \\quad
               f' = \\sum_i u_i [E_{q_i} x - x_{i y_i}], \\quad f'' = \\sum_i u_i \\operatorname{Var}_{q_i} x,

    ``u`` the weights divided by their sum. ``work`` and ``work2`` are (n, K) buffers, overwritten."""
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


def _newton_scalar(theta, X, y, w, gtol, max_iter):
    """Newton's method on the one factor ``beta`` (temperature scaling: the NLL is convex in ``beta``), each
    step from :func:`_scalar_terms` (one pass over the rows for the objective, its slope and its curvature),
    clipped to :data:`SCALE_BOUNDS` and halved until the objective falls (Armijo, as :func:`_newton`).
    Stops on the same rule as :func:`_newton`: ``|f'| <= gtol`` (or ``beta`` at a bound with the slope
    pushing outwards), no halving lowering the objective, or ``max_iter`` steps. Returns
    ``(theta, n_steps)``."""
    lo, hi = SCALE_BOUNDS
    u = np.full(y.size, 1.0 / y.size) if w is None else w / w.sum()
    work, work2 = np.empty(X.shape), np.empty(X.shape)
    beta = float(theta[0])
    f, g, h = _scalar_terms(beta, X, y, u, work, work2)
    it = 0
    for it in range(1, max_iter + 1):
        if _free_gradient(np.array([beta]), np.array([g]), LinearForm("scalar", False)) <= gtol:
            return np.array([beta]), it - 1
        d = -g / h if h > 0 else -np.sign(g) * beta
        step = 1.0
        while step > 2.0 ** -40:
            cand = min(max(beta + step * d, lo), hi)
            f_new, g_new, h_new = _scalar_terms(cand, X, y, u, work, work2)
            if f_new <= f + 1e-4 * g * (cand - beta):
                break
            step /= 2
        else:
            return np.array([beta]), it
        beta, f, g, h = cand, f_new, g_new, h_new
    return np.array([beta]), it


def _free_gradient(theta, g, form) -> float:
    """The largest gradient entry that could still move (a scalar factor at a bound pushed outwards is not)."""
    g = np.asarray(g)
    if form.matrix == "scalar":
        lo, hi = SCALE_BOUNDS
        if (theta[0] <= lo and g[0] > 0) or (theta[0] >= hi and g[0] < 0):
            g = g.copy()
            g[0] = 0.0
    return float(np.max(np.abs(g)))


# -- large full maps: Newton's method with conjugate-gradient steps ----------------------------------------
def _hessian_product(v: np.ndarray, X: np.ndarray, Q: np.ndarray, u: np.ndarray, form: LinearForm,
                     curvature: np.ndarray) -> np.ndarray:
    """The objective's Hessian at the map whose probabilities are ``Q`` times the direction ``v``, without
    forming the Hessian: along ``v`` the scores move by ``D = X V_W^T + v_b`` (:func:`linear_scores` is
    linear in its parameters), the residuals by ``S_i d_i = q_i * d_i - q_i (q_i . d_i)`` (``S_i`` the
    softmax's Jacobian), and :func:`_project` turns the weighted change into the product, the penalty
    adding ``curvature * v`` (its constant diagonal). Two n x K x K products for the full form, as a
    gradient, and no exponential. ``u``: the weights divided by their sum."""
    T = linear_scores(X, v.astype(X.dtype), form)
    T *= Q
    T -= Q * T.sum(axis=1, keepdims=True)
    T *= u[:, None]
    return _project(T, X, form).astype(float) + curvature * v


#: The block preconditioner (:func:`_block_preconditioner`) leaves out, for each class, the rows that carry
#: together at most this share of its block's trace (the rows the class is certain to be absent from).
BLOCK_DROP = 0.05


def _block_preconditioner(X: np.ndarray, Q: np.ndarray, u: np.ndarray, form: LinearForm,
                          curvature: np.ndarray):
    """An approximate inverse of the full form's Hessian (for the conjugate gradients of :func:`_newton_cg`),
    as a function of a gradient-shaped vector.

    The parameters acting on class ``c`` (row ``c`` of ``[W | b]``) form a block of the Hessian,
    ``A_c = sum_i u_i q_ic (1 - q_ic) x~_i x~_i^T`` plus the penalty's diagonal (``x~_i = (x_i, 1)``):
    those blocks, inverted once (K inverses of (K + 1) x (K + 1)), are a block-Jacobi preconditioner.
    They leave out the coupling between classes, ``-u_i q_ic q_id x~_i x~_i^T``, and the worst of what
    they miss is exact and known: adding one vector to every row of ``[W | b]`` (the softmax's invariance)
    does not change the data's part of the objective, so along those K + 1 "common" directions ``C`` the
    Hessian is the penalty's alone (``H C = diag(curvature) C``), while each block sees large curvature.
    The preconditioner solves that coarse space exactly and the blocks on the rest (the two-level
    "balancing" form, ``P + (I - P H) B^-1 (I - H P)`` with ``P = C (C^T H C)^-1 C^T``; Mandel 1993), every
    product with ``H C`` being analytic. To make the blocks cheaper, each class's block leaves out the rows
    that carry together at most :data:`BLOCK_DROP` of its trace (six rows in seven for a
    confident 100-class network): this changes the preconditioner, never the Hessian, the gradient or
    the optimum. Measured on a CIFAR-100 fold (8,000 rows, Dirichlet calibration at lambda = 1, warm-started
    from lambda = 10): the blocks alone, built once at the temperature map, needed 630 conjugate-gradient
    steps; with the coarse space, 280; with both built at each fit's start (as here), 80 to 90."""
    n, k = X.shape
    width = k + 1 if form.bias else k
    Xt = np.hstack([X, np.ones((n, 1))]) if form.bias else X
    V = (Q * (1.0 - Q)).T                           # (K, n)
    V *= u
    mass = V * np.einsum("ij,ij->i", Xt, Xt)        # each row's share of each block's trace
    ranked = np.sort(mass, axis=1)
    cum = np.cumsum(ranked, axis=1)
    cut = (cum <= BLOCK_DROP * cum[:, -1:]).sum(axis=1)      # the rows carrying the smallest share
    keep = mass >= ranked[np.arange(k), np.minimum(cut, n - 1)][:, None]
    pen = _by_class(curvature, k, form.bias)
    B = np.empty((k, width, width))
    for c in range(k):
        rows = np.flatnonzero(keep[c])
        Xs = Xt[rows]
        B[c] = (Xs * V[c, rows][:, None]).T @ Xs
        B[c].flat[::width + 1] += pen[c]
    top = float(np.max(np.diagonal(B, axis1=1, axis2=2)))
    B[:, np.arange(width), np.arange(width)] += 1e-12 * top if top > 0 else 1.0   # a block without rows or penalty
    inv = np.linalg.inv(B)
    inv = 0.5 * (inv + np.transpose(inv, (0, 2, 1)))
    common = pen.sum(axis=0)                        # C^T H C: the penalty on each common direction
    coarse = np.divide(1.0, common, out=np.zeros_like(common), where=common > 0)

    def apply(r: np.ndarray) -> np.ndarray:
        R = _by_class(r, k, form.bias)
        y = coarse * R.sum(axis=0)                  # P r
        S = np.matmul(inv, (R - pen * y)[:, :, None])[:, :, 0]         # B^-1 (I - H P) r
        S -= coarse * (pen * S).sum(axis=0)                            # (I - P H) ...
        S += y
        return _from_class(S, form.bias)

    return apply


def _by_class(theta: np.ndarray, k: int, bias: bool) -> np.ndarray:
    """The full form's parameters as a K x (K + 1) array: row ``c`` holds ``W[c, :]`` then ``b[c]``."""
    W = theta[:k * k].reshape(k, k)
    return np.hstack([W, theta[k * k:, None]]) if bias else W.copy()


def _from_class(M: np.ndarray, bias: bool) -> np.ndarray:
    """The inverse of :func:`_by_class`."""
    k = M.shape[0]
    return np.concatenate([M[:, :k].ravel(), M[:, k]]) if bias else M.ravel().copy()


def _newton_cg(theta, X, y, w, form, lam, mu, gtol, ftol, max_iter):
    """Newton's method for the full form when its Hessian is too large to form (100 classes: 10,100
    parameters), each step solved by preconditioned conjugate gradients on Hessian-vector products
    (:func:`_hessian_product`: as costly as a gradient without its exponential) with
    :func:`_block_preconditioner`, built once at the start of the fit; the step halved until the objective
    falls by at least 1e-4 of its predicted decrease (Armijo).

    The conjugate gradients stop when the preconditioned residual ``sqrt(r^T M^-1 r)`` is at most
    ``eta = min(0.5, sqrt(delta))`` times its start ``delta = sqrt(g^T M^-1 g)`` (the inexact Newton
    "forcing" of Eisenstat & Walker: loose far from the optimum, tighter near it, so the steps converge
    superlinearly; ``delta^2 / 2`` estimates the distance to the optimum in objective), or after 500 steps.

    The Hessian-vector products run in float32 (the rows, the probabilities and the direction rounded to
    float32; the result returned in float64): they only choose the direction of each step, and their
    rounding (about 1e-6 of the products' size, far below the forcing ``eta``, at least 1e-3 in practice)
    changes the path, never where it stops: the objective and the gradient that the line search and the
    stopping rule use are float64. Single precision halves the cost of the n x K x K products (2 ms each
    instead of 4.5 at 8,000 x 100), which are most of the solver's work.

    Stopping rule (the same as L-BFGS-B's, :func:`fit_linear`): the largest entry of the gradient in the
    variables scaled by the inverse square root of the Hessian diagonal at the start at most ``gtol``, or a
    step lowering the objective by at most ``ftol`` of itself (``(f_k - f_{k+1}) / max(|f_k|, |f_{k+1}|, 1)
    <= ftol``), or ``max_iter`` steps, or no halving (down to 2^-40) lowering the objective (the
    floating-point limit). A Newton step near the optimum removes nearly all of the remaining gap, so the
    second rule leaves a gap far below ``ftol`` relative, where L-BFGS-B's small step says less. Returns
    ``(theta, n_steps, why)``, ``why`` one of ``"gtol"``, ``"ftol"``, ``"max_iter"``, ``"line search"``.

    Measured (CIFAR-100, Dirichlet calibration's 8,000-row folds, lambda from 1e4 down to 1, warm starts):
    4 to 10 Newton steps and 10 to 90 conjugate-gradient steps per fit, where L-BFGS-B took 70 to 2,000
    iterations; the objective values agree with L-BFGS-B's to 1e-7 (L-BFGS-B's ftol = 1e-10 stopped it
    a little higher)."""
    u = np.full(y.size, 1.0 / y.size) if w is None else w / w.sum()
    curvature = _penalty_curvature(theta.size, form, X.shape[1], lam, mu)
    work, Q = np.empty(X.shape), np.empty(X.shape)
    X32, u32 = X.astype(np.float32), u.astype(np.float32)
    f, _, g = objective(theta, X, y, w, form, lam, mu, work, Q)
    precondition = _block_preconditioner(X, Q, u, form, curvature)
    scale = 1.0 / np.sqrt(_hessian_diagonal(theta, X, w, form, lam, mu, Q))
    it = 0
    for it in range(1, max_iter + 1):
        if float(np.max(np.abs(g * scale))) <= gtol:
            return theta, it - 1, "gtol"
        Q32 = Q.astype(np.float32)
        d = np.zeros_like(theta)
        r = -g
        z = descent = precondition(r)
        rz = float(r @ z)
        target = min(0.5, rz ** 0.25) * np.sqrt(rz)
        p = z
        for _ in range(500):
            Hp = _hessian_product(p, X32, Q32, u32, form, curvature)
            pHp = float(p @ Hp)
            if pHp <= 0:                            # no curvature left to use (rounding): take what we have
                if not d.any():
                    d = p
                break
            a = rz / pHp
            d += a * p
            r = r - a * Hp
            z = precondition(r)
            rz_new = float(r @ z)
            if np.sqrt(max(rz_new, 0.0)) <= target:
                break
            p = z + (rz_new / rz) * p
            rz = rz_new
        slope = float(g @ d)
        if not slope < 0:                   # rounding spoilt the step: the preconditioned gradient always
            d, slope = descent, float(g @ descent)                          # descends (-g^T M^-1 g < 0)
        step = 1.0
        while step > 2.0 ** -40:
            f_new, _, g_new = objective(theta + step * d, X, y, w, form, lam, mu, work, Q)
            if f_new <= f + 1e-4 * step * slope:
                break
            step /= 2
        else:
            return theta, it, "line search"
        theta, f_old, f, g = theta + step * d, f, f_new, g_new
        if (f_old - f) / max(abs(f_old), abs(f), 1.0) <= ftol:
            return theta, it, "ftol"
    return theta, it, "max_iter"


def fit_linear(X: np.ndarray, y: np.ndarray, w: np.ndarray | None, form: LinearForm, lam: float = 0.0,
               mu: float = 0.0, start: np.ndarray | None = None, gtol: float = 1e-9, ftol: float = 1e-13,
               max_iter: int = 5000, what: str = "the linear calibration map") -> LinearFit:
    """Minimise :func:`objective` from ``start`` (default the fitted temperature's map) by damped Newton,
    Newton-CG or L-BFGS-B, whichever the problem's size and form call for (module docstring).

    Parameters
    ----------
    X : ndarray (n, K)
        Log-scores, finite.
    y : ndarray (n,)
        Class indices.
    w : ndarray (n,) or None
        Row weights (None: 1 each).
    form : LinearForm
    lam, mu : float
        Penalty strengths (module docstring); ``mu`` is used by ODIR only.
    start : ndarray, optional
        Warm start (for example the fit at the neighbouring penalty of a grid).
    gtol, ftol, max_iter
        The stopping rule (module docstring).
    what : str
        Names the fit in the warning when it does not converge.

    Returns
    -------
    LinearFit
    """
    # one BLAS thread for everything the fit does (the last objective and the start's temperature too): the
    # n x K x K products of K <= a few hundred run at full speed on one, and after a call on two, the second
    # thread's spin-waits on a busy machine cost up to 10x the CPU
    with threadpool_limits(1):
        return _fit_linear(X, y, w, form, lam, mu, start, gtol, ftol, max_iter, what)


def _fit_linear(X, y, w, form, lam, mu, start, gtol, ftol, max_iter, what) -> LinearFit:
    """:func:`fit_linear`'s work, on the threads it allows."""
    k = X.shape[1]
    if start is not None:
        theta0 = np.array(start, dtype=float)
    else:
        theta0 = identity_start(form, k)
        if form.matrix != "scalar":
            # from the fitted temperature's map (W = I / T, b = 0), not the identity: the objective is convex,
            # so the optimum is the same, but on saturated scores (log-scores of probabilities 0 and 1) the
            # identity sits where the softmax is flat to e^-690 and Newton's steps have no curvature to use
            beta = fit_linear(X, y, w, LinearForm("scalar", False), gtol=gtol, ftol=ftol, what=what).theta[0]
            m = n_parameters(LinearForm(form.matrix, False), k)
            theta0[:m] *= beta
    if X.shape[0] * theta0.size ** 2 <= NEWTON_WORK and (form.matrix != "scalar" or not form.bias):
        if form.matrix == "scalar":
            theta, n_iter = _newton_scalar(theta0, X, y, w, gtol, max_iter)
        else:
            theta, n_iter = _newton(theta0, X, y, w, form, lam, mu, gtol, max_iter)
        message = "Newton"
        loss, nll, grad = objective(theta, X, y, w, form, lam, mu)
        gmax = _free_gradient(theta, grad, form)
        # the floating-point limit: the rounding of the gradient's sums, about eps times the sum of |R X|
        converged = gmax <= max(gtol, 1e-12 * (1.0 + float(np.max(np.abs(X)))))
    elif form.matrix == "full":
        theta, n_iter, message = _newton_cg(theta0, X, y, w, form, lam, mu, gtol, ftol, max_iter)
        loss, nll, grad = objective(theta, X, y, w, form, lam, mu)
        gmax = _free_gradient(theta, grad, form)
        converged = message in ("gtol", "ftol") or (message == "line search" and gmax <= 100 * gtol)
        message = f"Newton-CG, stopped by {message}"
    else:
        scale = 1.0 / np.sqrt(_hessian_diagonal(theta0, X, w, form, lam, mu))
        bounds = None
        if form.matrix == "scalar":
            lo, hi = SCALE_BOUNDS
            bounds = [(lo / scale[0], hi / scale[0])] + [(None, None)] * (theta0.size - 1)
        work = np.empty(X.shape)

        def fun(phi):
            loss, _, grad = objective(phi * scale, X, y, w, form, lam, mu, work)
            return loss, grad * scale

        res = minimize(fun, theta0 / scale, jac=True, method="L-BFGS-B", bounds=bounds,
                       options={"maxiter": int(max_iter), "gtol": gtol, "ftol": ftol, "maxcor": 20})
        theta, n_iter, message = res.x * scale, int(res.nit), str(res.message)
        loss, nll, grad = objective(theta, X, y, w, form, lam, mu, work)
        gmax = _free_gradient(theta, grad, form)
        converged = bool(res.success) or ("ABNORMAL" in message and gmax <= 100 * gtol)
    if not np.all(np.isfinite(theta)) or not np.isfinite(loss):
        raise DataError(f"{what} could not be fitted: the solver reached non-finite values ({message}).")
    if not converged:
        warnings.warn(f"{what} did not converge: the solver ({message}) stopped after {n_iter} iterations "
                      f"with a gradient entry of {gmax:.2g}; the map may be off its optimum.",
                      ConvergenceWarning, stacklevel=3)
    return LinearFit(theta, float(loss), float(nll), int(n_iter), gmax, converged)


# -- the choice of lambda and mu ---------------------------------------------------------------------------
def _row_hashes(X: np.ndarray, y: np.ndarray, seed: int) -> np.ndarray:
    """A 64-bit hash of each row's values and label, the same wherever the row sits (a keyed multiply-xorshift
    mix of the bit patterns; the key comes from ``seed``). The values are rounded to float32 first (about 7
    significant digits), so that the same rows given as probabilities or as their logarithms (logits), whose
    log-probabilities differ in the last float64 bits after the softmax, are dealt to the same folds."""
    key = np.random.SeedSequence(seed).generate_state(X.shape[1] + 1, dtype=np.uint64) | np.uint64(1)
    rounded = np.asarray(X, dtype=np.float32) + np.float32(0.0)                  # + 0.0: -0.0 as 0.0
    bits = np.ascontiguousarray(rounded, dtype=np.float64).view(np.uint64)
    with np.errstate(over="ignore"):
        h = (bits * key[None, :-1]).sum(axis=1, dtype=np.uint64)
        h = h + y.astype(np.uint64) * key[-1]
        for shift, mult in ((33, 0xFF51AFD7ED558CCD), (29, 0xC4CEB9FE1A85EC53)):
            h ^= h >> np.uint64(shift)
            h *= np.uint64(mult)
        h ^= h >> np.uint64(32)
    return h


def fold_ids(X: np.ndarray, y: np.ndarray, n_folds: int, seed: int = 0, w: np.ndarray | None = None) -> np.ndarray:
    """Each row's fold, 0..n_folds-1, from its values only: stratified by class, never by position.

    Within each class the distinct rows (by a keyed hash of their values and label: :func:`_row_hashes`)
    are sorted by hash and dealt to the folds in turn, the deal continuing from one class to the next, so
    every fold gets its share of every class (to one row). Identical rows share a hash and so a fold: a
    row of weight 3 and three copies of it fall in the same fold, and the folds do not change when the
    rows are reordered. Rows of weight 0 (``w``) are left out of the deal (so that they change no other
    row's fold, as if absent) and go to the fold their hash names.
    """
    h = _row_hashes(X, y, seed)
    out = (h % np.uint64(n_folds)).astype(np.int64)
    live = np.ones(y.size, dtype=bool) if w is None else w > 0
    dealt = 0
    for c in np.unique(y[live]):
        rows = np.flatnonzero(live & (y == c))
        distinct, group = np.unique(h[rows], return_inverse=True)
        out[rows] = (dealt + group) % n_folds
        dealt += distinct.size
    return out


#: The penalty search (:func:`select_penalty`) runs on at most this many distinct rows (:func:`search_rows`).
SEARCH_ROWS = 20_000


def search_rows(X: np.ndarray, y: np.ndarray, w: np.ndarray | None, max_rows: int, seed: int = 0) -> np.ndarray:
    """Which rows the penalty search uses (a boolean mask): all when there are at most ``max_rows`` distinct
    rows of positive weight; else, within each class, the distinct rows whose keyed hash
    (:func:`_row_hashes`, the one that deals the folds) is among the smallest, each class getting its share
    of ``max_rows`` by Hamilton's largest-remainder rule on the classes' numbers of distinct rows (ties to the
    lower class index), every copy of a row taken with it.

    The rows are counted and chosen by value, never by position: another row order gives the same rows,
    and a row of weight ``w`` is taken exactly when its ``w`` copies would be (it counts as one distinct
    row either way), so the search stays row-order invariant and weights still equal repeated rows.
    Rows of weight 0 are never taken (they change no fit)."""
    live = np.ones(y.size, dtype=bool) if w is None else w > 0
    h = _row_hashes(X, y, seed)
    classes = np.unique(y[live])
    groups = [np.unique(h[live & (y == c)]) for c in classes]
    counts = np.array([g.size for g in groups])
    total = int(counts.sum())
    if total <= max_rows:
        return live
    share = max_rows * counts / total
    quota = np.floor(share).astype(np.int64)
    quota[np.lexsort((np.arange(counts.size), -(share - quota)))[:max_rows - int(quota.sum())]] += 1
    keep = np.zeros(y.size, dtype=bool)
    for c, g, q in zip(classes, groups, quota):
        rows = live & (y == c)
        keep[rows] = np.isin(h[rows], g[:q])
    return keep


def cv_log_loss(X, y, w, form: LinearForm, grid: Sequence[tuple[float, float]], folds: np.ndarray,
                gtol: float = 1e-6, ftol: float = 1e-10, patience: int | None = 2) -> np.ndarray:
    """Held-out weighted mean log-loss of each ``(lam, mu)`` of ``grid``, pooled over the folds.

    The grid is walked in the order given (strongest penalty first). At each point the map is fitted on
    all folds but one, for each fold, warm-started from that fold's fit at the previous point (at the first
    point, from the previous fold's fit there: the folds share most of their rows), and scored on the fold
    left out; the losses of all held-out rows are pooled (the weighted mean over every row,
    each scored by the fit that did not see it). With ``patience``, the walk stops once the pooled loss
    has risen at ``patience`` consecutive points (the points not reached get ``inf``): the held-out loss
    of a penalty path is in practice unimodal, and the weak end of the grid is where fits are slowest.
    The fits stop at the looser ``gtol``/``ftol`` given here: the held-out loss is compared, not the
    parameters, and it changes by about the square of the parameter error.
    """
    n_folds = int(folds.max()) + 1
    parts = []
    for f in range(n_folds):
        test = folds == f
        wv = np.ones(int(test.sum())) if w is None else w[test]
        parts.append((X[~test], y[~test], None if w is None else w[~test], X[test], y[test], wv))
    total = sum(float(p[5].sum()) for p in parts)
    loss = np.full(len(grid), np.inf)
    starts: list = [None] * n_folds
    rises = 0
    with threadpool_limits(1):          # as fit_linear: the held-out products too, on one BLAS thread
        for j, (lam, mu) in enumerate(grid):
            here = 0.0
            for f, (Xt, yt, wt, Xv, yv, wv) in enumerate(parts):
                start = starts[f] if j or not f else starts[f - 1]      # the first point: the previous fold's
                fit = fit_linear(Xt, yt, wt, form, lam, mu, start=start, gtol=gtol, ftol=ftol,
                                 what=f"the fit at lambda={lam:g}, mu={mu:g} on cross-validation fold {f + 1}")
                starts[f] = fit.theta
                logq = log_softmax(linear_scores(Xv, fit.theta, form), axis=1)[np.arange(yv.size), yv]
                here -= float(wv @ logq)
            loss[j] = here / total
            rises = rises + 1 if j and loss[j] > loss[j - 1] else 0
            if patience is not None and rises >= patience:
                break
    return loss


def select_penalty(X, y, w, form: LinearForm, grid: Sequence[tuple[float, float]], n_folds: int = 5,
                   seed: int = 0, max_rows: int | None = SEARCH_ROWS) -> tuple[float, float, np.ndarray]:
    """``(lam, mu, losses)``: the grid point with the lowest held-out log-loss (:func:`cv_log_loss`) over
    ``n_folds`` folds of :func:`fold_ids` (seeded by ``seed``), and the loss of every grid point.

    With more than ``max_rows`` distinct rows (default :data:`SEARCH_ROWS`, 20,000), the search runs on
    ``max_rows`` of them, chosen by value and stratified by class (:func:`search_rows`); the caller fits the
    chosen map on every row. A search on 20,000 rows has at least 180 rows per parameter for K <= 10 and
    about 2 for K = 100 (as many as the 10,000-row CIFAR-100 calibration set it is measured on,
    where the cap does not act): enough to rank penalties a decade apart, and the held-out loss of each
    point is a mean over 20,000 rows. ``None``: every row.

    This is Kull et al.'s procedure (their experiments' code, dirichletcal/experiments_dnn
    ``tune_cal_odir.py``: 5-fold cross-validation on the calibration set over a grid of lambda and mu,
    the pair with the lowest mean held-out log-loss chosen; selection in their notebook
    ``get_best_validation``), with these stated differences: the folds are dealt from the rows' values
    (not by scikit-learn's ``KFold(shuffle=True, random_state=15)`` on row positions); the held-out losses
    are pooled over the rows rather than averaged over the folds (the same when the folds are of equal
    weight); the grid is smaller (each method's documented default) and its walk stops early when the
    held-out loss keeps rising (``patience`` of :func:`cv_log_loss`); the penalty is Kull et al.'s
    normalised one (module docstring), while their Keras code adds ``lambda * sum`` unnormalised (so
    their grid values are ours divided by ``K (K - 1)`` for lambda, by ``K`` for mu); and the chosen
    map is refitted on the whole calibration set, where they averaged the scores of the five fold models.
    Ties go to the grid point listed first (the strongest penalty, by the order of the grid). A fold
    needs rows to fit on: with fewer than ``n_folds`` distinct rows the procedure is refused.

    Raises
    ------
    DataError
        Fewer distinct rows than folds.
    """
    if max_rows is not None:
        keep = search_rows(X, y, w, int(max_rows), seed)
        if not keep.all():
            X, y, w = X[keep], y[keep], None if w is None else w[keep]
    folds = fold_ids(X, y, n_folds, seed, w)
    if np.unique(folds if w is None else folds[w > 0]).size < n_folds:
        raise DataError(f"choosing the regularisation by {n_folds}-fold cross-validation needs at least "
                        f"{n_folds} distinct rows; fix lambda and mu instead (select=False).")
    losses = cv_log_loss(X, y, w, form, grid, folds)
    best = int(np.argmin(losses))
    lam, mu = grid[best]
    return float(lam), float(mu), losses


def penalty_grid(penalty: str | None, lambdas: Sequence[float], mus: Sequence[float] | None) -> list:
    """The ``(lam, mu)`` pairs a search tries, strongest penalty first (the order of the warm starts):
    every lambda with every mu for ODIR (``mus=None``: mu = lambda, the authors' ``--no_mus`` setting),
    every lambda with mu = 0 for L2 (which has no mu).

    Raises
    ------
    SettingsError
        An empty grid, or a negative or non-finite value in it.
    """
    lams = [float(v) for v in lambdas]
    mus_ = None if mus is None or penalty != "odir" else [float(v) for v in mus]
    values = lams + (mus_ or [])
    if not lams or (mus_ is not None and not mus_):
        raise SettingsError("the regularisation grid is empty; give at least one lambda (and one mu).")
    if not all(np.isfinite(v) and v >= 0 for v in values):
        raise SettingsError(f"the regularisation grid must hold finite values >= 0, got {values}.")
    if penalty == "odir":
        pairs = [(lam, lam) for lam in lams] if mus_ is None else [(lam, m) for lam in lams for m in mus_]
    else:
        pairs = [(lam, 0.0) for lam in lams]
    return sorted(set(pairs), key=lambda p: (-p[0], -p[1]))


class ScalingCalibrator(MulticlassCalibrator):
    """What the scaling family shares: fit :func:`fit_linear` on the log-scores (or the log-probabilities),
    predict ``softmax(W x + b)``, export ``W`` and ``b``.

    A subclass declares ``matrix`` (one of :data:`FORMS`), ``bias``, ``on_log_probabilities`` (Dirichlet:
    the log of the probabilities; the others: the log-scores as given, logits or log-probabilities) and
    ``default_penalty``; its constructor may take ``reg`` (the penalty), ``lam`` and ``mu`` (fixed
    strengths), ``select`` (choose them by :func:`select_penalty` instead), ``lambdas``/``mus`` (the
    grid), ``n_folds`` and ``seed``.

    Attributes (fitted)
    -------------------
    theta_ : ndarray
        W's free entries (1, K or K*K, row-major) then b (if any).
    lambda_, mu_ : float
        The penalty strengths used (chosen or fixed; 0 without a penalty).
    cv_grid_, cv_losses_ : list of (lambda, mu), ndarray, or None
        The grid searched and each point's held-out log-loss (None when nothing was searched).
    nll_ : float
        The weighted mean negative log-likelihood of the fitted map on the training rows.
    n_iter_ : int
        Solver iterations of the final fit (Newton steps, or L-BFGS-B iterations).
    converged_ : bool
        Whether the final fit met the stopping rule (:func:`fit_linear`; a warning says when not).
    """

    matrix: ClassVar[str] = "full"
    bias: ClassVar[bool] = True
    parametric: ClassVar[bool] = True
    on_log_probabilities: ClassVar[bool] = False
    default_penalty: ClassVar[str | None] = None

    def _form(self) -> LinearForm:
        return LinearForm(self.matrix, self.bias, getattr(self, "reg", self.default_penalty))

    def _inputs(self, x: Scores) -> np.ndarray:
        return x.log_probabilities if self.on_log_probabilities else x.log_scores

    def _fit(self, x: Scores, y: np.ndarray, w: np.ndarray | None) -> None:
        form = self._form()
        X = self._inputs(x)
        lam, mu = float(getattr(self, "lam", 0.0) or 0.0), float(getattr(self, "mu", 0.0) or 0.0)
        self.cv_grid_, self.cv_losses_ = None, None
        if form.penalty is not None and getattr(self, "select", False):
            grid = penalty_grid(form.penalty, self.lambdas, self.mus)
            lam, mu, losses = select_penalty(X, y, w, form, grid, int(self.n_folds), int(self.seed))
            self.cv_grid_, self.cv_losses_ = grid, losses
        elif form.penalty is not None and not (np.isfinite(lam) and np.isfinite(mu) and lam >= 0 and mu >= 0):
            raise SettingsError(f"lambda and mu must be finite and >= 0, got {lam} and {mu}.")
        if form.penalty is None:
            lam = mu = 0.0
        fit = fit_linear(X, y, w, form, lam, mu, what=f"{self.label}'s map")
        self.theta_ = fit.theta
        self.lambda_, self.mu_ = lam, mu
        self.nll_ = fit.nll
        self.n_iter_ = fit.n_iter
        self.converged_ = fit.converged

    def _predict(self, x: Scores) -> np.ndarray:
        return predict_linear(self._inputs(x), self.theta_, self._form())

    def _export_state(self) -> dict:
        """What ``predict_proba`` needs (for the JSON file) besides the number of classes, which
        :mod:`calibdash.multiclass.export` writes for every method: W's free entries (``weights``: 1, K or
        K*K numbers, row-major) and the intercepts (``bias``, when there are any)."""
        k = int(self.n_classes_)
        m = n_parameters(LinearForm(self.matrix, False), k)
        state = {"weights": [float(v) for v in self.theta_[:m]]}
        if self.bias:
            state["bias"] = [float(v) for v in self.theta_[m:]]
        return state

    def _import_state(self, state) -> None:
        """Restore :meth:`_export_state` (``state``: a :class:`calibdash.export.State`; the file's
        ``n_classes`` is already in ``n_classes_``, :func:`calibdash.multiclass.export.read_model`)."""
        k = int(self.n_classes_)
        m = n_parameters(LinearForm(self.matrix, False), k)
        parts = [state.array("weights", size=m)]
        if self.bias:
            parts.append(state.array("bias", size=k))
        self.theta_ = np.concatenate(parts)
