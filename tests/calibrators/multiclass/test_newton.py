"""The scaling family's solver for large full maps (Newton's method with preconditioned conjugate-gradient
steps, calibdash.calibrators.multiclass.linear) and the penalty search's early stop at K = 100.

The Newton-CG path is the one fit_linear takes for full maps whose Hessian is too costly to form (about 100
classes); here it is forced on small problems (NEWTON_WORK set to 0) so that it can be checked against the
exact Hessian and against damped Newton on it, which the small problems use by default.
"""
from __future__ import annotations

import numpy as np
import pytest
from scipy.special import softmax

from calibdash.calibrators.multiclass import linear, newton
from calibdash.calibrators.multiclass.linear_map import (LinearForm, identity_start, objective, penalty_curvature,
                                                         predict_linear)
from calibdash.calibrators.multiclass.linear import fit_linear
from calibdash.calibrators.multiclass.penalty_search import cv_log_loss, fold_ids, penalty_grid

FULL_FORMS = [LinearForm("full", True, "odir"), LinearForm("full", True, "l2"), LinearForm("full", False, "odir")]


def _classes(n: int, k: int, seed: int, spread: float = 2.0):
    """``n`` rows of ``k`` logits and labels drawn from a distorted softmax of them (a shrunk diagonal, each
    class leaking into another, shifted intercepts), so that every part of a full map moves."""
    rng = np.random.default_rng(seed)
    Z = rng.normal(0, spread, (n, k))
    mix = 0.6 * np.eye(k)
    mix[rng.permutation(k), np.arange(k)] += 0.6
    truth = softmax(Z @ mix.T + rng.normal(0, 0.3, k), axis=1)
    y = np.minimum((rng.random(n)[:, None] > np.cumsum(truth, axis=1)).sum(axis=1), k - 1)
    return Z, y


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
    X, y = _classes(400, 5, seed=1)
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
    X, y = _classes(400, k, seed=4)
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
    the tolerance of every comparison of two fits in test_multiclass_scaling."""
    k, lam, mu = 5, 0.5, 0.2
    X, y = _classes(400, k, seed=7)
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


def test_penalty_search_at_100_classes_stops_early_on_the_point_the_whole_grid_chooses():
    """A 100-class map (10,100 parameters, fitted by Newton-CG) on 1,000 rows whose held-out loss along the
    grid falls to a minimum at an inner point and then rises at every weaker penalty: there the walk that
    stops after two rises must choose what the walk over the whole grid chooses. Its losses are the whole
    walk's first ones exactly (the same fits from the same starts), and it skips the weakest point (the
    slowest fits). Three folds, not five, to keep the test short; the property does not depend on it."""
    X, y = _classes(1000, 100, seed=4, spread=4.0)
    form = LinearForm("full", True, "odir")
    grid = penalty_grid("odir", (1e4, 1e3, 1e2, 1e1, 1e0), None)
    folds = fold_ids(X, y, 3, seed=0)
    whole = cv_log_loss(X, y, None, form, grid, folds, patience=None)
    best = int(np.argmin(whole))
    assert 0 < best < len(grid) - 2                                        # an inner minimum, then
    assert np.all(np.diff(whole[:best + 1]) < 0) and np.all(np.diff(whole[best:]) > 0)    # one valley
    early = cv_log_loss(X, y, None, form, grid, folds, patience=2)
    reached = np.isfinite(early)
    assert not reached[-1]
    np.testing.assert_array_equal(early[reached], whole[reached])
    assert int(np.argmin(early)) == best
