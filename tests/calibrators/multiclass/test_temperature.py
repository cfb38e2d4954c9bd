"""Temperature scaling (Guo et al. 2017): scikit-learn's fit, the identity temperature on calibrated scores, a fitted
temperature by hand, logits and their probabilities, K = 2 against the binary method, labels of one class."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.special import softmax
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.calibration import CalibratedClassifierCV
from sklearn.frozen import FrozenEstimator

from calibdash import calibrators
from tests.calibrators.multiclass.conftest import FIT_TOL, check_ended, draw, log_loss, two_classes
from tests.calibrators.multiclass.conftest import fit as capped_fit


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
    ll_ref, ll_ours = log_loss(ref.predict_proba(Xt), yt), log_loss(ours.predict_proba(Xt), yt)
    assert abs(ll_ours - ll_ref) < 2e-4
    beta_ref = float(ref.calibrated_classifiers_[0].calibrators[0].beta_)
    assert 1.0 / ours.temperature_ == pytest.approx(beta_ref, rel=1e-3)
    assert ours.temperature_ > 1.0                                # lenet is over-confident


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


def test_logits_and_their_probabilities_give_the_same_temperature_map(small):
    """log(softmax(z)) = z - logsumexp(z): a constant per row, which softmax(beta x) ignores; the two
    objectives are equal up to rounding, so the fits agree to the solver's tolerance."""
    Z, y = small
    P = softmax(Z, axis=1)
    a = calibrators.get("temperature", "classes", logits=True).fit(Z, y)
    b = calibrators.get("temperature", "classes").fit(P, y)
    assert a.temperature_ == pytest.approx(b.temperature_, rel=1e-7)
    np.testing.assert_allclose(a.predict_proba(Z), b.predict_proba(P), atol=FIT_TOL)


def test_k2_temperature_is_the_binary_temperature():
    """Both fit ``sigmoid(logit(p) / T)`` by maximum likelihood: the K-class form's ``softmax(log P / T)`` at
    K = 2 is ``sigmoid((log p - log(1 - p)) / T)``. They differ only (a) in the logit's clip (binary:
    ``p`` clipped to ``[1e-12, 1 - 1e-12]``; K-class: each probability floored at 1e-300 before its log),
    (b) in the range of ``T`` (binary ``[1e-3, 1e3]``; K-class ``1 / T`` in ``[e^-10, e^10]``) and (c) in
    the stopping rules (binary: the floating-point limit; K-class: a gradient of the mean NLL in ``1 / T``
    below 1e-9, so ``1 / T`` within 1e-9 / (mean NLL's curvature, here above 0.05) = 2e-8 of the optimum). On
    scores inside the clip with an optimum inside both ranges, the fitted temperatures agree to that (1e-6
    relative is the margin) and the maps to the same order."""
    p, y, P = two_classes()
    k_class = capped_fit("temperature", P, y)
    binary = calibrators.get("temperature").fit(p, y)
    assert 1e-3 < binary.temperature_ < 1e3
    assert k_class.temperature_ == pytest.approx(binary.temperature_, rel=1e-6)
    grid = np.linspace(0.01, 0.99, 99)
    np.testing.assert_allclose(k_class.predict_proba(np.column_stack([1 - grid, grid]))[:, 1],
                               binary.predict(grid), rtol=0, atol=1e-7)


def test_temperature_fits_labels_of_one_class_and_ends():
    """Class 3 is the label of every row: the likelihood grows as T falls where class 3 leads and rises where
    it does not; the fit ends within the cap (at a bound or an inner optimum), with finite rows."""
    Z, y = draw(500, 4, seed=9)
    cal = calibrators.get("temperature", "classes", logits=True).fit(Z, np.full(y.size, 3))
    check_ended(cal, Z)


def test_the_fitted_temperature_makes_the_top_probability_the_accuracy_by_hand():
    """Logits one-hot (``x = e_k``), four rows of each ``k``: two labelled ``k``, one each other class. The map
    gives the top class ``e^beta / (e^beta + 2)`` (``beta = 1 / T``), and the mean NLL's derivative in ``beta``,
    the mean of ``sum_k q_k x_k - x_label``, is ``q_top - 1/2``: zero when the top probability is the accuracy, 1/2.
    So ``beta = ln 2``, ``T = 1 / ln 2`` and each row ``[1/2, 1/4, 1/4]`` (rolled). Tolerance from the stopping
    rule: a converged fit's Newton decrement ``g^2 / (2 L'')`` is at most ``10 ftol L`` (ftol 1e-13, ``L = 1.5 ln 2``
    at the optimum) plus rounding, and ``L'' = q_top (1 - q_top) = 1/4``, so ``|g| < 7.3e-7`` and ``|beta - ln 2| =
    |g| / L'' < 2.9e-6`` (4e-6 asserted); the probabilities move by a quarter of that, under 1e-6. Given as logits or
    as their probabilities (log-scores shifted by one constant per row): the same."""
    Z = np.repeat(np.eye(3), 4, axis=0)
    y = np.array([0, 0, 1, 2, 1, 1, 2, 0, 2, 2, 0, 1])
    want = np.array([[0.5, 0.25, 0.25], [0.25, 0.5, 0.25], [0.25, 0.25, 0.5]])
    for logits, X in ((True, Z), (False, softmax(Z, axis=1))):
        cal = calibrators.get("temperature", "classes", logits=logits).fit(X, y)
        assert cal.converged_
        assert abs(1.0 / cal.temperature_ - np.log(2.0)) < 4e-6
        np.testing.assert_allclose(cal.predict_proba(X[::4]), want, rtol=0, atol=1e-6)
