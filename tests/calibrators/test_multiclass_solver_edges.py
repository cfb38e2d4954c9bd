"""The scaling family on degenerate input: every fit ends, in few iterations, and ends right.

Each case asserts an ITERATION cap (the final fit's ``n_iter_`` and, for the penalty search, the number
of fits and each one's iterations), finite predictions in rows summing to 1, and a property of the answer.
The caps (``ITER_CAP`` Newton steps) are far above what the solver takes (2 to 25 here) and far below the
old 5,000-iteration cap these inputs used to reach.

Tolerances. Two fits of one problem that both stop by the rule of calibdash.calibrators.multiclass.linear differ in
probabilities by about the square root of the objective's remaining gap over its curvature: 1e-6 (the
tolerance of test_multiclass_scaling) covers it. A column permutation changes only the order of the
floating-point sums, so the fits agree to that tolerance and the folds (dealt from hashes that ignore the
column order) exactly.
"""
from __future__ import annotations

import tracemalloc
import warnings

import numpy as np
import pytest
from scipy.special import softmax
from sklearn.exceptions import ConvergenceWarning

from calibdash import calibrators
from calibdash.core.errors import DataError
from calibdash.calibrators.multiclass import linear
from calibdash.calibrators.multiclass.linear import LinearForm, fit_linear
from calibdash.calibrators.multiclass.penalty_search import fold_ids, search_rows
from calibdash.calibrators.multiclass.newton import descend
from calibdash.calibrators.multiclass.scaling import PenaltyFallbackWarning

ITER_CAP = 60                     # Newton steps of one fit
FIT_TOL = 1e-6
METHODS = ["temperature", "vector", "matrix", "dirichlet"]
FIXED = {"matrix": {"select": False, "lam": 10.0, "mu": 10.0}, "dirichlet": {"select": False, "lam": 10.0,
                                                                              "mu": 10.0}}
SEARCH = {"select": True, "lambdas": (100.0, 1.0), "n_folds": 3}


def _make(name, **extra):
    return calibrators.get(name, "classes", **{**FIXED.get(name, {}), **extra})


def _draw(n, k, seed, spread=2.0):
    """``n`` rows of ``k`` logits and labels drawn from a sharpened softmax of them."""
    rng = np.random.default_rng(seed)
    Z = rng.normal(0, spread, (n, k))
    y = (rng.random(n)[:, None] > np.cumsum(softmax(1.5 * Z, axis=1), axis=1)).sum(axis=1)
    return Z, np.minimum(y, k - 1)


def _log_loss(Q, y):
    return float(-np.mean(np.log(np.maximum(Q[np.arange(y.size), y], 1e-300))))


def _fit_quietly(cal, P, y, **kw):
    """Fit with every ConvergenceWarning an error: these fits must converge."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        return cal.fit(P, y, **kw)


def _check(cal, P, cap=ITER_CAP):
    """The fit ended within the cap and predicts finite rows summing to 1; returns the predictions."""
    assert cal.n_iter_ <= cap
    if getattr(cal, "cv_n_iter_", None):
        assert len(cal.cv_n_iter_) <= len(cal.cv_grid_) * cal.n_folds
        assert max(cal.cv_n_iter_) <= cap
    Q = cal.predict_proba(P)
    assert np.all(np.isfinite(Q)) and np.all(Q >= 0)
    np.testing.assert_allclose(Q.sum(axis=1), 1.0, atol=1e-12)
    return Q


# -- the stopping rule -----------------------------------------------------------------------------------
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


def test_the_wall_clock_cap_stops_a_fit_with_a_warning_never_silently():
    Z, y = _draw(300, 4, seed=1)
    with pytest.warns(ConvergenceWarning, match="wall-clock cap"):
        fit = fit_linear(Z, y, None, LinearForm("full", True, "odir"), 1.0, 1.0, max_seconds=-1.0)
    assert fit.stop == "time" and not fit.converged and fit.n_iter == 0


# -- saturated rows, huge logits, float32, near-uniform ------------------------------------------------
@pytest.mark.parametrize("name", METHODS)
def test_one_hot_rows_mixed_with_soft_rows(name):
    """Soft rows and exact one-hot rows (probabilities 0 and 1, a tenth of them on a wrong class: log-scores
    of -690.8 on the label). The fit converges in few steps and its log-loss is far below the input's
    (the wrong one-hot rows cost the input 690 nats each)."""
    rng = np.random.default_rng(2)
    Z, y = _draw(1500, 6, seed=2)
    P = softmax(Z, axis=1)
    hard = rng.random(y.size) < 0.4
    top = np.where(rng.random(y.size) < 0.9, y, (y + 1) % 6)
    P[hard] = np.eye(6)[top[hard]]
    cal = _fit_quietly(_make(name), P, y)
    Q = _check(cal, P, cap=30)
    assert _log_loss(Q, y) < _log_loss(P, y) - 10.0


@pytest.mark.parametrize("name", ["vector", "matrix", "dirichlet"])
def test_separable_one_hot_rows_end_and_sharpen(name):
    """Every row's top class is its label (one-hot rows and soft ones): the likelihood has no finite optimum
    (sharper is always better), yet the fit ends in few steps, and its log-loss is below the input's."""
    Z, y = _draw(1200, 5, seed=3)
    right = Z.argmax(axis=1) == y
    P = softmax(Z[right], axis=1)
    y = y[right]
    P[::3] = np.eye(5)[y[::3]]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)       # an optimum at infinity may not 'converge'
        cal = _make(name).fit(P, y)
    Q = _check(cal, P)
    assert _log_loss(Q, y) < _log_loss(P, y)


@pytest.mark.parametrize("name", METHODS)
@pytest.mark.parametrize("size", [1e4, 1e6])
def test_logits_of_any_finite_magnitude(name, size):
    """Logits of 1e4 and 1e6 (the softmax saturated on nearly every row, the scores' rounding 1e-12 and 1e-10
    of the objective): the fit converges in few steps. Temperature scaling keeps the logits' ranking; the
    richer maps contain the temperature map at no penalty (ODIR charges neither the diagonal nor a zero
    intercept), so their log-loss on the fitted rows is at most the temperature map's."""
    Z, y = _draw(1000, 5, seed=4)
    cal = _fit_quietly(_make(name, logits=True), size * Z, y)
    Q = _check(cal, size * Z, cap=30)
    if name == "temperature":
        np.testing.assert_array_equal(Q.argmax(axis=1), Z.argmax(axis=1))
    else:
        T = calibrators.get("temperature", "classes", logits=True).fit(size * Z, y).predict_proba(size * Z)
        assert _log_loss(Q, y) <= _log_loss(T, y) + 1e-9


@pytest.mark.parametrize("name", METHODS)
def test_float32_input_gives_the_float64_fit(name):
    Z, y = _draw(800, 5, seed=5)
    P = softmax(Z, axis=1).astype(np.float32)
    a = _fit_quietly(_make(name), P, y)
    b = _fit_quietly(_make(name), P.astype(np.float64), y)
    np.testing.assert_allclose(_check(a, P), b.predict_proba(P.astype(np.float64)), atol=FIT_TOL)


@pytest.mark.parametrize("name", ["vector", "matrix", "dirichlet"])
def test_near_uniform_probabilities(name):
    """Probabilities within 1e-6 of 1/K and labels drawn at random: the log-scores are nearly collinear
    with the intercepts (the Hessian's condition about 1e11), and the objective is flat to its rounding
    at the optimum. The fit converges in few steps (it used to run to the cap) and stays near uniform."""
    rng = np.random.default_rng(6)
    P = 0.1 + rng.uniform(-1e-6, 1e-6, (3000, 10))
    P /= P.sum(axis=1, keepdims=True)
    y = rng.integers(0, 10, 3000)
    cal = _fit_quietly(_make(name), P, y)
    Q = _check(cal, P, cap=15)
    assert cal.converged_
    assert np.abs(Q - np.bincount(y, minlength=10) / y.size).max() < 0.05


# -- classes the labels never name --------------------------------------------------------------------
@pytest.mark.parametrize("name", ["vector", "matrix", "dirichlet"])
@pytest.mark.parametrize("search", [False, True])
def test_a_class_never_in_the_labels_keeps_the_temperature_map_and_a_probability(name, search):
    """Class 2 has no rows: it is left out of the fit's softmax, its parameters are the fitted temperature's
    map (W_2 = e_2 / T, b_2 = 0) and it keeps a probability above 0 on every row."""
    Z, y = _draw(1500, 5, seed=7)
    keep = y != 2
    P, y = softmax(Z[keep], axis=1), y[keep]
    cal = _fit_quietly(_make(name, **(SEARCH if search and name != "vector" else {})), P, y)
    Q = _check(cal, P)
    assert cal.absent_classes_ == (2,)
    assert np.all(Q[:, 2] > 0)
    beta = 1.0 / _fit_quietly(calibrators.get("temperature", "classes"), P, y).temperature_
    k = 5
    if name == "vector":
        np.testing.assert_allclose([cal.theta_[2], cal.theta_[k + 2]], [beta, 0.0], rtol=1e-6)
    else:
        W, b = cal.theta_[:k * k].reshape(k, k), cal.theta_[k * k:]
        np.testing.assert_allclose(W[2], beta * np.eye(k)[2], rtol=1e-6, atol=1e-12)
        assert b[2] == 0.0
    # the others are fitted among themselves: better than the temperature map's probabilities renormalised
    # over the classes present (the fit's objective; the temperature map is in the family at no penalty)
    T = calibrators.get("temperature", "classes").fit(P, y).predict_proba(P)
    on = np.arange(k) != 2
    assert _log_loss(Q[:, on] / Q[:, on].sum(1, keepdims=True), y - (y > 2)) < \
        _log_loss(T[:, on] / T[:, on].sum(1, keepdims=True), y - (y > 2))
    if name == "vector":                    # no penalty holds the intercepts: they keep the start's sum, 0
        assert abs(cal.theta_[k:][on].sum()) < 1e-9


@pytest.mark.parametrize("name", ["matrix", "dirichlet"])
def test_two_of_ten_classes_in_the_labels(name):
    Z, y = _draw(2000, 10, seed=8)
    keep = y < 2
    P, y = softmax(Z[keep], axis=1), y[keep]
    cal = _fit_quietly(_make(name, select=True, n_folds=3), P, y)
    Q = _check(cal, P)
    assert cal.absent_classes_ == tuple(range(2, 10))
    assert np.all(Q[:, 2:] > 0)


@pytest.mark.parametrize("name", ["vector", "matrix", "dirichlet"])
def test_labels_of_one_class_are_refused_by_the_per_class_maps(name):
    Z, y = _draw(500, 4, seed=9)
    with pytest.raises(DataError, match="at least two classes"):
        _make(name).fit(softmax(Z, axis=1), np.full(y.size, 3))


def test_temperature_fits_labels_of_one_class_and_ends():
    """Class 3 is the label of every row: the likelihood grows as T falls where class 3 leads and rises where
    it does not; the fit ends within the cap (at a bound or an inner optimum), with finite rows."""
    Z, y = _draw(500, 4, seed=9)
    cal = calibrators.get("temperature", "classes", logits=True).fit(Z, np.full(y.size, 3))
    _check(cal, Z)


def test_a_fold_without_a_class_still_fits():
    """A class of one row (absent from the training part of its fold): the search ends and chooses."""
    Z, y = _draw(600, 4, seed=10)
    y[y == 3] = 0
    y[0] = 3
    cal = _fit_quietly(_make("matrix", logits=True, **SEARCH), Z, y)
    _check(cal, Z)
    assert cal.absent_classes_ == ()


# -- too few rows for the search, too many classes for a full map -------------------------------------
@pytest.mark.parametrize("name", ["matrix", "dirichlet"])
def test_constant_probabilities_fall_back_to_the_stated_penalty(name):
    """Every row has the same probabilities and one of 4 labels: 4 distinct rows, fewer than the 5 folds.
    The fit uses the constructor's lam and mu, warns, and says so in penalty_note_."""
    rng = np.random.default_rng(11)
    P = np.tile(softmax(rng.normal(0, 1, 10)), (2000, 1))
    y = rng.integers(0, 4, 2000)
    with pytest.warns(PenaltyFallbackWarning, match="lambda=7"):
        cal = calibrators.get(name, "classes", lam=7.0, mu=3.0).fit(P, y)
    Q = _check(cal, P)
    assert (cal.lambda_, cal.mu_) == (7.0, 3.0) and cal.cv_losses_ is None
    assert "5 distinct rows" in cal.penalty_note_
    # the labels' frequencies are what a map of constant rows can learn
    np.testing.assert_allclose(Q[0, :4] / Q[0, :4].sum(), np.bincount(y) / y.size, atol=0.02)


@pytest.mark.parametrize("name", ["matrix", "dirichlet"])
def test_full_maps_beyond_the_limit_are_refused_before_allocating(name):
    k = linear.MAX_FULL_CLASSES + 1
    Z, y = _draw(60, k, seed=12)
    tracemalloc.start()
    try:
        with pytest.raises(DataError, match=f"limit of {linear.MAX_FULL_CLASSES} classes.*vector scaling"):
            _make(name, logits=True).fit(Z, y)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 20 * 2 ** 20                  # the blocks alone would take k (k + 1)^2 * 8 = 130 MB


def test_vector_scaling_of_1000_classes_ends_in_few_steps():
    """2,000 rows of 1,000 classes (870 of them in the labels, most on one or two rows, many separable by
    their own score: no finite optimum, their parameters run to 1e5). The fit ends within the cap, by the
    decrease rule once the steps' decreases fall into the objective's rounding (a warning may say that
    the map is not at an optimum: it has none), and beats the temperature map on its rows."""
    Z, y = _draw(2000, 1000, seed=13)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        cal = calibrators.get("vector", "classes", logits=True).fit(Z, y)
    _check(cal, Z, cap=40)
    assert cal.stop_ in ("gtol", "ftol", "floating-point limit")
    T = calibrators.get("temperature", "classes", logits=True).fit(Z, y).predict_proba(Z)
    assert _log_loss(cal.predict_proba(Z), y) < _log_loss(T, y)          # 2,000 parameters fitted in-sample


# -- column order -----------------------------------------------------------------------------------
@pytest.mark.parametrize("name,extra", [("temperature", {}), ("vector", {}), ("matrix", {}),
                                        ("dirichlet", {}), ("matrix", SEARCH), ("dirichlet", SEARCH),
                                        ("dirichlet", {**SEARCH, "reg": "l2"})])
def test_permuting_the_columns_permutes_the_predictions(name, extra):
    Z, y = _draw(600, 6, seed=14)
    P = softmax(Z, axis=1)
    perm = np.random.default_rng(15).permutation(6)
    inv = np.argsort(perm)
    a = _fit_quietly(_make(name, **extra), P, y)
    b = _fit_quietly(_make(name, **extra), P[:, perm], inv[y])
    np.testing.assert_allclose(b.predict_proba(P[:, perm]), a.predict_proba(P)[:, perm], atol=FIT_TOL)
    assert (a.lambda_, a.mu_) == (b.lambda_, b.mu_)


def test_folds_and_search_rows_do_not_depend_on_the_column_order():
    """Exactly: the hashes ignore the column order, and so do the deal and the quotas."""
    Z, y = _draw(900, 7, seed=16)
    w = np.random.default_rng(17).integers(0, 3, y.size)
    for seed in range(4):
        perm = np.random.default_rng(seed).permutation(7)
        inv = np.argsort(perm)
        np.testing.assert_array_equal(fold_ids(Z[:, perm], inv[y], 5, seed=seed, sample_weight=w),
                                      fold_ids(Z, y, 5, seed=seed, sample_weight=w))
        np.testing.assert_array_equal(search_rows(Z[:, perm], inv[y], w, 200, seed=seed),
                                      search_rows(Z, y, w, 200, seed=seed))
