"""Newton's method with preconditioned conjugate-gradient steps, for the scaling family's larger problems.

Full maps beyond the formed Hessian's budget (matrix scaling and Dirichlet calibration of 100 classes:
10,100 parameters) and diagonal maps (vector scaling of 100 or 1,000 classes: 200 or 2,000 parameters) are
solved by :func:`newton_cg_solve`: Newton's method whose steps are solved by conjugate gradients on Hessian-vector
products (:func:`hessian_product`, never forming the Hessian), preconditioned by the inverses of the
Hessian's per-class blocks (:func:`block_preconditioner`).

Cost per Hessian-vector product: two ``n x K x K`` products for the full form (as a gradient, without its
exponential), ``n x K`` for the diagonal one. Memory: ``n x K`` floats for the rows and probabilities
(float64 and float32 copies), and the blocks: ``K (K + 1)^2`` floats for the full form (80 MB at 200
classes, 8 GB at 1,000: :data:`~calibdash.calibrators.multiclass.linear.MAX_FULL_CLASSES` bounds K), ``4 K`` for the
diagonal one.

Why Newton-CG for the full maps (measured on CIFAR-100, 10,000 x 100, the 5-fold penalty search of
Dirichlet calibration with 8,000-row folds, on a shared 2-core machine): L-BFGS-B needed 70 iterations at
lambda = 1e4 and 2,000 at lambda = 1 (each a gradient: two 8,000 x 100 x 100 products and an
exponential, 14 ms), 250 s of CPU for the search and the final fit. The ill-conditioning that costs
L-BFGS-B those iterations is structured: the Hessian is a K x K grid of (K + 1) x (K + 1) blocks, each
class's own block is well described by its rows, and the softmax's "common" directions (one vector added
to every row of ``[W | b]``) are flat except for the penalty. :func:`block_preconditioner` inverts the
blocks and solves those directions exactly, so each Newton step needs 1 to 40 conjugate-gradient steps and a
fit 4 to 10 Newton steps; the search and the final fit then take 14 s of CPU. Vector scaling of 1,000
classes (5,000 rows), which L-BFGS-B did not finish in 120 s, takes a few Newton steps here.
"""
from __future__ import annotations

import numpy as np

from .linear_map import (LinearForm, hessian_diagonal, penalty_curvature, project_on_form, linear_scores, objective,
                         rounding)
from .newton import Stop, descend

__all__ = []

#: The block preconditioner (:func:`block_preconditioner`) leaves out, for each class, the rows that carry
#: together at most this share of its block's trace (the rows the class is certain to be absent from).
BLOCK_DROP = 0.05

#: Conjugate-gradient steps allowed for one Newton step.
CG_STEPS = 500


def hessian_product(v: np.ndarray, X: np.ndarray, Q: np.ndarray, u: np.ndarray, form: LinearForm,
                     curvature: np.ndarray) -> np.ndarray:
    """The objective's Hessian at the map whose probabilities are ``Q`` times the direction ``v``, without
    forming the Hessian: along ``v`` the scores move by ``D = X V_W^T + v_b`` (:func:`linear_scores` is
    linear in its parameters), the residuals by ``S_i d_i = q_i * d_i - q_i (q_i . d_i)`` (``S_i`` the
    softmax's Jacobian), and :func:`project_on_form` turns the weighted change into the product, the penalty
    adding ``curvature * v`` (its constant diagonal). Two n x K x K products for the full form, as a
    gradient, and no exponential. ``u``: the weights divided by their sum."""
    T = linear_scores(X, v.astype(X.dtype), form)
    T *= Q
    T -= Q * T.sum(axis=1, keepdims=True)
    T *= u[:, None]
    return project_on_form(T, X, form).astype(float) + curvature * v


def _by_class(theta: np.ndarray, k: int, form: LinearForm) -> np.ndarray:
    """The parameters acting on each class's score, one row per class: ``W[c, :]`` then ``b[c]`` for the
    full form, ``(a_c, b_c)`` for the diagonal one (without ``b`` when there is none)."""
    m = k * k if form.matrix == "full" else k
    W = theta[:m].reshape(k, -1)
    return np.hstack([W, theta[m:, None]]) if form.bias else W.copy()


def _from_class(M: np.ndarray, form: LinearForm) -> np.ndarray:
    """The inverse of :func:`_by_class`."""
    if not form.bias:
        return M.ravel().copy()
    return np.concatenate([M[:, :-1].ravel(), M[:, -1]])


def _blocks(X: np.ndarray, V: np.ndarray, form: LinearForm) -> np.ndarray:
    """The per-class blocks of the data's Hessian, ``A_c = sum_i V_ci x~_ci x~_ci^T`` with ``x~_ci`` the
    coefficients of class ``c``'s parameters in row ``i`` (``(x_i, 1)`` for the full form, ``(x_ic, 1)`` for
    the diagonal one) and ``V_ci = u_i q_ic (1 - q_ic)``. For the full form each block leaves out the rows
    that carry together at most :data:`BLOCK_DROP` of its trace (six rows in seven for a confident
    100-class network): this changes the preconditioner, never the Hessian, the gradient or the optimum."""
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
    """An approximate inverse of the Hessian of the full or diagonal form (for the conjugate gradients of
    :func:`newton_cg_solve`), as a function of a gradient-shaped vector.

    The parameters acting on class ``c`` form a block of the Hessian, :func:`_blocks` plus the penalty's
    diagonal: those blocks, inverted once (K inverses of (K + 1) x (K + 1), or of 2 x 2), are a
    block-Jacobi preconditioner. They leave out the coupling between classes, ``-u_i q_ic q_id x~ x~^T``,
    and the worst of what they miss is exact and known: adding one vector to every row of ``[W | b]`` (the
    softmax's invariance; for the diagonal form, one number to every intercept) does not change the data's
    part of the objective, so along those "common" directions ``C`` the Hessian is the penalty's alone
    (``H C = diag(curvature) C``), while each block sees large curvature. The preconditioner solves that
    coarse space exactly and the blocks on the rest (the two-level "balancing" form,
    ``P + (I - P H) B^-1 (I - H P)`` with ``P = C (C^T H C)^-1 C^T``; Mandel 1993), every product with
    ``H C`` being analytic. A common direction that no penalty holds (the intercepts without one: vector
    scaling) is a null direction of the Hessian: the preconditioner projects it out (of its input and its
    output, which keeps it symmetric), so the steps never move along it and the fit keeps the start's
    position there, as Newton's pseudo-inverse does. ``present``: the classes whose parameters are free
    (the others' rows are zero in and out; the common directions run over the free rows). Measured on a CIFAR-100 fold (8,000
    rows, Dirichlet calibration at lambda = 1, warm-started from lambda = 10): the blocks alone, built
    once at the temperature map, needed 630 conjugate-gradient steps; with the coarse space, 280; with both
    built at each fit's start (as here), 80 to 90."""
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


def newton_cg_solve(theta, X, y, sample_weight, form, lam, mu, gtol, ftol, max_iter, deadline, free=None,
                    absent=None) -> Stop:
    """Newton's method for the full and diagonal forms when their Hessian is too large to form, each step
    solved by preconditioned conjugate gradients on Hessian-vector products (:func:`hessian_product`) with
    :func:`block_preconditioner`, built once at the start of the fit for the full form (its K inverses of
    (K + 1) x (K + 1) blocks cost more than a few conjugate-gradient steps) and at every step for the
    diagonal one (its 2 x 2 blocks cost one pass over the rows; built once, they went stale where some
    classes' scores run to infinity, on classes separable by their own score, and the steps needed
    hundreds of conjugate-gradient steps); ``free`` and ``absent``: the masks of
    :func:`~calibdash.calibrators.multiclass.linear.fit_linear` (the parameters that may move; the classes left out of
    the softmax).

    The conjugate gradients stop when the preconditioned residual ``sqrt(r^T M^-1 r)`` is at most
    ``eta = min(0.5, sqrt(delta))`` times its start ``delta = sqrt(g^T M^-1 g)`` (the inexact Newton
    "forcing" of Eisenstat & Walker: loose far from the optimum, tighter near it, so the steps converge
    superlinearly), or after :data:`CG_STEPS` steps.

    The Hessian-vector products run in float32 (the rows, the probabilities and the direction rounded to
    float32; the result returned in float64): they only choose the direction of each step, and their
    rounding (about 1e-6 of the products' size, far below the forcing ``eta``) changes the path, never
    where it stops: the objective and the gradient that the line search and the stopping rule use are
    float64. Single precision halves the cost of the n x K x K products, most of the solver's work.

    Gradient rule: the largest free entry of the gradient in the variables scaled by the inverse square root
    of the Hessian diagonal at the start at most ``gtol`` (a Jacobi scaling: the log-scores of a confident
    network span tens of nats; the scaling changes the path, not the optimum). The rest of the rule:
    :func:`~calibdash.calibrators.multiclass.newton.descend`.

    Measured (CIFAR-100, Dirichlet calibration's 8,000-row folds, lambda from 1e4 down to 1, warm starts):
    4 to 10 Newton steps and 10 to 90 conjugate-gradient steps per fit."""
    k = X.shape[1]
    free = np.ones(theta.size, dtype=bool) if free is None else free
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
