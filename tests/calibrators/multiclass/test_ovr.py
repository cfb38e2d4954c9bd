"""One-vs-rest and top-label calibration: scikit-learn's one-vs-rest maps, hand-worked top-label rows, the edges.

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

import numpy as np
import pytest
from scipy.special import expit
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.calibration import CalibratedClassifierCV
from sklearn.frozen import FrozenEstimator

from calibdash import calibrators
from calibdash.calibrators.platt import EPS, logit
from calibdash.core.errors import SettingsError
from calibdash.io import export


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


# -- top-label ------------------------------------------------------------------------------------------
#: Rows predicted 0: correct 3 of 4. Predicted 1: correct 1 of 3. Predicted 2: one row, below
#: min_rows = 3, so the pooled model: correct 3 + 1 + 1 = 5 of 8.
TL_P = np.array([[0.6, 0.3, 0.1], [0.7, 0.2, 0.1], [0.5, 0.4, 0.1], [0.8, 0.1, 0.1],
                 [0.2, 0.5, 0.3], [0.1, 0.6, 0.3], [0.3, 0.4, 0.3],
                 [0.1, 0.2, 0.7]])
TL_Y = np.array([0, 0, 1, 0, 1, 2, 0, 2])


def test_top_label_hand_worked():
    """Histogram binning with one bin predicts each set's rate of correct rows."""
    cal = calibrators.get("top_label:histogram", "classes", n_bins=1, min_rows=3).fit(TL_P, TL_Y)
    assert cal.models_[2] is None
    rows = np.array([[0.5, 0.3, 0.2],        # predicted 0: h = 3/4; 1/4 shared 3:2
                     [0.1, 0.6, 0.3],        # predicted 1: h = 1/3; 2/3 shared 1:3
                     [0.0, 0.0, 1.0]])       # predicted 2 (pooled): h = 5/8; top exactly 1, 3/8 shared equally
    expected = np.array([[3 / 4, 3 / 20, 1 / 10],
                         [1 / 6, 1 / 3, 1 / 2],
                         [3 / 16, 3 / 16, 5 / 8]])
    np.testing.assert_allclose(cal.predict_proba(rows), expected, rtol=1e-14, atol=1e-16)
    c, h = cal.predict_top(rows)
    np.testing.assert_array_equal(c, [0, 1, 2])                        # the paper's pair keeps the class ...
    np.testing.assert_allclose(h, [3 / 4, 1 / 3, 5 / 8], rtol=1e-15)
    assert cal.predict(rows).tolist() == [0, 2, 2]                      # ... the row's argmax moves when h < 1/2
    again = export.loads(export.dumps(cal))
    np.testing.assert_array_equal(again.predict_proba(rows), cal.predict_proba(rows))


def test_top_label_set_of_one_outcome_gets_its_rate_and_min_rows_zero_uses_every_class():
    y = TL_Y.copy()
    y[2] = 0                                                            # every row predicted 0 is correct
    cal = calibrators.get("top_label:isotonic", "classes", min_rows=0).fit(TL_P, y)
    assert cal.models_[0] == 1.0 and cal.models_[2] == 1.0              # class 2: its one row, correct
    c, h = cal.predict_top([[0.4, 0.35, 0.25], [0.2, 0.3, 0.5]])
    assert c.tolist() == [0, 2] and h.tolist() == [1.0, 1.0]


def test_top_label_with_logits_shares_the_rest_in_proportion_beyond_underflow():
    """Logits (0, -800, -801): the top probability is 1.0 and the others underflow to 0, yet their shares
    come from the log-probabilities: e^-800 : e^-801 = e : 1."""
    Z = np.log(np.maximum(TL_P, 1e-300))
    cal = calibrators.get("top_label:histogram", "classes", n_bins=1, min_rows=3, logits=True).fit(Z, TL_Y)
    Q = cal.predict_proba([[0.0, -800.0, -801.0]])
    rest = 1 - 3 / 4
    np.testing.assert_allclose(Q, [[3 / 4, rest * np.e / (1 + np.e), rest / (1 + np.e)]], rtol=1e-14)


def test_weights_count_towards_min_rows():
    """The class-2 row with weight 3 counts as 3 rows: class 2 gets its own model (rate 1)."""
    w = np.ones(TL_Y.size)
    w[7] = 3.0
    cal = calibrators.get("top_label:histogram", "classes", n_bins=1, min_rows=3).fit(TL_P, TL_Y, sample_weight=w)
    assert cal.models_[2] == 1.0


def test_composites_describe_themselves_from_their_binary_method():
    from calibdash import calibrators
    iso = calibrators.get_class("isotonic")
    ovr = calibrators.get("ovr:isotonic", "classes")
    top = calibrators.get("top_label:bbq", "classes")
    assert ovr.label == "One-vs-rest isotonic regression" and top.label == "Top-label BBQ"
    assert ovr.hyperparams == tuple(iso.hyperparams)
    assert [h.name for h in top.hyperparams] == [h.name for h in calibrators.get_class("bbq").hyperparams] + ["min_rows"]
    assert ovr.color == iso.color and top.color != calibrators.get_class("bbq").color
    orders = [calibrators.get(n, "classes").order for n in calibrators.available("classes") if ":" in n]
    assert orders == sorted(orders) and min(orders) >= 1000
    classes = calibrators.classes("classes")
    assert classes["ovr"].order < classes["top_label"].order
    assert calibrators.get("ovr:isotonic", "classes", interpolation="linear").spec() == (
        "ovr:isotonic", {"interpolation": "linear", "logits": False})


def test_bad_composite_settings_are_refused():
    with pytest.raises(SettingsError, match="min_rows"):
        calibrators.get("top_label:isotonic", "classes", min_rows=-1).fit(TL_P, TL_Y)
    with pytest.raises(SettingsError, match=r"has no hyperparameter \['n_bins'\]"):
        calibrators.get("top_label:isotonic", "classes", n_bins=3)
    with pytest.raises(SettingsError, match="interpolation"):
        calibrators.get("ovr:isotonic", "classes", interpolation="cubic").fit(TL_P, TL_Y)
