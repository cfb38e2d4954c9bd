"""The scaling family's Newton solvers (calibdash.calibrators.multiclass.newton): the stopping rule of its descent,
and for large full maps Newton's method with preconditioned conjugate-gradient steps.

The Newton-CG path is the one fit_linear takes for full maps whose Hessian is too costly to form (about 100
classes); here it is forced on small problems (NEWTON_WORK set to 0) so that it can be checked against the
exact Hessian and against damped Newton on it, which the small problems use by default.
"""
from __future__ import annotations

import numpy as np
import pytest

from calibdash.calibrators.multiclass import linear, newton
from calibdash.calibrators.multiclass.linear_map import (LinearForm, identity_start, objective, penalty_curvature,
                                                         predict_linear)
from calibdash.calibrators.multiclass.linear import fit_linear
from calibdash.calibrators.multiclass.newton import descend
from tests.calibrators.multiclass.conftest import distorted

FULL_FORMS = [LinearForm("full", True, "odir"), LinearForm("full", True, "l2"), LinearForm("full", False, "odir")]


def _gap(theta, X, y, w, form, lam, mu) -> float:
    """``g^T H^-1 g / 2`` at ``theta``: how far the objective is above its minimum by its quadratic model there
    (exact up to third-order terms, negligible this close to the optimum; the penalties here make H positive
    definite)."""
    _, _, g = objective(theta, X, y, w, form, lam, mu)
    H = newton.hessian(theta, X, w, form, lam, mu)
    return 0.5 * float(g @ np.linalg.solve(H, g))


@pytest.mark.parametrize("form", FULL_FORMS)
@pytest.mark.parametrize("weighted", [False, True])
def test_hessian_product_is_the_hessian_times_the_direction(form, weighted):
    """In float64 the product and the formed Hessian are two roundings of the same sums: equal to 1e-12 of
    the size of the terms (``|H| |v|``). In float32 (how the solver uses it) each of the n = 400 rows'
    terms carries a relative rounding of about 6e-8 and their sum at most n times that (2.4e-5, worst
    case): 1e-4 of the terms' size holds it, while any wrong term would be off by the size of the terms."""
    X, y = distorted(400, 5, seed=1)
    w = np.random.default_rng(2).uniform(0, 3, y.size) if weighted else None
    u = np.full(y.size, 1.0 / y.size) if w is None else w / w.sum()
    rng = np.random.default_rng(3)
    theta = identity_start(form, 5) + rng.normal(0, 0.3, identity_start(form, 5).size)
    Q = predict_linear(X, theta, form)
    curvature = penalty_curvature(theta.size, form, 5, 2.0, 0.7)
    H = newton.hessian(theta, X, w, form, 2.0, 0.7)
    for v in rng.normal(0, 1, (3, theta.size)):
        size = np.abs(H) @ np.abs(v)
        np.testing.assert_array_less(np.abs(newton.hessian_product(v, X, Q, u, form, curvature) - H @ v),
                                     1e-12 * size)
        hv32 = newton.hessian_product(v, X.astype(np.float32), Q.astype(np.float32), u.astype(np.float32),
                                       form, curvature)
        assert hv32.dtype == np.float64
        np.testing.assert_array_less(np.abs(hv32 - H @ v), 1e-4 * size)


@pytest.mark.parametrize("form", FULL_FORMS)
def test_preconditioner_is_symmetric_positive_definite_and_exact_on_the_common_directions(form):
    """The two-level preconditioner ``M = P + (I - P H) B^-1 (I - H P)`` is symmetric positive definite, and
    on a direction that adds one vector to every row of ``[W | b]`` (where the data's part of the Hessian is
    0) it inverts H exactly: ``M H c = P H c + (I - P H) B^-1 (H c - H c) = c``. Checked to 1e-8 relative:
    the rounding of K inverses of blocks whose condition numbers here are below 1e6."""
    k = 5
    X, y = distorted(400, k, seed=4)
    theta = identity_start(form, k) + np.random.default_rng(5).normal(0, 0.3, identity_start(form, k).size)
    Q = predict_linear(X, theta, form)
    u = np.full(y.size, 1.0 / y.size)
    curvature = penalty_curvature(theta.size, form, k, 2.0, 0.7)
    apply = newton.block_preconditioner(X, Q, u, form, curvature)
    M = np.column_stack([apply(e) for e in np.eye(theta.size)])
    np.testing.assert_allclose(M, M.T, atol=1e-10 * np.abs(M).max())
    assert np.linalg.eigvalsh(0.5 * (M + M.T)).min() > 0
    H = newton.hessian(theta, X, None, form, 2.0, 0.7)
    vec = np.random.default_rng(6).normal(0, 1, k + 1 if form.bias else k)
    common = np.concatenate([np.tile(vec[:k], k), np.full(k, vec[k])]) if form.bias else np.tile(vec, k)
    np.testing.assert_allclose(apply(H @ common), common, rtol=0, atol=1e-8 * np.abs(common).max())


@pytest.mark.parametrize("form", FULL_FORMS)
@pytest.mark.parametrize("weighted", [False, True])
def test_newton_cg_reaches_the_optimum_of_newton_on_the_formed_hessian(form, weighted, monkeypatch):
    """Both solvers stop at the default rule (gtol = 1e-9 on the gradient, ftol = 1e-13 on a step's relative
    decrease). Each result is above the one minimum by its own gap ``g^T H^-1 g / 2`` (computed here from the
    formed Hessian), so the two objective values differ by at most the sum of the gaps plus the rounding of
    two evaluations (a few eps times the objective, ~1e-15): that is the assertion (with a factor 2 on the
    gaps). The gaps themselves must be small (1e-12: the rule's gtol squared over the smallest scaled
    curvature is far below). The probabilities then agree to ``sqrt(2 gap / smallest curvature)``: 1e-6,
    FIT_TOL, the tolerance of every comparison of two fits (conftest.py)."""
    k, lam, mu = 5, 0.5, 0.2
    X, y = distorted(400, k, seed=7)
    w = np.random.default_rng(8).uniform(0, 3, y.size) if weighted else None
    start = identity_start(form, k)
    exact = fit_linear(X, y, w, form, lam, mu, start=start)
    calls = []
    newton_cg = linear.newton_cg_solve
    monkeypatch.setattr(linear, "newton_cg_solve", lambda *a: calls.append(1) or newton_cg(*a))
    monkeypatch.setattr(linear, "NEWTON_WORK", 0)
    cg = fit_linear(X, y, w, form, lam, mu, start=start)
    assert calls and exact.converged and cg.converged
    gaps = [_gap(f.theta, X, y, w, form, lam, mu) for f in (exact, cg)]
    assert max(gaps) < 1e-12
    assert abs(cg.loss - exact.loss) <= 2 * sum(gaps) + 8 * np.finfo(float).eps * abs(exact.loss)
    np.testing.assert_allclose(predict_linear(X, cg.theta, form), predict_linear(X, exact.theta, form), atol=1e-6)


def test_a_step_that_does_not_lower_the_objective_strictly_ends_the_loop():
    """An objective flat to rounding (the same value everywhere) with a gradient that never vanishes: the
    old line search accepted its equal-valued steps forever; the loop now ends at once on the
    floating-point limit, reporting the direction's decrement."""
    calls = []

    def evaluate(t):
        calls.append(1)
        return 1.0, np.array([1e-6, -2e-6]), None

    stop = descend(np.zeros(2), evaluate, lambda t, g, aux: -g, lambda t, g: False, 1e-13, 5000, np.inf)
    assert stop.why == "floating-point limit" and stop.n_iter == 0
    assert stop.decrement == pytest.approx(0.5 * (1e-12 + 4e-12))
    assert len(calls) <= 45                     # the start and at most 41 halvings
