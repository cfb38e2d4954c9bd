"""Newton's method with preconditioned conjugate-gradient steps, for the scaling family's larger problems.

Full maps beyond the formed Hessian's budget (100 classes: 10,100 parameters) and diagonal maps of many classes
are solved by :func:`newton_cg_solve`: conjugate gradients on Hessian-vector products (:func:`hessian_product`),
preconditioned by the inverses of the Hessian's per-class blocks (:func:`block_preconditioner`).

Why (measured on CIFAR-100, 10,000 x 100, Dirichlet calibration's 5-fold search): L-BFGS-B needed 70 to 2,000
iterations per fit, 250 s of CPU in all. The ill-conditioning is structured: the Hessian is a K x K grid of
(K + 1) x (K + 1) blocks, each class's own block well described by its rows, and the softmax's "common"
directions (one vector added to every row of ``[W | b]``) flat but for the penalty. Solving the blocks and those
directions exactly, a fit takes 4 to 10 Newton steps of 1 to 90 conjugate-gradient steps: 14 s for the search.
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
    preconditioner. What they miss is known exactly: adding one vector to every row of ``[W | b]`` (for the
    diagonal form, one number to every intercept) leaves the data's part of the objective unchanged, so along
    these "common" directions ``C`` the Hessian is the penalty's alone. The coarse space is solved exactly and
    the blocks on the rest (the two-level "balancing" form ``P + (I - P H) B^-1 (I - H P)``,
    ``P = C (C^T H C)^-1 C^T``; Mandel 1993). A common direction no penalty holds (vector scaling's intercepts)
    is a null direction: it is projected out of input and output (keeping the operator symmetric), so the fit
    keeps the start's position there, as Newton's pseudo-inverse does. ``present``: the classes whose parameters
    are free. Measured on a CIFAR-100 fold: blocks alone 630 conjugate-gradient steps; with the coarse space
    280; both built at each fit's start (as here) 80 to 90."""
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
    """Newton's method for the full and diagonal forms, each step by preconditioned conjugate gradients.

    The preconditioner is built once for the full form (its K block inverses cost more than a few CG steps) and
    at every step for the diagonal one (its 2 x 2 blocks cost one pass; built once, they went stale on classes
    separable by their own score). ``free`` and ``absent``: the masks of
    :func:`~calibdash.calibrators.multiclass.linear.fit_linear`. The CG stops when ``sqrt(r^T M^-1 r)`` is at most
    ``min(0.5, sqrt(delta))`` times its start ``delta`` (Eisenstat & Walker's forcing: superlinear steps), or
    after :data:`CG_STEPS`. The Hessian-vector products run in float32: they only choose the direction (their
    rounding, about 1e-6, is far below the forcing), while the objective and gradient are float64; it halves
    the cost of the n x K x K products. Gradient rule: the largest free entry in the variables scaled by the
    Hessian diagonal at the start (a Jacobi scaling) at most ``gtol``."""
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
