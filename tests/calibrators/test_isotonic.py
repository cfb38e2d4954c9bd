"""Isotonic regression (Zadrozny & Elkan 2002): hand-computed PAV, equality to scikit-learn, weights, its explanation."""
import numpy as np
import pandas as pd
import pytest
from sklearn.isotonic import IsotonicRegression

from calibdash import calibrators
from calibdash.explain import explain

from tests.calibrators.test_calibrators import tied_rows, integer_weights, assert_weights_count_as_rows, GRID


def test_isotonic_hand_computed_pav():
    cal = calibrators.get("isotonic").fit([0.1, 0.2, 0.3, 0.4], [0, 1, 0, 1])
    np.testing.assert_allclose(cal.predict([0.1, 0.2, 0.3, 0.4]), [0, 0.5, 0.5, 1])
    # step map: the pooled block's value holds up to halfway to the next block
    np.testing.assert_allclose(cal.predict([0.14, 0.16, 0.36]), [0, 0.5, 1])


def test_isotonic_monotone_and_matches_sklearn(noisy):
    s, y = noisy
    for mode in ("step", "linear"):
        cal = calibrators.get("isotonic", interpolation=mode).fit(s, y)
        assert np.all(np.diff(cal.predict(np.linspace(0, 1, 2001))) >= 0)
    ref = IsotonicRegression(out_of_bounds="clip").fit(s, y)
    lin = calibrators.get("isotonic", interpolation="linear").fit(s, y)
    grid = np.linspace(0, 1, 999)
    np.testing.assert_allclose(lin.predict(grid), ref.predict(grid), atol=1e-12)
    step = calibrators.get("isotonic").fit(s, y)
    np.testing.assert_allclose(step.predict(s), ref.predict(s), atol=1e-12)


@pytest.mark.parametrize("mode", ["step", "linear"])
def test_isotonic_explanation_lists_the_pav_blocks(mode):
    s, y = np.array([0.1, 0.2, 0.3, 0.4, 0.4]), np.array([0, 1, 0, 1, 1])
    cal = calibrators.get("isotonic", interpolation=mode).fit(s, y)
    blocks = explain(cal, s, y).blocks
    assert blocks["first_score"].tolist() == [0.1, 0.2, 0.4]
    assert blocks["last_score"].tolist() == [0.1, 0.3, 0.4]
    assert blocks["count"].tolist() == [1, 2, 2]
    np.testing.assert_allclose(blocks["value"], [0.0, 0.5, 1.0])
    np.testing.assert_allclose(cal.predict(blocks["last_score"].to_numpy()), blocks["value"])


@pytest.mark.parametrize("mode", ["step", "linear"])
def test_isotonic_weights_count_as_rows(mode):
    s, y = tied_rows(decimals=3)
    k = integer_weights(y)
    weighted, repeated = assert_weights_count_as_rows(lambda: calibrators.get("isotonic", interpolation=mode),
                                                      s, y, k, atol=0)
    # the same map as scikit-learn's weighted isotonic regression on the rows
    ref = IsotonicRegression(out_of_bounds="clip").fit(s, y, sample_weight=k.astype(float))
    if mode == "linear":
        np.testing.assert_allclose(weighted.predict(GRID), ref.predict(GRID), atol=1e-12)
    a = explain(weighted, s, y, sample_weight=k).blocks
    b = explain(repeated, np.repeat(s, k), np.repeat(y, k)).blocks
    pd.testing.assert_frame_equal(a, b, check_dtype=False, rtol=1e-12)
    # scaling every weight by c changes nothing
    w = np.random.default_rng(3).uniform(0.1, 5.0, s.size)
    np.testing.assert_allclose(calibrators.get("isotonic", interpolation=mode).fit(s, y, sample_weight=w / 3)
                               .predict(GRID), calibrators.get("isotonic", interpolation=mode)
                               .fit(s, y, sample_weight=w).predict(GRID), rtol=0, atol=1e-12)


def test_isotonic_weighted_by_hand():
    """Ties merge at their weighted mean label: 0.2 holds weight 4 at mean 1/4, which violates
    0.1's 1 and pools with it: (1 + 4 * 1/4) / 5 = 2/5. Unweighted the pool would be (1 + 1/2 * 2) / 3."""
    s = np.array([0.1, 0.2, 0.2, 0.3])
    y = np.array([1, 0, 1, 1])
    w = np.array([1.0, 3.0, 1.0, 1.0])
    cal = calibrators.get("isotonic").fit(s, y, sample_weight=w)
    np.testing.assert_allclose(cal.predict([0.1, 0.2, 0.3]), [0.4, 0.4, 1.0], atol=1e-15)
    blocks = explain(cal, s, y, sample_weight=w).blocks
    assert blocks["count"].tolist() == [5.0, 1.0] and blocks["last_score"].tolist() == [0.2, 0.3]
    np.testing.assert_allclose(calibrators.get("isotonic").fit(s, y).predict([0.1, 0.2]), [2 / 3, 2 / 3])
