"""The map every scaling method fits, ``softmax(W x + b)``, and its objective (:mod:`.linear`'s docstring): the forms
of ``W``, the parameters' layout, the penalised negative log-likelihood with its analytic gradient and the Hessian's
diagonal. Classes left out of the softmax (``absent``) get score minus infinity: probability 0, residual 0.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from scipy.special import softmax

from ...core.errors import SettingsError

__all__ = []

#: The forms of W: a scalar times the identity, a diagonal, a full matrix.
FORMS = ("scalar", "diagonal", "full")
#: The penalties: none, L2 on every parameter, Kull et al.'s ODIR.
PENALTIES = (None, "l2", "odir")
#: Bounds on the scalar form's factor (the inverse temperature), as scikit-learn's ``exp(+-10)``.
SCALE_BOUNDS = (float(np.exp(-10.0)), float(np.exp(10.0)))

#: The objective's rounding (:func:`rounding`), in units of ``eps (1 + |L| + a bound on max |W x + b|)``.
ROUNDING = 4.0


@dataclass(frozen=True)
class LinearForm:
    """What is fitted: the form of ``W`` (:data:`FORMS`), whether there is an intercept ``b``, the penalty
    (:data:`PENALTIES`)."""

    matrix: str
    bias: bool
    penalty: str | None = None

    def __post_init__(self):
        if self.matrix not in FORMS:
            raise SettingsError(f"the linear map's form must be one of {FORMS}, got {self.matrix!r}.")
        if self.penalty not in PENALTIES:
            raise SettingsError(f"the penalty must be one of {PENALTIES}, got {self.penalty!r}.")
        if self.matrix == "scalar" and self.bias:
            raise SettingsError("the scalar form (temperature scaling) takes no intercept.")


class LinearFit(NamedTuple):
    """What :func:`~calibdash.calibrators.multiclass.linear.fit_linear` returns."""

    theta: np.ndarray        # the parameters: W's free entries (1, K or K*K, row-major), then b (if any)
    loss: float              # the objective at theta (weighted mean NLL + penalty), every class in the softmax
    nll: float               # the weighted mean negative log-likelihood at theta (every class in the softmax)
    n_iter: int              # solver iterations (Newton steps)
    converged: bool          # by the stopping rule of fit_linear
    stop: str = ""           # what ended the solver: "gtol", "ftol", "floating-point limit", "max_iter", "time"
    absent: tuple = ()       # the classes no row of positive weight names (left out of the fit's softmax)


def n_parameters(form: LinearForm, k: int) -> int:
    """How many parameters ``form`` has for ``k`` classes."""
    m = {"scalar": 1, "diagonal": k, "full": k * k}[form.matrix]
    return m + (k if form.bias else 0)


def identity_start(form: LinearForm, k: int) -> np.ndarray:
    """The parameters of the identity map (``W = I``, ``b = 0``)."""
    m = {"scalar": np.ones(1), "diagonal": np.ones(k), "full": np.eye(k).ravel()}[form.matrix]
    return np.concatenate([m, np.zeros(k)]) if form.bias else m.copy()


def free_mask(form: LinearForm, k: int, absent: np.ndarray) -> np.ndarray:
    """Which parameters a fit may move: all but those acting on an ``absent`` class's score (its row of ``W`` or
    diagonal entry, and its intercept)."""
    free = np.ones(n_parameters(form, k), dtype=bool)
    if form.matrix == "scalar" or not np.any(absent):
        return free
    m = n_parameters(LinearForm(form.matrix, False), k)
    rows = np.flatnonzero(absent)
    if form.matrix == "full":
        free[:m].reshape(k, k)[rows] = False
    else:
        free[rows] = False
    if form.bias:
        free[m + rows] = False
    return free


def unpack(theta: np.ndarray, form: LinearForm, k: int) -> tuple[np.ndarray, np.ndarray]:
    """``(W_part, b)``: W's entries in their shape (1-vector, K-vector, K x K) and the intercepts (zeros if none)."""
    theta = np.asarray(theta)
    if theta.dtype not in (np.float64, np.float32):     # float32 for the Hessian's products (Newton-CG)
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


def predict_linear(X: np.ndarray, theta: np.ndarray, form: LinearForm, absent=None) -> np.ndarray:
    """``softmax(W x + b)`` of each row of ``X`` (``absent``: classes given probability 0, as in the objective)."""
    Z = linear_scores(X, theta, form)
    if absent is not None and np.any(absent):
        Z[:, absent] = -np.inf
    return softmax(Z, axis=1)


def score_bound(theta: np.ndarray, form: LinearForm, xmax: np.ndarray) -> float:
    """A bound on the largest score ``|W x + b|`` from ``xmax``, the largest ``|x_l|`` of each column (no pass
    over the rows)."""
    w, b = unpack(theta, form, xmax.size)
    w = np.abs(w)
    s = w @ xmax if form.matrix == "full" else w * (xmax.max() if form.matrix == "scalar" else xmax)
    return float(np.max(s + np.abs(b)))


def rounding(theta: np.ndarray, f: float, form: LinearForm, xmax: np.ndarray) -> float:
    """How far the objective ``f`` at ``theta`` may be off by rounding: :data:`ROUNDING` times ``eps (1 + |f| + s)``,
    ``s`` the :func:`score_bound` (each row's NLL subtracts scores of that size, so carries their rounding)."""
    return ROUNDING * float(np.finfo(float).eps) * (1.0 + abs(f) + score_bound(theta, form, xmax))


def penalty_and_gradient(theta: np.ndarray, form: LinearForm, k: int, lam: float, mu: float):
    """The penalty and its gradient (see :mod:`.linear`'s docstring)."""
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


def penalty_curvature(size, form, k, lam, mu) -> np.ndarray:
    """The penalty's Hessian diagonal (it is diagonal: ``2 c`` for a term ``c theta_p^2``)."""
    probe = np.ones(size)
    return penalty_and_gradient(probe, form, k, lam, mu)[1] - penalty_and_gradient(0 * probe, form, k, lam, mu)[1]


def project_on_form(R: np.ndarray, X: np.ndarray, form: LinearForm) -> np.ndarray:
    """``sum_i R_i x_i^T`` projected on W's form, then ``sum_i R_i`` for the intercepts: the derivative of
    ``sum_i R_i . (W x_i + b)``. With ``R`` the weighted residuals, the gradient; with their change along a
    direction, the Hessian's product with it."""
    if form.matrix == "full":
        gw = (R.T @ X).ravel()
    elif form.matrix == "diagonal":
        gw = np.einsum("ij,ij->j", R, X)
    else:
        gw = np.array([np.einsum("ij,ij->", R, X)])
    return np.concatenate([gw, R.sum(axis=0)]) if form.bias else gw


def objective(theta: np.ndarray, X: np.ndarray, y: np.ndarray, sample_weight: np.ndarray | None, form: LinearForm,
              lam: float = 0.0, mu: float = 0.0, work: np.ndarray | None = None,
              probabilities: np.ndarray | None = None, absent=None) -> tuple[float, float, np.ndarray]:
    """``(L, NLL, gradient of L)`` at ``theta``: the weighted mean NLL of ``y`` under ``softmax(W x + b)`` plus the
    penalty, and its gradient ``dL/dW = R^T X`` (projected on W's form), ``dL/db = sum_i R_i``, with ``R_i = w_i (q_i -
    e_{y_i}) / sum(w)``. ``work``: an (n, K) buffer to compute in (overwritten; spares allocating one at each of
    hundreds of calls). ``probabilities``: an (n, K) array that receives ``softmax(W x + b)``, if given. ``absent``: a
    mask of classes left out of the softmax; no label may name one."""
    n, k = X.shape
    rows = np.arange(n)
    Z = linear_scores(X, theta, form, out=work)
    if absent is not None and np.any(absent):
        Z[:, absent] = -np.inf
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
    if sample_weight is None:
        nll = float(np.mean(nll_rows))
        Z *= 1.0 / n
    else:
        s = float(sample_weight.sum())
        nll = float(sample_weight @ nll_rows) / s
        Z *= (sample_weight / s)[:, None]
    pen, pen_grad = penalty_and_gradient(theta, form, k, lam, mu)
    return nll + pen, nll, project_on_form(Z, X, form) + pen_grad


def hessian_diagonal(theta, X, sample_weight, form, lam, mu, Q=None):
    """The Hessian diagonal of the full or diagonal form at ``theta`` (``Q``: the map's probabilities, if known)."""
    n, k = X.shape
    Q = predict_linear(X, theta, form) if Q is None else Q
    V = Q * (1.0 - Q)
    V *= (1.0 / n) if sample_weight is None else (sample_weight / sample_weight.sum())[:, None]
    hw = (V.T @ (X * X)).ravel() if form.matrix == "full" else np.einsum("ij,ij->j", V, X * X)
    h = np.concatenate([hw, V.sum(axis=0)]) if form.bias else hw
    h = h + penalty_curvature(theta.size, form, k, lam, mu)
    return np.maximum(h, 1e-12)


def free_gradient(theta, g, form) -> float:
    """The largest gradient entry that could still move (a scalar factor at a bound pushed outwards is not)."""
    g = np.asarray(g)
    if form.matrix == "scalar":
        lo, hi = SCALE_BOUNDS
        if (theta[0] <= lo and g[0] > 0) or (theta[0] >= hi and g[0] < 0):
            g = g.copy()
            g[0] = 0.0
    return float(np.max(np.abs(g))) if g.size else 0.0
