"""The scaling family (temperature, vector, matrix/ODIR, Dirichlet: :class:`~calibdash.calibrators.multiclass.scaling.
ScalingCalibrator`): what every member keeps, on ordinary and on degenerate input.

On degenerate input every fit ends, in few iterations, and ends right: each case asserts an ITERATION cap (the final
fit's ``n_iter_`` and, for the penalty search, the number of fits and each one's iterations), finite predictions in
rows summing to 1, and a property of the answer. Tolerances: conftest.py (FIT_TOL). A column permutation changes only
the order of the floating-point sums, so the fits agree to that tolerance and the folds (dealt from hashes that ignore
the column order) exactly. Each member's own properties: test_temperature.py, test_vector.py, test_matrix.py,
test_dirichlet.py; the solver: test_linear.py, test_linear_map.py, test_newton.py, test_penalty_search.py.
"""
from __future__ import annotations

import json
import tracemalloc
import warnings

import numpy as np
import pytest
from scipy.special import softmax
from sklearn.exceptions import ConvergenceWarning

from calibdash import calibrators
from calibdash.calibrators.multiclass import linear
from calibdash.calibrators.multiclass.scaling import PenaltyFallbackWarning
from calibdash.core.errors import DataError
from calibdash.io import export as mexport
from tests.calibrators.multiclass.conftest import (FIT_TOL, SCALING, SEARCH, check_ended, draw, fit_quietly, log_loss,
                                                   make)


@pytest.mark.parametrize("name", SCALING)
def test_each_method_lowers_held_out_log_loss_of_an_overconfident_network(lenet, name):
    P, y, Pt, yt = lenet
    cal = make(name).fit(P, y)
    Q = cal.predict_proba(Pt)
    np.testing.assert_allclose(Q.sum(axis=1), 1.0, atol=1e-12)
    raw = log_loss(Pt / Pt.sum(axis=1, keepdims=True), yt)
    assert log_loss(Q, yt) < raw - 0.05               # raw 1.39; each map gains 0.06 to 0.08 here


@pytest.mark.parametrize("name", SCALING)
def test_integer_weights_equal_repeated_rows(small, name):
    """Same objective (the weighted mean equals the mean over the repeated rows), same folds for the
    search (identical rows share a fold; weight-0 rows stay out of the deal): equal to the solver's
    tolerance (module docstring)."""
    Z, y = small
    w = np.random.default_rng(7).integers(0, 4, y.size)
    extra = {"logits": True}
    if name == "dirichlet":
        extra.update(select=True, lambdas=(100.0, 1.0), n_folds=3)
    weighted = make(name, **extra).fit(Z, y, sample_weight=w)
    repeated = make(name, **extra).fit(np.repeat(Z, w, axis=0), np.repeat(y, w))
    if name == "dirichlet":
        assert (weighted.lambda_, weighted.mu_) == (repeated.lambda_, repeated.mu_)
        np.testing.assert_allclose(weighted.cv_losses_, repeated.cv_losses_, rtol=1e-6)
    np.testing.assert_allclose(weighted.predict_proba(Z), repeated.predict_proba(Z), atol=FIT_TOL)


@pytest.mark.parametrize("name", SCALING)
def test_row_order_does_not_matter(small, name):
    """The objective is a sum over rows and the folds are dealt from row values: another order gives the
    same fit to the solver's tolerance (sums round differently, so not bit for bit)."""
    Z, y = small
    order = np.random.default_rng(8).permutation(y.size)
    extra = {"logits": True}
    if name == "matrix":
        extra.update(select=True, lambdas=(100.0, 1.0), n_folds=3)
    a = make(name, **extra).fit(Z, y)
    b = make(name, **extra).fit(Z[order], y[order])
    if name == "matrix":
        assert a.lambda_ == b.lambda_
    np.testing.assert_allclose(a.predict_proba(Z), b.predict_proba(Z), atol=FIT_TOL)


@pytest.mark.parametrize("name", SCALING)
def test_saturated_probabilities_stay_finite(name):
    """Rows with probabilities exactly 1 and 0, some of them wrong (the label's probability exactly 0):
    the log-scores are floored at log(1e-300), the fit converges and every prediction is a finite row
    summing to 1."""
    rng = np.random.default_rng(9)
    n, k = 400, 5
    y = rng.integers(0, k, n)
    P = softmax(rng.normal(0, 1, (n, k)), axis=1)
    hard = rng.random(n) < 0.3
    top = np.where(rng.random(n) < 0.8, y, (y + 1) % k)
    P[hard] = np.eye(k)[top[hard]]
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        cal = make(name).fit(P, y)
    Q = cal.predict_proba(np.vstack([P, np.eye(k)]))
    assert np.all(np.isfinite(Q)) and np.all(Q >= 0)
    np.testing.assert_allclose(Q.sum(axis=1), 1.0, atol=1e-12)
    assert np.isfinite(cal.nll_)


@pytest.mark.parametrize("name", SCALING)
def test_json_state_round_trip_reproduces_predictions_exactly(small, name):
    Z, y = small
    P = softmax(Z, axis=1)
    cal = make(name).fit(P, y)
    again = mexport.loads(mexport.dumps(cal))           # the file's path: n_classes beside the method's state
    np.testing.assert_array_equal(again.predict_proba(P), cal.predict_proba(P))


def test_a_damaged_state_is_refused_naming_the_entry(small):
    Z, y = small
    doc = json.loads(mexport.dumps(make("vector", logits=True).fit(Z, y)))
    doc["state"]["bias"] = doc["state"]["bias"][:-1]
    with pytest.raises(DataError, match="'bias' must hold 4 numbers"):
        mexport.loads(json.dumps(doc))


# -- degenerate input: saturated rows, huge logits, float32, near-uniform --------------------------------
@pytest.mark.parametrize("name", SCALING)
def test_one_hot_rows_mixed_with_soft_rows(name):
    """Soft rows and exact one-hot rows (probabilities 0 and 1, a tenth of them on a wrong class: log-scores
    of -690.8 on the label). The fit converges in few steps and its log-loss is far below the input's
    (the wrong one-hot rows cost the input 690 nats each)."""
    rng = np.random.default_rng(2)
    Z, y = draw(1500, 6, seed=2)
    P = softmax(Z, axis=1)
    hard = rng.random(y.size) < 0.4
    top = np.where(rng.random(y.size) < 0.9, y, (y + 1) % 6)
    P[hard] = np.eye(6)[top[hard]]
    cal = fit_quietly(make(name), P, y)
    Q = check_ended(cal, P, cap=30)
    assert log_loss(Q, y) < log_loss(P, y) - 10.0


@pytest.mark.parametrize("name", ["vector", "matrix", "dirichlet"])
def test_separable_one_hot_rows_end_and_sharpen(name):
    """Every row's top class is its label (one-hot rows and soft ones): the likelihood has no finite optimum
    (sharper is always better), yet the fit ends in few steps, and its log-loss is below the input's."""
    Z, y = draw(1200, 5, seed=3)
    right = Z.argmax(axis=1) == y
    P = softmax(Z[right], axis=1)
    y = y[right]
    P[::3] = np.eye(5)[y[::3]]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)       # an optimum at infinity may not 'converge'
        cal = make(name).fit(P, y)
    Q = check_ended(cal, P)
    assert log_loss(Q, y) < log_loss(P, y)


@pytest.mark.parametrize("name", SCALING)
@pytest.mark.parametrize("size", [1e4, 1e6])
def test_logits_of_any_finite_magnitude(name, size):
    """Logits of 1e4 and 1e6 (the softmax saturated on nearly every row, the scores' rounding 1e-12 and 1e-10
    of the objective): the fit converges in few steps. Temperature scaling keeps the logits' ranking; the
    richer maps contain the temperature map at no penalty (ODIR charges neither the diagonal nor a zero
    intercept), so their log-loss on the fitted rows is at most the temperature map's."""
    Z, y = draw(1000, 5, seed=4)
    cal = fit_quietly(make(name, logits=True), size * Z, y)
    Q = check_ended(cal, size * Z, cap=30)
    if name == "temperature":
        np.testing.assert_array_equal(Q.argmax(axis=1), Z.argmax(axis=1))
    else:
        T = calibrators.get("temperature", "classes", logits=True).fit(size * Z, y).predict_proba(size * Z)
        assert log_loss(Q, y) <= log_loss(T, y) + 1e-9


@pytest.mark.parametrize("name", SCALING)
def test_float32_input_gives_the_float64_fit(name):
    Z, y = draw(800, 5, seed=5)
    P = softmax(Z, axis=1).astype(np.float32)
    a = fit_quietly(make(name), P, y)
    b = fit_quietly(make(name), P.astype(np.float64), y)
    np.testing.assert_allclose(check_ended(a, P), b.predict_proba(P.astype(np.float64)), atol=FIT_TOL)


@pytest.mark.parametrize("name", ["vector", "matrix", "dirichlet"])
def test_near_uniform_probabilities(name):
    """Probabilities within 1e-6 of 1/K and labels drawn at random: the log-scores are nearly collinear
    with the intercepts (the Hessian's condition about 1e11), and the objective is flat to its rounding
    at the optimum. The fit converges in few steps (it used to run to the cap) and stays near uniform."""
    rng = np.random.default_rng(6)
    P = 0.1 + rng.uniform(-1e-6, 1e-6, (3000, 10))
    P /= P.sum(axis=1, keepdims=True)
    y = rng.integers(0, 10, 3000)
    cal = fit_quietly(make(name), P, y)
    Q = check_ended(cal, P, cap=15)
    assert cal.converged_
    assert np.abs(Q - np.bincount(y, minlength=10) / y.size).max() < 0.05


# -- classes the labels never name -------------------------------------------------------------------
@pytest.mark.parametrize("name", ["vector", "matrix", "dirichlet"])
@pytest.mark.parametrize("search", [False, True])
def test_a_class_never_in_the_labels_keeps_the_temperature_map_and_a_probability(name, search):
    """Class 2 has no rows: it is left out of the fit's softmax, its parameters are the fitted temperature's
    map (W_2 = e_2 / T, b_2 = 0) and it keeps a probability above 0 on every row."""
    Z, y = draw(1500, 5, seed=7)
    keep = y != 2
    P, y = softmax(Z[keep], axis=1), y[keep]
    cal = fit_quietly(make(name, **(SEARCH if search and name != "vector" else {})), P, y)
    Q = check_ended(cal, P)
    assert cal.absent_classes_ == (2,)
    assert np.all(Q[:, 2] > 0)
    beta = 1.0 / fit_quietly(calibrators.get("temperature", "classes"), P, y).temperature_
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
    assert log_loss(Q[:, on] / Q[:, on].sum(1, keepdims=True), y - (y > 2)) < \
        log_loss(T[:, on] / T[:, on].sum(1, keepdims=True), y - (y > 2))
    if name == "vector":                    # no penalty holds the intercepts: they keep the start's sum, 0
        assert abs(cal.theta_[k:][on].sum()) < 1e-9


@pytest.mark.parametrize("name", ["matrix", "dirichlet"])
def test_two_of_ten_classes_in_the_labels(name):
    Z, y = draw(2000, 10, seed=8)
    keep = y < 2
    P, y = softmax(Z[keep], axis=1), y[keep]
    cal = fit_quietly(make(name, select=True, n_folds=3), P, y)
    Q = check_ended(cal, P)
    assert cal.absent_classes_ == tuple(range(2, 10))
    assert np.all(Q[:, 2:] > 0)


@pytest.mark.parametrize("name", ["vector", "matrix", "dirichlet"])
def test_labels_of_one_class_are_refused_by_the_per_class_maps(name):
    Z, y = draw(500, 4, seed=9)
    with pytest.raises(DataError, match="at least two classes"):
        make(name).fit(softmax(Z, axis=1), np.full(y.size, 3))


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
    Q = check_ended(cal, P)
    assert (cal.lambda_, cal.mu_) == (7.0, 3.0) and cal.cv_losses_ is None
    assert "5 distinct rows" in cal.penalty_note_
    # the labels' frequencies are what a map of constant rows can learn
    np.testing.assert_allclose(Q[0, :4] / Q[0, :4].sum(), np.bincount(y) / y.size, atol=0.02)


@pytest.mark.parametrize("name", ["matrix", "dirichlet"])
def test_full_maps_beyond_the_limit_are_refused_before_allocating(name):
    k = linear.MAX_FULL_CLASSES + 1
    Z, y = draw(60, k, seed=12)
    tracemalloc.start()
    try:
        with pytest.raises(DataError, match=f"limit of {linear.MAX_FULL_CLASSES} classes.*vector scaling"):
            make(name, logits=True).fit(Z, y)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 20 * 2 ** 20                  # the blocks alone would take k (k + 1)^2 * 8 = 130 MB


# -- column order -----------------------------------------------------------------------------------
@pytest.mark.parametrize("name,extra", [("temperature", {}), ("vector", {}), ("matrix", {}),
                                        ("dirichlet", {}), ("matrix", SEARCH), ("dirichlet", SEARCH),
                                        ("dirichlet", {**SEARCH, "reg": "l2"})])
def test_permuting_the_columns_permutes_the_predictions(name, extra):
    Z, y = draw(600, 6, seed=14)
    P = softmax(Z, axis=1)
    perm = np.random.default_rng(15).permutation(6)
    inv = np.argsort(perm)
    a = fit_quietly(make(name, **extra), P, y)
    b = fit_quietly(make(name, **extra), P[:, perm], inv[y])
    np.testing.assert_allclose(b.predict_proba(P[:, perm]), a.predict_proba(P)[:, perm], atol=FIT_TOL)
    assert (a.lambda_, a.mu_) == (b.lambda_, b.mu_)


@pytest.mark.parametrize("name", SCALING)
def test_coef_and_intercept_are_the_fitted_map(name):
    """``softmax(X coef_^T + intercept_)`` is ``predict_proba`` (X the logits, or Dirichlet's log-probabilities);
    temperature's ``coef_`` is ``I / T`` and vector scaling's is diagonal. The same arithmetic: to rounding."""
    Z, y = draw(400, 3, seed=21)
    P = softmax(Z, axis=1)
    cal = make(name, **({} if name == "dirichlet" else {"logits": True})).fit(P if name == "dirichlet" else Z, y)
    X = np.log(P) if name == "dirichlet" else Z
    np.testing.assert_allclose(softmax(X @ cal.coef_.T + cal.intercept_, axis=1),
                               cal.predict_proba(P if name == "dirichlet" else Z), rtol=0, atol=1e-12)
    assert cal.coef_.shape == (3, 3) and cal.intercept_.shape == (3,)
    if name == "temperature":
        np.testing.assert_allclose(cal.coef_, np.eye(3) / cal.temperature_, rtol=1e-15)
    if name in ("temperature", "vector"):
        assert not np.any(cal.coef_[~np.eye(3, dtype=bool)])
    assert cal.path_ is None                                    # nothing searched


@pytest.mark.parametrize("mus", [None, (1.0, 100.0)])
def test_the_path_holds_the_searched_losses_and_marks_the_chosen_lambda(mus):
    """The search's grid as a table: one loss column (mu = lambda, the authors' default) or one per mu; the chosen
    row is ``lambda_``, where the lowest held-out loss is."""
    Z, y = draw(600, 3, seed=22)
    cal = fit_quietly(make("matrix", logits=True, select=True, lambdas=(100.0, 1.0, 0.01), mus=mus, n_folds=3), Z, y)
    path = cal.path_
    losses = path.drop(columns=["lambda", "chosen"])
    assert list(path["lambda"]) == [0.01, 1.0, 100.0] and losses.shape[1] == (1 if mus is None else 2)
    assert path.loc[path["chosen"], "lambda"].tolist() == [cal.lambda_]
    assert losses.to_numpy().min() == pytest.approx(min(cal.cv_losses_), rel=0, abs=0)
    assert losses[path["chosen"]].to_numpy().min() == losses.to_numpy().min()
