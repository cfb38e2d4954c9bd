"""Top-label calibration (Gupta & Ramdas 2022): hand-worked rows, ties at the top, K = 2 against the binary method.

A top-label calibrator fits the binary method, per predicted class, on the rows' top scores and whether the top class
is the label (a class with fewer than ``min_rows`` rows shares one pooled map); it predicts the calibrated top
probability and shares the rest in proportion to the other scores. What it shares with one-vs-rest (the binary
method, labels, colours, the model file): test_ovr.py.
"""
from __future__ import annotations

import numpy as np
import pytest

from calibdash import calibrators
from calibdash.calibrators.multiclass.methods.ovr import ZeroProbabilityWarning
from calibdash.core.errors import SettingsError
from calibdash.io import export
from tests.calibrators.multiclass.conftest import BINARY, check_fit, fit, rounded_table, soft, two_classes

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
    cal = calibrators.get("top_label:histogram", "classes", n_bins=1, min_rows=3)
    cal.fit(TL_P, TL_Y, sample_weight=w)
    assert cal.models_[2] == 1.0


@pytest.mark.parametrize("binary", BINARY)
def test_k2_top_label_is_the_binary_method_on_each_half(binary):
    """Top-label at K = 2 (``min_rows=0``: every predicted class its own map) is not ``X(p)``: it fits one
    map on the rows with ``p > 1/2``, ``h1 = X`` on ``(p, y)``, and one on the others, ``h0 = X`` on
    ``(1 - p, 1 - y)``, and predicts ``h1(p)`` or ``1 - h0(1 - p)`` for class 1. That relation holds to the
    rounding of the row's division by ``h + (1 - h)``."""
    p, y, P = two_classes()
    grid = np.unique(np.r_[p, np.random.default_rng(15).random(100)])
    grid = grid[grid != 0.5]
    Q = fit(f"top_label:{binary}", P, y, min_rows=0).predict_proba(np.column_stack([1 - grid, grid]))
    up = p > 1 - p
    h1 = calibrators.get(binary).fit(p[up], y[up])
    h0 = calibrators.get(binary).fit(1 - p[~up], 1 - y[~up])
    top = grid > 1 - grid
    want = np.where(top, h1.predict(np.where(top, grid, 0.5)), 1 - h0.predict(np.where(top, 0.5, 1 - grid)))
    np.testing.assert_allclose(Q[:, 1], want, rtol=0, atol=1e-15)


def test_top_label_ties_at_the_top_do_not_depend_on_the_column_order():
    """Rows rounded to one decimal tie at the top often ([0.4, 0.4, 0.2]). A tied row counts as each
    tie-break with weight 1/m and predicts their mean, so reordering the columns reorders the output.
    By hand, histogram binning with one bin (each class's rate of correct rows, min_rows=0): rows
    [0.4, 0.4, 0.2] y=0 and [0.6, 0.3, 0.1] y=0 and [0.3, 0.5, 0.2] y=2: class 0's set holds (0.4, correct,
    weight 1/2) and (0.6, correct, 1): h0 = 1; class 1's holds (0.4, wrong, 1/2) and (0.5, wrong, 1): h1 = 0.
    A tied row [0.45, 0.45, 0.1] predicts the mean of [1, 0, 0] (class 0 predicted, h0 = 1) and
    [0.45 / 0.55, 0, 0.1 / 0.55] (class 1 predicted at h1 = 0, the rest shared 0.45 : 0.1)."""
    P = np.array([[0.4, 0.4, 0.2], [0.6, 0.3, 0.1], [0.3, 0.5, 0.2]])
    y = np.array([0, 0, 2])
    cal = fit("top_label:histogram", P, y, n_bins=1, min_rows=0)
    assert cal.models_[0] == 1.0 and cal.models_[1] == 0.0 and cal.models_[2] is None
    row = np.array([[0.45, 0.45, 0.1]])
    np.testing.assert_allclose(cal.predict_proba(row), [[(1 + 0.45 / 0.55) / 2, 0.0, 0.1 / 0.55 / 2]],
                               rtol=0, atol=1e-15)
    for perm in ([1, 0, 2], [2, 1, 0]):
        perm = np.array(perm)
        moved = fit("top_label:histogram", P[:, perm], np.argsort(perm)[y], n_bins=1, min_rows=0)
        np.testing.assert_allclose(moved.predict_proba(row[:, perm]), cal.predict_proba(row)[:, perm],
                                   rtol=0, atol=1e-15)


def test_rounded_rows_keep_their_ties_at_the_top():
    """Rows rounded to 2 decimals sum to 0.99-1.01; dividing each by its sum would split scores that are
    equal as given (0.35 in two rows becoming 0.3465 and 0.3535), and isotonic regression would no longer
    pool them. The binary maps see the numbers as given: each class's set is its rows' top scores, tied ones
    weighted 1/m, and its map is the binary fit on them (test_ovr.py: the same for one-vs-rest's columns)."""
    R, y = rounded_table()
    cal = fit("top_label:isotonic", R, y)
    r, c = np.nonzero(R == R.max(axis=1, keepdims=True))
    share = 1.0 / np.bincount(r)[r]
    assert np.any(share < 1)             # the rounded table ties at the top
    g = R[r, c]
    for k in range(3):
        e = c == k
        if cal.models_[k] is not None:
            binary = calibrators.get("isotonic").fit(g[e], (y[r[e]] == k).astype(int), sample_weight=share[e])
            np.testing.assert_array_equal(cal.models_[k].predict(g[e]), binary.predict(g[e]))
    check_fit(cal, R)


def test_exact_top_probabilities_of_1_are_said_and_kept_in_the_model_file():
    """Few rows of a class: top-label isotonic is 1 at the top (every other class 0). It does not floor; it
    warns and keeps the sentence in ``notes_`` and in the model file (test_ovr.py: one-vs-rest's zeros)."""
    P, y = soft(200, 5, seed=18)
    with pytest.warns(ZeroProbabilityWarning, match="calibrated top probability is 1"):
        top = calibrators.get("top_label:isotonic", "classes").fit(P, y)
    assert export.loads(export.dumps(top)).notes_ == top.notes_


def test_a_negative_min_rows_is_refused():
    with pytest.raises(SettingsError, match="min_rows"):
        calibrators.get("top_label:isotonic", "classes", min_rows=-1).fit(TL_P, TL_Y)
