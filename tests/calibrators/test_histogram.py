"""Histogram binning (Zadrozny & Elkan 2001): hand-computed bins, ties never split, bin-size mode, weights."""
import numpy as np
import pandas as pd
import pytest

from calibdash import calibrators
from calibdash.core.errors import ProgrammingError
from calibdash.explain import explain

from tests.calibrators.test_calibrators import tied_rows, integer_weights, assert_weights_count_as_rows


def test_histogram_bins_hand_computed():
    s = np.arange(1, 11) / 11
    y = np.array([0, 0, 1, 0, 0, 1, 1, 0, 1, 1])
    cal = calibrators.get("histogram", n_bins=2).fit(s, y)
    bins = explain(cal, s, y).bins
    assert bins["count"].tolist() == [5, 5] and bins["positives"].tolist() == [1, 4]
    np.testing.assert_allclose(bins["mean_score"], [3 / 11, 8 / 11])
    np.testing.assert_allclose(cal.predict(s), [0.2] * 5 + [0.8] * 5)
    assert cal.cuts_[0] == pytest.approx((5 / 11 + 6 / 11) / 2)
    assert bins["upper"].tolist() == [cal.cuts_[0], 1.0]


def test_histogram_never_splits_ties_and_estimates_are_bin_means():
    rng = np.random.default_rng(5)
    s = np.round(rng.uniform(size=3000), 2)            # heavy ties
    y = (rng.uniform(size=3000) < s).astype(int)
    cal = calibrators.get("histogram", n_bins=13).fit(s, y)
    bins = np.searchsorted(cal.cuts_, s, side="right")
    for v in np.unique(s):
        assert np.unique(bins[s == v]).size == 1
    for b in np.unique(bins):
        assert cal.predict(s[bins == b])[0] == pytest.approx(y[bins == b].mean())
    table = explain(cal, s, y).bins
    assert table["count"].tolist() == np.bincount(bins).tolist() and table["count"].sum() == 3000


def test_histogram_bin_size_mode():
    s = np.linspace(0.01, 0.99, 1000)
    y = (np.arange(1000) % 3 == 0).astype(int)
    cal = calibrators.get("histogram", by="size", bin_size=250).fit(s, y)
    assert explain(cal, s, y).bins["count"].tolist() == [250] * 4


@pytest.mark.parametrize("params", [{}, {"n_bins": 7}, {"by": "size", "bin_size": 150}])
def test_histogram_weights_count_as_rows(params):
    s, y = tied_rows(decimals=3)
    k = integer_weights(y)
    weighted, repeated = assert_weights_count_as_rows(lambda: calibrators.get("histogram", **params), s, y, k,
                                                      atol=0)
    np.testing.assert_array_equal(weighted.cuts_, repeated.cuts_)
    # explained with its weights: the repeated rows' bins, counts as weight sums
    a = explain(weighted, s, y, sample_weight=k).bins
    b = explain(repeated, np.repeat(s, k), np.repeat(y, k)).bins
    pd.testing.assert_frame_equal(a, b, check_dtype=False, rtol=1e-12)
    with pytest.raises(ProgrammingError, match="and weights"):
        explain(weighted, s, y)


def test_histogram_weighted_by_hand():
    """Equal-weight bins: total weight 6, so B = 2 cuts at cumulative weight 3, between 0.3 and 0.4;
    the weight-0 row at 0.36 is absent (it would otherwise move the cut to 0.33)."""
    s = np.array([0.1, 0.2, 0.3, 0.36, 0.4])
    y = np.array([0, 1, 0, 0, 1])
    w = np.array([1.0, 1.0, 1.0, 0.0, 3.0])
    cal = calibrators.get("histogram", n_bins=2).fit(s, y, sample_weight=w)
    assert cal.cuts_.tolist() == pytest.approx([0.35], abs=1e-15)
    np.testing.assert_allclose(cal.estimates_, [1 / 3, 1.0])
    bins = explain(cal, s, y, sample_weight=w).bins
    assert bins["count"].tolist() == [3.0, 3.0] and bins["positives"].tolist() == [1.0, 3.0]
    np.testing.assert_allclose(bins["mean_score"], [0.2, 0.4])
    # by size: B = W // bin_size = 6 // 2 = 3, boundaries at weight 2 (after 0.2) and 4 (nearest: 3,
    # after 0.3); unweighted, the 5 rows would make 5 // 2 = 2 bins
    three = calibrators.get("histogram", by="size", bin_size=2).fit(s, y, sample_weight=w)
    np.testing.assert_allclose(three.cuts_, [0.25, 0.35], atol=1e-15)
    np.testing.assert_allclose(three.estimates_, [0.5, 0.0, 1.0])


def test_histogram_scaled_weights_same_bins_unless_sized():
    """Scaling every weight by c keeps equal-weight bins (by="bins"); by="size" has c times the weight
    per bin_size: B grows with c (the documented exception)."""
    s, y = tied_rows(decimals=3)
    w = np.random.default_rng(2).uniform(0.5, 2.0, s.size)
    for c in (0.25, 3.0):
        np.testing.assert_array_equal(calibrators.get("histogram").fit(s, y, sample_weight=c * w).cuts_,
                                      calibrators.get("histogram").fit(s, y, sample_weight=w).cuts_)
    sized = [calibrators.get("histogram", by="size", bin_size=300).fit(s, y, sample_weight=c * w)
             for c in (1.0, 0.5)]
    assert sized[0].estimates_.size == int(w.sum() // 300) and sized[1].estimates_.size == int(w.sum() / 2 // 300)
