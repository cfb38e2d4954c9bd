"""The scaling family's Newton solvers: damped Newton on the formed Hessian for small problems, Newton with
preconditioned conjugate-gradient steps (:func:`newton_cg_solve`) for larger ones, and the loop both share.

:func:`descend` ends (its ``why``) by ``"gtol"``, the solver's gradient rule; ``"ftol"``, an accepted step lowered
the objective by at most ``ftol max(|f_k|, |f_{k+1}|, 1)`` plus its rounding (on classes separable by their own
score the decreases shrink into the rounding); ``"floating-point limit"``, no step, halved down to 2^-40 or until
its predicted decrease is within the rounding, lowers the objective *strictly* (equal-valued steps let the iterate
wander where it is flat); ``"max_iter"``; or ``"time"``, the wall clock passed ``deadline`` (a safety net). It also
returns the last Newton decrement ``-g.d / 2``, by which ``fit_linear`` judges the last two ends.

Why Newton-CG (CIFAR-100, 10,000 x 100, Dirichlet calibration's 5-fold search): L-BFGS-B needed 70 to 2,000
iterations per fit, 250 s of CPU in all. The Hessian is a K x K grid of (K + 1) x (K + 1) blocks, each class's own
block well described by its rows, and the softmax's "common" directions flat but for the penalty. Solving the blocks
and those directions exactly (:func:`block_preconditioner`), a fit takes 4 to 10 Newton steps of 1 to 90
conjugate-gradient steps: 14 s for the search.
"""
from __future__ import annotations

import time
from typing import Callable, NamedTuple

import numpy as np

from .linear_map import (SCALE_BOUNDS, LinearForm, free_gradient, hessian_diagonal, linear_scores, objective,
                         penalty_curvature, predict_linear, project_on_form, rounding)

__all__ = []

#: The line search halves the step down to this (then the floating-point limit ends the loop).
SMALLEST_STEP = 2.0 ** -40
#: The block preconditioner (:func:`block_preconditioner`) leaves out, for each class, the rows that carry
#: together at most this share of its block's trace (the rows the class is certain to be absent from).
BLOCK_DROP = 0.05
#: Conjugate-gradient steps allowed for one Newton step.
CG_STEPS = 500


class Stop(NamedTuple):
    """How a Newton loop ended."""

    theta: np.ndarray
    n_iter: int              # accepted steps
    why: str                 # one of the ends of the module docstring
    decrement: float         # -g.d / 2 of the last direction computed (0 after the gradient rule)
    f: float


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
    """The objective's Hessian at ``theta``, for the diagonal and full forms. With ``S_i = diag(q_i) - q_i q_i^T`` the
    softmax's Jacobian, a parameter ``p`` acting on class ``c_p`` with coefficient ``phi_ip`` (``x_il`` for ``W_{c_p
    l}``, 1 for ``b_{c_p}``) has ``H_pr = sum_i w_i phi_ip phi_ir S_i[c_p, c_r] / sum(w)``; the penalty adds its
    diagonal. Cost: ``n p^2``."""
    n, k = X.shape
    Q = predict_linear(X, theta, form, absent)
    u = np.full(n, 1.0 / n) if sample_weight is None else sample_weight / sample_weight.sum()
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


def damped_newton(theta, X, y, sample_weight, form, lam, mu, gtol, ftol, max_iter, deadline, free,
                  absent=None) -> Stop:
    """Damped Newton on the formed Hessian: the step solves ``H d = -g`` on the ``free`` parameters (a mask) and
    on the range of ``H`` (eigenvalues above 1e-12 of the largest; the null directions, the softmax's
    invariances, are left as they are). Gradient rule: the largest free entry at most ``gtol``."""
    work = np.empty(X.shape)

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


def hessian_product(v: np.ndarray, X: np.ndarray, Q: np.ndarray, u: np.ndarray, form: LinearForm,
                     curvature: np.ndarray) -> np.ndarray:
    """The Hessian at the map of probabilities ``Q`` times ``v``, never formed: along ``v`` the scores move by
    ``D = X V_W^T + v_b``, the residuals by ``S_i d_i = q_i * d_i - q_i (q_i . d_i)``, projected on the form,
    plus ``curvature * v`` (the penalty). ``u``: the weights divided by their sum."""
    T = linear_scores(X, v.astype(X.dtype), form)
    T *= Q
    T -= Q * T.sum(axis=1, keepdims=True)
    T *= u[:, None]
    return project_on_form(T, X, form).astype(float) + curvature * v


def _by_class(theta: np.ndarray, k: int, form: LinearForm) -> np.ndarray:
    """The parameters acting on each class's score, a row per class: ``W[c, :]`` (or ``a_c``), then ``b[c]``."""
    m = k * k if form.matrix == "full" else k
    W = theta[:m].reshape(k, -1)
    return np.hstack([W, theta[m:, None]]) if form.bias else W.copy()


def _from_class(M: np.ndarray, form: LinearForm) -> np.ndarray:
    """The inverse of :func:`_by_class`."""
    if not form.bias:
        return M.ravel().copy()
    return np.concatenate([M[:, :-1].ravel(), M[:, -1]])


def _blocks(X: np.ndarray, V: np.ndarray, form: LinearForm) -> np.ndarray:
    """The per-class blocks of the data's Hessian, ``A_c = sum_i V_ci x~_ci x~_ci^T`` (``x~_ci``: ``(x_i, 1)`` for the
    full form, ``(x_ic, 1)`` for the diagonal one; ``V_ci = u_i q_ic (1 - q_ic)``). Full blocks leave out the
    rows carrying together at most :data:`BLOCK_DROP` of their trace: a cheaper preconditioner, same optimum."""
    n, k = X.shape
    if form.matrix == "diagonal":
        xv = V * X.T
        a = np.einsum("ci,ic->c", xv, X)
        B = np.empty((k, 2, 2)) if form.bias else a[:, None, None].copy()
        if form.bias:
            B[:, 0, 0], B[:, 0, 1], B[:, 1, 0], B[:, 1, 1] = a, xv.sum(axis=1), xv.sum(axis=1), V.sum(axis=1)
        return B
    width = k + 1 if form.bias else k
    Xt = np.hstack([X, np.ones((n, 1))]) if form.bias else X
    mass = V * np.einsum("ij,ij->i", Xt, Xt)        # each row's share of each block's trace
    ranked = np.sort(mass, axis=1)
    cum = np.cumsum(ranked, axis=1)
    cut = (cum <= BLOCK_DROP * cum[:, -1:]).sum(axis=1)      # the rows carrying the smallest share
    keep = mass >= ranked[np.arange(k), np.minimum(cut, n - 1)][:, None]
    B = np.empty((k, width, width))
    for c in range(k):
        rows = np.flatnonzero(keep[c])
        Xs = Xt[rows]
        B[c] = (Xs * V[c, rows][:, None]).T @ Xs
    return B


def block_preconditioner(X: np.ndarray, Q: np.ndarray, u: np.ndarray, form: LinearForm,
                          curvature: np.ndarray, present: np.ndarray | None = None):
    """An approximate inverse of the full or diagonal form's Hessian, as a function of a gradient-shaped vector.

    The per-class blocks (:func:`_blocks` plus the penalty's diagonal), inverted once, are a block-Jacobi
    preconditioner. What they miss is known exactly: adding one vector to every row of ``[W | b]`` (for the diagonal
    form, one number to every intercept) leaves the data's part of the objective unchanged, so along these "common"
    directions ``C`` the Hessian is the penalty's alone. The coarse space is solved exactly and the blocks on the rest
    (the two-level "balancing" form ``P + (I - P H) B^-1 (I - H P)``, ``P = C (C^T H C)^-1 C^T``; Mandel 1993). A common
    direction no penalty holds (vector scaling's intercepts) is a null direction: it is projected out of input and
    output (keeping the operator symmetric), so the fit keeps the start's position there, as Newton's pseudo-inverse
    does. ``present``: the classes whose parameters are free. Measured on a CIFAR-100 fold: blocks alone 630
    conjugate-gradient steps; with the coarse space 280; both built at each fit's start (as here) 80 to 90."""
    k = X.shape[1]
    present = np.ones(k, dtype=bool) if present is None else present
    V = (Q * (1.0 - Q)).T                           # (K, n)
    V *= u
    pen = _by_class(curvature, k, form)
    B = _blocks(X, V, form)
    width = B.shape[1]
    B[:, np.arange(width), np.arange(width)] += pen
    top = float(np.max(np.diagonal(B, axis1=1, axis2=2)))
    B[:, np.arange(width), np.arange(width)] += 1e-12 * top if top > 0 else 1.0   # a block without rows or penalty
    inv = np.linalg.inv(B)
    inv = 0.5 * (inv + np.transpose(inv, (0, 2, 1)))
    gauge = np.ones(width, dtype=bool)              # the columns whose common direction is an invariance
    if form.matrix == "diagonal":
        gauge[0] = False                            # the scales: one added to all changes the scores
    common = np.where(gauge, pen[present].sum(axis=0), 0.0)        # C^T H C: the penalty on each
    coarse = np.divide(1.0, common, out=np.zeros_like(common), where=common > 0)
    flat = gauge & (common <= 0)                    # invariances no penalty holds: projected out
    on = present[:, None].astype(float)
    n_on = max(int(present.sum()), 1)

    def centre(S: np.ndarray) -> np.ndarray:
        S[:, flat] -= on * (S[:, flat].sum(axis=0) / n_on)
        return S

    def apply(r: np.ndarray) -> np.ndarray:
        R = centre(_by_class(r, k, form) * on)
        Y = on * (coarse * R.sum(axis=0))           # P r
        S = np.matmul(inv, (R - pen * Y)[:, :, None])[:, :, 0] * on      # B^-1 (I - H P) r
        S -= on * (coarse * (pen * S).sum(axis=0))                       # (I - P H) ...
        S += Y
        return _from_class(centre(S), form)

    return apply


def newton_cg_solve(theta, X, y, sample_weight, form, lam, mu, gtol, ftol, max_iter, deadline, free,
                    absent=None) -> Stop:
    """Newton's method for the full and diagonal forms, each step by preconditioned conjugate gradients.

    The preconditioner is built once for the full form (its K block inverses cost more than a few CG steps) and at every
    step for the diagonal one (its 2 x 2 blocks cost one pass; built once, they went stale on classes separable by their
    own score). ``free`` and ``absent``: the masks of :func:`~calibdash.calibrators.multiclass.linear.fit_linear`. The
    CG stops when ``sqrt(r^T M^-1 r)`` is at most ``min(0.5, sqrt(delta))`` times its start ``delta`` (Eisenstat &
    Walker's forcing: superlinear steps), or after :data:`CG_STEPS`. The Hessian-vector products run in float32: they
    only choose the direction (their rounding, about 1e-6, is far below the forcing), while the objective and gradient
    are float64; it halves the cost of the n x K x K products. Gradient rule: the largest free entry in the variables
    scaled by the Hessian diagonal at the start (a Jacobi scaling) at most ``gtol``."""
    k = X.shape[1]
    present = np.ones(k, dtype=bool) if absent is None else ~np.asarray(absent)
    u = np.full(y.size, 1.0 / y.size) if sample_weight is None else sample_weight / sample_weight.sum()
    curvature = penalty_curvature(theta.size, form, k, lam, mu)
    work, Q = np.empty(X.shape), np.empty(X.shape)
    X32, u32 = X.astype(np.float32), u.astype(np.float32)
    objective(theta, X, y, sample_weight, form, lam, mu, work, Q, absent)
    built = [block_preconditioner(X, Q, u, form, curvature, present)]
    scale = 1.0 / np.sqrt(hessian_diagonal(theta, X, sample_weight, form, lam, mu, Q))

    def evaluate(t):
        f, _, g = objective(t, X, y, sample_weight, form, lam, mu, work, Q, absent)
        return f, np.where(free, g, 0.0), Q

    def direction(t, g, Qt):
        if form.matrix == "diagonal" and t is not theta:          # its blocks cost one pass: rebuilt
            built[0] = block_preconditioner(X, Qt, u, form, curvature, present)
        precondition = built[0]
        Q32 = Qt.astype(np.float32)
        d = np.zeros_like(t)
        r = -g
        z = descent = precondition(r)
        rz = float(r @ z)
        target = min(0.5, rz ** 0.25) * np.sqrt(rz)
        p = z
        for _ in range(CG_STEPS):
            Hp = np.where(free, hessian_product(p, X32, Q32, u32, form, curvature), 0.0)
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
        # rounding may spoil the step: the preconditioned gradient always descends (-g^T M^-1 g < 0)
        return d if float(g @ d) < 0 else descent

    xmax = np.abs(X).max(axis=0)
    return descend(theta, evaluate, direction, lambda t, g: float(np.max(np.abs(g * scale))) <= gtol, ftol,
                   max_iter, deadline, rounding=lambda t, f: rounding(t, f, form, xmax))
