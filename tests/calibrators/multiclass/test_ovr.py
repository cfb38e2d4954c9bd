"""One-vs-rest calibration (Zadrozny & Elkan 2002), and what every composite (``ovr:``, ``top_label:``) shares
through :class:`~calibdash.calibrators.multiclass.methods.ovr.BinaryComposite`: scikit-learn's one-vs-rest maps, K = 2
against the binary method, ties and exact zeros, the binary method's numbers, labels and settings.

scikit-learn (``CalibratedClassifierCV(FrozenEstimator(est), method=...)``) fits one binary map per class on
the estimator's ``decision_function`` if it has one, else on its ``predict_proba``, and divides each row by
its sum (all-zero rows: uniform), as ``ovr`` does:

* ``method="isotonic"``: ``IsotonicRegression(out_of_bounds="clip")``, linear interpolation between the
  fitted points, on the probabilities: calibdash's ``isotonic`` with ``interpolation="linear"``. (The
  default ``"step"`` holds each block's value up to halfway to the next block: a different map.)
* ``method="sigmoid"``: ``_sigmoid_calibration`` fits ``1 / (1 + exp(A F + B))`` with Platt's smoothed
  targets ``(N+ + 1)/(N+ + 2)`` and ``1/(N- + 2)``, ``F`` the estimator's output *as given*. With only
  ``predict_proba``, ``F`` is the probability itself, a logistic function of ``p``, which no calibdash
  binary method fits (``platt`` is logistic in ``logit(p)``, ``beta`` in ``ln p`` and ``ln(1 - p)``).
  With a ``decision_function`` giving ``logit(p_k)`` (the one-vs-rest margins, clipped at 1e-12 as
  :data:`calibdash.calibrators.platt.EPS` clips), it is calibdash's ``platt`` with
  ``smooth_targets=True``, with ``A = -a`` and ``B = -b``; that is the case tested.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.special import expit, softmax
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.calibration import CalibratedClassifierCV
from sklearn.frozen import FrozenEstimator

from calibdash import calibrators
from calibdash.calibrators.multiclass.methods.ovr import ZeroProbabilityWarning
from calibdash.calibrators.platt import EPS, logit
from calibdash.calibrators.state import state_of
from calibdash.core.errors import SettingsError
from calibdash.io import export
from tests.calibrators.multiclass.conftest import (BINARY, TOP_LABEL, check_fit, fit, rounded_table, soft,
                                                   two_classes)


class ProbabilityTable(ClassifierMixin, BaseEstimator):
    """A fitted 'classifier' whose input is its own K-column probability table (only ``predict_proba``)."""

    def fit(self, X, y):
        self.classes_ = np.arange(np.shape(X)[1])
        return self

    def predict_proba(self, X):
        return np.asarray(X, dtype=float)

    def predict(self, X):
        return np.argmax(X, axis=1)


class MarginTable(ProbabilityTable):
    """The same, with ``decision_function`` = the one-vs-rest margins ``logit(p_k)`` (scikit-learn prefers it)."""

    def decision_function(self, X):
        return logit(np.asarray(X, dtype=float))


def table(n=600, k=4, seed=0):
    rng = np.random.default_rng(seed)
    Z = rng.normal(size=(n, k)) * 1.3
    P = np.exp(Z) / np.exp(Z).sum(axis=1, keepdims=True)
    truth = np.exp(0.6 * Z) / np.exp(0.6 * Z).sum(axis=1, keepdims=True)      # over-confident scores
    y = (rng.random(n)[:, None] > np.cumsum(truth, axis=1)).sum(axis=1)
    return P, y


def sklearn_fit(estimator, method, P, y, w=None):
    return CalibratedClassifierCV(FrozenEstimator(estimator.fit(P, y)), method=method).fit(P, y, sample_weight=w)


@pytest.mark.filterwarnings("ignore:Since FrozenEstimator does not appear to accept sample_weight")
def test_ovr_linear_isotonic_is_sklearns_isotonic():
    """With weights: scikit-learn warns that the frozen estimator ignores them; its calibrators use them."""
    P, y = table()
    Pt, _ = table(n=300, seed=1)
    w = np.random.default_rng(2).integers(1, 4, y.size).astype(float)
    ours = calibrators.get("ovr:isotonic", "classes", interpolation="linear").fit(P, y, sample_weight=w)
    theirs = sklearn_fit(ProbabilityTable(), "isotonic", P, y, w)
    # Both are PAV on the same weighted points with the same knots (each block's first and last
    # score) and the same interpolation and row normalisation: equal up to rounding (seen: 1e-16).
    np.testing.assert_allclose(ours.predict_proba(Pt), theirs.predict_proba(Pt), rtol=0, atol=1e-6)
    np.testing.assert_allclose(ours.predict_proba(Pt), theirs.predict_proba(Pt), rtol=0, atol=1e-13)


def test_ovr_platt_with_smoothed_targets_is_sklearns_sigmoid_on_the_margins():
    P, y = table()
    Pt, _ = table(n=300, seed=1)
    ours = calibrators.get("ovr:platt", "classes", smooth_targets=True).fit(P, y)
    theirs = sklearn_fit(MarginTable(), "sigmoid", P, y)
    # scikit-learn stops L-BFGS at a projected gradient of 1e-6 (gtol); ours iterates to the
    # floating-point limit. Its (A, B) is then off the optimum by about H^-1 g; the map moves by at
    # most 1/4 |z dA + dB| (the logistic's slope is at most 1/4). That bound, computed at its
    # solution for each class, is what 1e-6 must exceed.
    z = logit(P)
    zt = logit(Pt)
    for k, (mine, sk) in enumerate(zip(ours.models_, theirs.calibrated_classifiers_[0].calibrators)):
        t = np.where(y == k, (np.sum(y == k) + 1.0) / (np.sum(y == k) + 2.0), 1.0 / (np.sum(y != k) + 2.0))
        X = np.column_stack([z[:, k], np.ones(y.size)])
        q = expit(X @ np.array([-sk.a_, -sk.b_]))
        step = np.linalg.solve((X * (q * (1 - q))[:, None]).T @ X, X.T @ (q - t))
        bound = 0.25 * np.max(np.abs(np.column_stack([zt[:, k], np.ones(len(zt))]) @ step))
        assert bound < 1e-6
        np.testing.assert_allclose(mine.a_, -sk.a_, rtol=1e-4)
        np.testing.assert_allclose(mine.predict(Pt[:, k]), sk.predict(zt[:, k]), rtol=0, atol=2 * bound + 1e-12)
    np.testing.assert_allclose(ours.predict_proba(Pt), theirs.predict_proba(Pt), rtol=0, atol=1e-6)
    assert EPS == 1e-12          # the clip MarginTable's logit applies is the one ovr:platt applies


def test_all_zero_row_becomes_uniform():
    """Each class's isotonic map is 0 below its positives' score 0.9 (its negatives sit at 0.05): the
    uniform row gets 0 from every class and becomes uniform, as in scikit-learn."""
    P = np.tile([[0.9, 0.05, 0.05], [0.05, 0.9, 0.05], [0.05, 0.05, 0.9]], (5, 1))
    y = np.tile([0, 1, 2], 5)                     # scikit-learn's check asks 5 rows a class (its cv's folds)
    cal = calibrators.get("ovr:isotonic", "classes").fit(P, y)
    raw = np.column_stack([m.predict(np.full(1, 1 / 3)) for m in cal.models_])
    assert np.all(raw == 0.0)
    np.testing.assert_array_equal(cal.predict_proba([[1 / 3, 1 / 3, 1 / 3]]), [[1 / 3, 1 / 3, 1 / 3]])
    theirs = sklearn_fit(ProbabilityTable(), "isotonic", P, y)
    np.testing.assert_array_equal(theirs.predict_proba([[1 / 3, 1 / 3, 1 / 3]]), [[1 / 3, 1 / 3, 1 / 3]])


def test_ovr_absent_class_gets_zero_and_an_every_row_class_gets_everything():
    P, y = table(n=200, k=3)
    y = np.where(y == 2, 0, y)                                          # class 2 never occurs
    cal = calibrators.get("ovr:platt", "classes").fit(P, y)
    assert cal.models_[2] == 0.0
    Q = cal.predict_proba(P)
    assert np.all(Q[:, 2] == 0.0)
    np.testing.assert_allclose(Q.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    w = (y == 1).astype(float)                                          # by weight: only class 1 counts
    only = calibrators.get("ovr:isotonic", "classes").fit(P, y, sample_weight=w)
    assert only.models_ == [0.0, 1.0, 0.0]
    np.testing.assert_array_equal(only.predict_proba(P[:5]), np.tile([0.0, 1.0, 0.0], (5, 1)))
    back = export.loads(export.dumps(only))
    assert back.models_ == [0.0, 1.0, 0.0]


def test_ovr_bbq_on_logits_1e4_as_reported():
    """The report: one-vs-rest BBQ on 1,000 rows of logits of magnitude 1e4 gave NaN rows (BBQ's bin of no
    width at 1.0, tests/calibrators/test_odd_input.py). Labels the logits' argmax: classes separated by the scores."""
    Z = np.random.default_rng(0).normal(size=(1000, 5)) * 1e4
    cal = fit("ovr:bbq", Z, Z.argmax(axis=1), logits=True)
    check_fit(cal, Z, logits=True)


#: BBQ's paper variant moves each equal-count boundary to the nearest change of score, the lower one when
#: two are as near: mirrored, that is the upper one, so the binnings of ``p`` and ``1 - p`` differ (here
#: by 1e-4 in the map).
ASYMMETRIC = {"bbq"}


@pytest.mark.parametrize("binary", BINARY)
def test_k2_ovr_is_the_binary_method_on_each_column_normalised(binary):
    """One-vs-rest at K = 2 is, by definition, ``q1 / (q0 + q1)`` with ``q1 = X`` fitted on ``(p, y)`` at
    ``p`` and ``q0 = X`` fitted on ``(1 - p, 1 - y)`` at ``1 - p``: exactly (the same numbers reach the
    binary fits: the columns as given). A binary method symmetric under ``(s, y) -> (1 - s, 1 - y)``
    (``q0 = 1 - q1`` but for rounding: equal-width edges mirror, PAV, the logistic fits' logit changes
    sign, symmetric priors) makes one-vs-rest at K = 2 ``X(p)`` to rounding (seen: 8e-15); every one here
    is, on these scores, but BBQ (:data:`ASYMMETRIC`)."""
    p, y, P = two_classes()
    grid = np.unique(np.r_[p, np.random.default_rng(15).random(100)])
    G = np.column_stack([1 - grid, grid])
    Q = fit(f"ovr:{binary}", P, y).predict_proba(G)
    q1 = calibrators.get(binary).fit(p, y).predict(grid)
    q0 = calibrators.get(binary).fit(1 - p, 1 - y).predict(1 - grid)
    np.testing.assert_array_equal(Q[:, 1], q1 / (q0 + q1))
    if binary not in ASYMMETRIC:
        np.testing.assert_allclose(Q[:, 1], q1, rtol=0, atol=1e-12)


def test_rounded_rows_keep_their_ties():
    """Rows rounded to 2 decimals sum to 0.99-1.01; dividing each by its sum would split scores that are
    equal as given (0.35 in two rows becoming 0.3465 and 0.3535), and isotonic regression would no longer
    pool them. The binary maps see the numbers as given: the K-class fit on the rounded table equals the
    binary fits on its columns (test_top_label.py: the same for the top scores)."""
    R, y = rounded_table()
    cal = fit("ovr:isotonic", R, y)
    for k in range(3):
        binary = calibrators.get("isotonic").fit(R[:, k], (y == k).astype(int))
        np.testing.assert_array_equal(cal.models_[k].predict(R[:, k]), binary.predict(R[:, k]))
    check_fit(cal, R)


def test_exact_zeros_are_said_and_kept_in_the_model_file():
    """Few rows of a class: isotonic one-vs-rest is 0 below the class's lowest positive rows. It does not floor
    (scikit-learn's one-vs-rest map); it warns and keeps the sentence in ``notes_`` and in the model file
    (test_top_label.py: top-label's). Platt scaling has no exact zeros."""
    P, y = soft(200, 5, seed=18)
    with pytest.warns(ZeroProbabilityWarning, match="get probability 0 from their binary map"):
        ovr = calibrators.get("ovr:isotonic", "classes").fit(P, y)
    assert any("does not floor" in note for note in ovr.notes_)
    assert export.loads(export.dumps(ovr)).notes_ == ovr.notes_
    zero = [k for k, m in enumerate(ovr.models_) if np.any(m.predict(P[:, k]) == 0)]
    assert zero and np.any(ovr.predict_proba(P)[:, zero] == 0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ZeroProbabilityWarning)
        assert calibrators.get("ovr:platt", "classes").fit(P, y).notes_ == []


# -- what every composite shares (BinaryComposite) ---------------------------------------------------------
@pytest.mark.parametrize("name", [f"ovr:{b}" for b in BINARY] + [f"top_label:{b}" for b in TOP_LABEL])
def test_logits_and_their_softmax_are_the_same_numbers_to_the_binary_methods(name):
    """Fitted on logits Z and on P = softmax(Z) given as probabilities, the binary fits see the same numbers
    (the softmax's; P not divided again by its rows' sums, which moved them by ulps): the same binary
    states, bit for bit, and one-vs-rest's rows equal."""
    rng = np.random.default_rng(17)
    Z = rng.normal(size=(150, 4)) * 2.0
    y = (rng.random(150)[:, None] > np.cumsum(softmax(1.5 * Z, axis=1), axis=1)).sum(axis=1).clip(0, 3)
    P = softmax(Z, axis=1)
    on_logits, on_probs = fit(name, Z, y, logits=True), fit(name, P, y)
    subs = lambda cal: [m if m is None or isinstance(m, float) else state_of(m)
                        for m in [*cal.models_, getattr(cal, "pooled_", None)]]
    assert subs(on_logits) == subs(on_probs)
    if name.startswith("ovr:"):
        np.testing.assert_array_equal(on_logits.predict_proba(Z), on_probs.predict_proba(P))


def test_composites_describe_themselves_from_their_binary_method():
    iso = calibrators.get_class("isotonic")
    ovr = calibrators.get("ovr:isotonic", "classes")
    top = calibrators.get("top_label:bbq", "classes")
    assert ovr.label == "One-vs-rest isotonic regression" and top.label == "Top-label BBQ"
    assert ovr.hyperparams == tuple(iso.hyperparams)
    bbq = calibrators.get_class("bbq")
    assert [h.name for h in top.hyperparams] == [h.name for h in bbq.hyperparams] + ["min_rows"]
    assert ovr.color == iso.color and top.color != calibrators.get_class("bbq").color
    orders = [calibrators.get(n, "classes").order for n in calibrators.available("classes") if ":" in n]
    assert orders == sorted(orders) and min(orders) >= 1000
    classes = calibrators.classes("classes")
    assert classes["ovr"].order < classes["top_label"].order
    assert calibrators.get("ovr:isotonic", "classes", interpolation="linear").spec() == (
        "ovr:isotonic", {"interpolation": "linear", "logits": False})


def test_bad_composite_settings_are_refused():
    """The binary method's own checks hold inside a composite (test_top_label.py: top-label's min_rows)."""
    P, y = table(n=60)
    with pytest.raises(SettingsError, match=r"has no hyperparameter \['n_bins'\]"):
        calibrators.get("top_label:isotonic", "classes", n_bins=3)
    with pytest.raises(SettingsError, match="interpolation"):
        calibrators.get("ovr:isotonic", "classes", interpolation="cubic").fit(P, y)
