"""The scaling family of multi-class calibrators (temperature, vector, matrix/ODIR, Dirichlet) and their solver.

Tolerances. The solver (calibdash.calibrators.multiclass.linear.fit_linear) stops when the largest entry of the
gradient, in variables scaled by the Hessian diagonal at the start, is below gtol = 1e-9, or when a step
reduces the objective by less than 1e-13 of itself. Near the optimum the objective is quadratic, so two
fits of the same objective that stop there differ in parameters by about gtol times the inverse of the
smallest curvature in those units (about 1 to 1e3 on these data), and their probabilities by less than
that: 1e-6 leaves a margin of 1e3 over 1e-9 * 1e3. That is the tolerance of every comparison of two fits
below ("the solver's tolerance"). Two fits of the *same* rows in another order are not bit-identical: the
sums over rows round differently, and L-BFGS's path follows the rounding.
"""
from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
from scipy.special import log_softmax, softmax
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.calibration import CalibratedClassifierCV
from sklearn.exceptions import ConvergenceWarning
from sklearn.frozen import FrozenEstimator

from calibdash import calibrators
from calibdash.io import export as mexport
from calibdash.calibrators.multiclass.linear import LinearForm, fit_linear, identity_start, objective
from calibdash.calibrators.multiclass.penalty_search import fold_ids, penalty_grid, select_penalty

DATA = "/work/shared/data/multiclass-cifar/{}.npz"
FIT_TOL = 1e-6                                     # the solver's tolerance on probabilities (module docstring)
FIXED = {"matrix": {"select": False, "lam": 10.0, "mu": 10.0},
         "dirichlet": {"select": False, "lam": 10.0, "mu": 10.0}}
METHODS = ["temperature", "vector", "matrix", "dirichlet"]


def _make(name, **extra):
    return calibrators.get(name, "classes", **{**FIXED.get(name, {}), **extra})


def _log_loss(Q, y):
    return float(-np.mean(np.log(Q[np.arange(y.size), y])))


@pytest.fixture(scope="module")
def lenet():
    """lenet-5-cifar-10 (over-confident, accuracy 0.53), split into interleaved halves."""
    d = np.load(DATA.format("lenet-5-cifar-10"))
    P, y = d["predictions"].astype(float), d["ground_truth"]
    return P[0::2], y[0::2], P[1::2], y[1::2]


@pytest.fixture(scope="module")
def small():
    """300 rows of 4 classes with logits, labels from a distorted softmax (so every map moves)."""
    rng = np.random.default_rng(3)
    Z = rng.normal(0, 2, (300, 4))
    truth = softmax(0.6 * Z + np.array([0.3, -0.2, 0.0, 0.4]) + 0.3 * Z[:, ::-1], axis=1)
    y = (rng.random(300)[:, None] > np.cumsum(truth, axis=1)).sum(axis=1)
    return Z, y


# -- temperature scaling against scikit-learn 1.9 ----------------------------------------------------------
class _Given(ClassifierMixin, BaseEstimator):
    """A fitted 'classifier' whose predict_proba returns its input: the probabilities of the file."""

    def fit(self, X, y):
        self.classes_ = np.unique(y)
        return self

    def predict_proba(self, X):
        return np.asarray(X, dtype=float)

    def predict(self, X):
        return self.classes_[np.argmax(np.asarray(X), axis=1)]


class _GivenLogits(_Given):
    """The same with a decision_function, which scikit-learn's temperature scaling prefers (used as logits)."""

    def decision_function(self, X):
        return np.asarray(X, dtype=float)


@pytest.mark.parametrize("as_logits", [False, True])
def test_temperature_matches_scikit_learn_on_held_out_log_loss(lenet, as_logits):
    """scikit-learn 1.9's CalibratedClassifierCV(FrozenEstimator(est), method="temperature") fits one inverse
    temperature on the log of predict_proba (log(p + 1e-12)) or on decision_function when there is one;
    both paths are fed the same rows. Its minimize_scalar stops at xatol = 64 eps on log beta and ours at
    the gradient rule, both far inside 2e-4 of held-out log-loss (the requirement); the remaining
    difference on probabilities is sklearn's +1e-12 in the log, which moves log-probabilities of about
    1e-8 (the smallest in this file) by 1e-4 relative, a tiny share of the loss."""
    P, y, Pt, yt = lenet
    X, Xt = (np.log(P), np.log(Pt)) if as_logits else (P, Pt)
    est = (_GivenLogits() if as_logits else _Given()).fit(X, y)
    ref = CalibratedClassifierCV(FrozenEstimator(est), method="temperature").fit(X, y)
    ours = calibrators.get("temperature", "classes", logits=as_logits).fit(X, y)
    assert ours.converged_
    ll_ref, ll_ours = _log_loss(ref.predict_proba(Xt), yt), _log_loss(ours.predict_proba(Xt), yt)
    assert abs(ll_ours - ll_ref) < 2e-4
    beta_ref = float(ref.calibrated_classifiers_[0].calibrators[0].beta_)
    assert 1.0 / ours.temperature_ == pytest.approx(beta_ref, rel=1e-3)
    assert ours.temperature_ > 1.0                                # lenet is over-confident


# -- every method improves an over-confident network ----------------------------------------------------
@pytest.mark.parametrize("name", METHODS)
def test_each_method_lowers_held_out_log_loss_of_an_overconfident_network(lenet, name):
    P, y, Pt, yt = lenet
    cal = _make(name).fit(P, y)
    Q = cal.predict_proba(Pt)
    np.testing.assert_allclose(Q.sum(axis=1), 1.0, atol=1e-12)
    raw = _log_loss(Pt / Pt.sum(axis=1, keepdims=True), yt)
    assert _log_loss(Q, yt) < raw - 0.05               # raw 1.39; each map gains 0.06 to 0.08 here


def test_cross_validated_choice_is_the_grid_point_with_the_lowest_held_out_loss(lenet):
    P, y, _, _ = lenet
    cal = calibrators.get("dirichlet", "classes", lambdas=(1e4, 10.0, 1e-2), n_folds=3).fit(P[:1500], y[:1500])
    losses = np.asarray(cal.cv_losses_)
    assert cal.cv_grid_ == [(1e4, 1e4), (10.0, 10.0), (1e-2, 1e-2)]
    assert (cal.lambda_, cal.mu_) == cal.cv_grid_[int(np.argmin(losses))]
    # a strength fixed by hand is used as given, with no search
    fixed = calibrators.get("dirichlet", "classes", select=False, lam=cal.lambda_, mu=cal.mu_).fit(P[:1500], y[:1500])
    assert fixed.cv_losses_ is None
    np.testing.assert_allclose(fixed.predict_proba(P[:50]), cal.predict_proba(P[:50]), atol=FIT_TOL)


def test_penalty_grid_orders_strongest_first_and_ties_mu_when_not_given():
    assert penalty_grid("odir", [1.0, 100.0], None) == [(100.0, 100.0), (1.0, 1.0)]
    assert penalty_grid("odir", [1.0], [0.5, 2.0]) == [(1.0, 2.0), (1.0, 0.5)]
    assert penalty_grid("l2", [3.0, 30.0], [1.0]) == [(30.0, 0.0), (3.0, 0.0)]


def test_folds_are_stratified_and_depend_on_row_values_not_positions(small):
    Z, y = small
    f = fold_ids(Z, y, 5, seed=0)
    counts = np.array([[np.sum((f == k) & (y == c)) for k in range(5)] for c in range(4)])
    assert np.all(counts.max(axis=1) - counts.min(axis=1) <= 1)           # dealt in turn within each class
    assert np.all(np.abs(np.bincount(f) - y.size / 5) <= 1)               # the deal runs on across classes
    order = np.random.default_rng(1).permutation(y.size)
    np.testing.assert_array_equal(fold_ids(Z[order], y[order], 5, seed=0), f[order])
    assert not np.array_equal(fold_ids(Z, y, 5, seed=1), f)               # the seed keys the hash


# -- the solver --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("form", [LinearForm("scalar", False), LinearForm("diagonal", True),
                                  LinearForm("full", True, "odir"), LinearForm("full", True, "l2"),
                                  LinearForm("diagonal", True, "odir")])
@pytest.mark.parametrize("weighted", [False, True])
def test_gradient_matches_central_differences(small, form, weighted):
    """Central differences with h = 1e-5: truncation error h^2 f''' / 6 ~ 1e-11 and rounding eps f / h
    ~ 1e-11 on an objective of size ~1, so 1e-8 absolute is far above both and far below any real error."""
    Z, y = small
    k = Z.shape[1]
    w = np.random.default_rng(5).uniform(0, 3, y.size) if weighted else None
    theta = identity_start(form, k) + np.random.default_rng(6).normal(0, 0.3, identity_start(form, k).size)
    _, _, grad = objective(theta, Z, y, w, form, lam=2.0, mu=0.7)
    h = 1e-5
    numeric = np.array([(objective(theta + h * e, Z, y, w, form, 2.0, 0.7)[0]
                         - objective(theta - h * e, Z, y, w, form, 2.0, 0.7)[0]) / (2 * h)
                        for e in np.eye(theta.size)])
    np.testing.assert_allclose(grad, numeric, atol=1e-8)


def test_calibrated_scores_give_the_identity_temperature():
    """Labels drawn from the given probabilities: the true map is T = 1. The maximum-likelihood beta = 1/T
    has standard error 1/sqrt(n I), I the Fisher information per row (the mean variance of the logits
    under the model), so |beta - 1| < 4 standard errors (a 6e-5 chance of failing for the seed's luck,
    fixed here by the seed)."""
    rng = np.random.default_rng(11)
    n, k = 40_000, 6
    Z = rng.normal(0, 2.0, (n, k))
    P = softmax(Z, axis=1)
    y = (rng.random(n)[:, None] > np.cumsum(P, axis=1)).sum(axis=1)
    cal = calibrators.get("temperature", "classes", logits=True).fit(Z, y)
    info = float(np.mean(np.sum(P * Z * Z, axis=1) - np.sum(P * Z, axis=1) ** 2))
    se = 1.0 / np.sqrt(n * info)
    assert abs(1.0 / cal.temperature_ - 1.0) < 4 * se
    assert cal.converged_


def test_a_solver_that_stops_short_warns_instead_of_returning_the_start_silently(lenet):
    P, y, _, _ = lenet
    X = np.log(P)
    with pytest.warns(ConvergenceWarning, match="did not converge"):
        fit = fit_linear(X, y, None, LinearForm("full", True, "odir"), 1.0, 1.0, max_iter=2)
    assert not fit.converged


# -- invariants ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", METHODS)
def test_integer_weights_equal_repeated_rows(small, name):
    """Same objective (the weighted mean equals the mean over the repeated rows), same folds for the
    search (identical rows share a fold; weight-0 rows stay out of the deal): equal to the solver's
    tolerance (module docstring)."""
    Z, y = small
    w = np.random.default_rng(7).integers(0, 4, y.size)
    extra = {"logits": True}
    if name == "dirichlet":
        extra.update(select=True, lambdas=(100.0, 1.0), n_folds=3)
    weighted = _make(name, **extra).fit(Z, y, sample_weight=w)
    repeated = _make(name, **extra).fit(np.repeat(Z, w, axis=0), np.repeat(y, w))
    if name == "dirichlet":
        assert (weighted.lambda_, weighted.mu_) == (repeated.lambda_, repeated.mu_)
        np.testing.assert_allclose(weighted.cv_losses_, repeated.cv_losses_, rtol=1e-6)
    np.testing.assert_allclose(weighted.predict_proba(Z), repeated.predict_proba(Z), atol=FIT_TOL)


@pytest.mark.parametrize("name", METHODS)
def test_row_order_does_not_matter(small, name):
    """The objective is a sum over rows and the folds are dealt from row values: another order gives the
    same fit to the solver's tolerance (sums round differently, so not bit for bit)."""
    Z, y = small
    order = np.random.default_rng(8).permutation(y.size)
    extra = {"logits": True}
    if name == "matrix":
        extra.update(select=True, lambdas=(100.0, 1.0), n_folds=3)
    a = _make(name, **extra).fit(Z, y)
    b = _make(name, **extra).fit(Z[order], y[order])
    if name == "matrix":
        assert a.lambda_ == b.lambda_
    np.testing.assert_allclose(a.predict_proba(Z), b.predict_proba(Z), atol=FIT_TOL)


def test_logits_and_their_probabilities_give_the_same_temperature_map(small):
    """log(softmax(z)) = z - logsumexp(z): a constant per row, which softmax(beta x) ignores; the two
    objectives are equal up to rounding, so the fits agree to the solver's tolerance."""
    Z, y = small
    P = softmax(Z, axis=1)
    a = calibrators.get("temperature", "classes", logits=True).fit(Z, y)
    b = calibrators.get("temperature", "classes").fit(P, y)
    assert a.temperature_ == pytest.approx(b.temperature_, rel=1e-7)
    np.testing.assert_allclose(a.predict_proba(Z), b.predict_proba(P), atol=FIT_TOL)


def test_dirichlet_is_the_same_map_for_logits_and_their_probabilities(small):
    """Dirichlet works on log-probabilities, which logits and their softmax give alike (to rounding)."""
    Z, y = small
    a = _make("dirichlet", logits=True).fit(Z, y)
    b = _make("dirichlet").fit(softmax(Z, axis=1), y)
    np.testing.assert_allclose(a.predict_proba(Z), b.predict_proba(softmax(Z, axis=1)), atol=FIT_TOL)


@pytest.mark.parametrize("name", METHODS)
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
        cal = _make(name).fit(P, y)
    Q = cal.predict_proba(np.vstack([P, np.eye(k)]))
    assert np.all(np.isfinite(Q)) and np.all(Q >= 0)
    np.testing.assert_allclose(Q.sum(axis=1), 1.0, atol=1e-12)
    assert np.isfinite(cal.nll_)


# -- the JSON state ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", METHODS)
def test_json_state_round_trip_reproduces_predictions_exactly(small, name):
    Z, y = small
    P = softmax(Z, axis=1)
    cal = _make(name).fit(P, y)
    again = mexport.loads(mexport.dumps(cal))           # the file's path: n_classes beside the method's state
    np.testing.assert_array_equal(again.predict_proba(P), cal.predict_proba(P))


def test_a_damaged_state_is_refused_naming_the_entry(small):
    from calibdash.core.errors import DataError

    Z, y = small
    doc = json.loads(mexport.dumps(_make("vector", logits=True).fit(Z, y)))
    doc["state"]["bias"] = doc["state"]["bias"][:-1]
    with pytest.raises(DataError, match="'bias' must hold 4 numbers"):
        mexport.loads(json.dumps(doc))


def test_select_penalty_refuses_fewer_distinct_rows_than_folds():
    from calibdash.core.errors import DataError

    X = np.log(np.full((6, 3), 1 / 3))
    y = np.array([0, 1, 2, 0, 1, 2])
    with pytest.raises(DataError, match="at least 5 distinct rows"):
        select_penalty(X, y, None, LinearForm("full", True, "odir"), [(1.0, 1.0)], n_folds=5)


# -- the penalty search's row cap ------------------------------------------------------------------------
def test_search_rows_are_chosen_by_value_stratified_and_count_a_weighted_row_once(small):
    """The cap counts distinct rows: a row of weight 3 and its three copies are taken or left together;
    another order takes the same rows; each class gets its share of the cap to one row (Hamilton)."""
    from calibdash.calibrators.multiclass.penalty_search import search_rows
    Z, y = small
    w = np.random.default_rng(7).integers(0, 4, y.size)
    keep = search_rows(Z, y, w, 100, seed=0)
    live = w > 0
    assert keep.sum() == 100 and not np.any(keep & ~live)
    share = 100 * np.bincount(y[live], minlength=4) / live.sum()
    assert np.all(np.abs(np.bincount(y[keep], minlength=4) - share) < 1)
    rep = np.repeat(np.arange(y.size), w)
    np.testing.assert_array_equal(search_rows(Z[rep], y[rep], None, 100, seed=0), keep[rep])
    order = np.random.default_rng(1).permutation(y.size)
    np.testing.assert_array_equal(search_rows(Z[order], y[order], w[order], 100, seed=0), keep[order])
    assert search_rows(Z, y, w, 10_000, seed=0).sum() == live.sum()       # under the cap: every live row


def test_capped_search_is_the_search_on_the_chosen_rows_and_keeps_the_invariants(small):
    """select_penalty with max_rows is the uncapped search on search_rows' rows (the same folds, the same
    fits: equal losses to rounding); weights equal repeated rows under the cap as without it (the
    losses to the solver's tolerance, rtol 1e-6 as in the weighted test above)."""
    from calibdash.calibrators.multiclass.penalty_search import search_rows
    Z, y = small
    form, grid = LinearForm("full", True, "odir"), [(100.0, 100.0), (1.0, 1.0)]
    keep = search_rows(Z, y, None, 120, seed=0)
    capped = select_penalty(Z, y, None, form, grid, n_folds=3, max_rows=120)
    direct = select_penalty(Z[keep], y[keep], None, form, grid, n_folds=3, max_rows=None)
    assert capped[:2] == direct[:2]
    np.testing.assert_allclose(capped[2], direct[2], rtol=1e-12)
    w = np.random.default_rng(7).integers(0, 4, y.size)
    weighted = select_penalty(Z, y, w, form, grid, n_folds=3, max_rows=120)
    repeated = select_penalty(np.repeat(Z, w, axis=0), np.repeat(y, w), None, form, grid, n_folds=3,
                              max_rows=120)
    assert weighted[:2] == repeated[:2]
    np.testing.assert_allclose(weighted[2], repeated[2], rtol=1e-6)
