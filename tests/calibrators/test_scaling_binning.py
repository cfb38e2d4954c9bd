"""The scaling-binning calibrator (Kumar, Liang & Ma, 2019): a hand-worked fit, its relation to Platt scaling
and histogram binning, weights, odd scores, SQL, export and its explanation."""
import json

import duckdb
import numpy as np
import pandas as pd
import pytest

from calibdash import calibrators, figures
from calibdash.io import export, sql
from calibdash.core.sql_forms import StepMap
from calibdash.calibrators.sql import sql_methods
from calibdash.calibrators.scaling_binning import ScalingBinningCalibrator
from calibdash.core.errors import DataError, ProgrammingError, SettingsError
from calibdash.explain import explain

#: 14 rows at three scores whose residuals ``y - s`` sum to 0 and are orthogonal to ``logit(s)`` (which is
#: -l, 0, l): the logistic likelihood is maximal at A = 1, B = 0, so Platt's outputs are the scores.
#: Score 0.2: 2 positives of 5 (residual +1); 0.5: 0 of 4 (-2); 0.8: 5 of 5 (+1).
HAND_S = np.r_[[0.2] * 5, [0.5] * 4, [0.8] * 5]
HAND_Y = np.r_[[1, 1, 0, 0, 0], [0] * 4, [1] * 5]


def test_hand_worked_fit():
    """Two equal-count bins of 14 rows: cumulative counts 5 and 9 are equally far from 7, the lower wins
    (histogram binning's rule), so the cut lies halfway between 0.2 and 0.5. The bins' values are the means
    of Platt's outputs, which are the scores: 0.2, and (4 x 0.5 + 5 x 0.8) / 9 = 2/3 (histogram binning's
    frequencies would be 2/5 and 5/9)."""
    cal = calibrators.get("scaling_binning", n_bins=2).fit(HAND_S, HAND_Y)
    platt = calibrators.get("platt").fit(HAND_S, HAND_Y)
    assert platt.a_ == pytest.approx(1.0, abs=1e-9) and platt.b_ == pytest.approx(0.0, abs=1e-9)
    np.testing.assert_array_equal(cal.cuts_, [(0.2 + 0.5) / 2])
    np.testing.assert_allclose(cal.levels_, [0.2, 2 / 3], rtol=0, atol=1e-12)
    np.testing.assert_allclose(cal.predict([0.0, 0.2, 0.35, 0.5, 1.0]), [0.2, 0.2, 2 / 3, 2 / 3, 2 / 3],
                               rtol=0, atol=1e-12)
    hist = calibrators.get("histogram", n_bins=2).fit(HAND_S, HAND_Y)
    np.testing.assert_allclose(hist.estimates_, [2 / 5, 5 / 9])


def test_hand_worked_fit_with_weights():
    """The same 14 rows as four weighted rows; and every weight scaled by 2.5: the same map."""
    s, y, w = np.array([0.2, 0.2, 0.5, 0.8]), np.array([1, 0, 0, 1]), np.array([2.0, 3.0, 4.0, 5.0])
    for c in (1.0, 2.5):
        cal = calibrators.get("scaling_binning", n_bins=2).fit(s, y, sample_weight=c * w)
        np.testing.assert_array_equal(cal.cuts_, [(0.2 + 0.5) / 2])
        np.testing.assert_allclose(cal.levels_, [0.2, 2 / 3], rtol=0, atol=1e-12)


@pytest.fixture(scope="module")
def rows():
    rng = np.random.default_rng(19)
    s = np.round(rng.beta(2, 3, 4000), 3)
    y = (rng.uniform(size=s.size) < s ** 1.5).astype(int)
    return s, y


@pytest.mark.parametrize("n_bins", [1, 2, 7, 10, 40])
def test_bins_are_histogram_binnings_and_values_are_platts_bin_means(rows, n_bins):
    """The paper's three steps from calibdash's own parts: histogram binning's bins, each valued at the mean
    of Platt scaling's outputs over its rows; so at most B values, each between Platt's extremes."""
    s, y = rows
    cal = calibrators.get("scaling_binning", n_bins=n_bins).fit(s, y)
    hist = calibrators.get("histogram", n_bins=n_bins).fit(s, y)
    g = calibrators.get("platt").fit(s, y).predict(s)
    np.testing.assert_array_equal(cal.cuts_, hist.cuts_)
    bin_of = np.searchsorted(hist.cuts_, s, side="right")
    means = np.array([g[bin_of == k].mean() for k in range(cal.cuts_.size + 1)])
    np.testing.assert_allclose(cal.levels_, means, rtol=1e-12)
    p = cal.predict(np.linspace(0, 1, 2001))
    assert np.unique(p).size <= n_bins
    assert g.min() <= p.min() and p.max() <= g.max()


def test_monotone_when_platt_is_and_reversed_when_platt_decreases(rows):
    s, y = rows
    up = calibrators.get("scaling_binning").fit(s, y).levels_
    assert np.all(np.diff(up) >= 0)
    down = calibrators.get("scaling_binning").fit(s, 1 - y).levels_         # scores now anti-informative
    assert np.all(np.diff(down) <= 0)


def test_integer_weights_equal_repeated_rows_and_cells(rows):
    s, y = rows
    k = np.random.default_rng(4).integers(0, 4, s.size)
    k[np.flatnonzero(y == 1)[:1]] = 1
    grid = np.linspace(0, 1, 1001)
    weighted = calibrators.get("scaling_binning").fit(s, y, sample_weight=k)
    repeated = calibrators.get("scaling_binning").fit(np.repeat(s, k), np.repeat(y, k))
    np.testing.assert_array_equal(weighted.cuts_, repeated.cuts_)
    np.testing.assert_allclose(weighted.predict(grid), repeated.predict(grid), rtol=1e-9, atol=1e-12)
    cells = pd.DataFrame({"s": s, "y": y}).value_counts().reset_index()
    by_cells = calibrators.get("scaling_binning").fit(cells["s"], cells["y"], sample_weight=cells["count"])
    by_rows = calibrators.get("scaling_binning").fit(s, y)
    np.testing.assert_allclose(by_cells.predict(grid), by_rows.predict(grid), rtol=1e-9, atol=1e-12)


ODD = np.array([0.0, 5e-324, 1e-320, 2.2e-308, 1e-300, 1e-13, 1e-12, 0.5, 1 - 1e-12, 1 - 1e-16, 1.0])


@pytest.mark.parametrize("case", ["subnormal", "saturated", "mixed", "constant"])
def test_odd_scores_give_finite_probabilities_equal_in_sql(case):
    """Subnormal scores, scores that Platt's clip saturates, and constant scores fit and predict finite
    values in [0, 1], and the SQL equals predict on every odd score."""
    rng = np.random.default_rng(3)
    if case == "subnormal":
        s = np.r_[5e-324, 1e-323, 1e-320, 1e-315, 2.2e-308, rng.uniform(0, 1e-300, 95)]
    elif case == "saturated":
        s = np.r_[1 - 1e-16, 1 - 1e-13, 1.0, rng.uniform(1 - 1e-12, 1.0, 97), rng.uniform(0, 1e-13, 100)]
    elif case == "mixed":
        s = np.r_[ODD, rng.uniform(size=189)]
    else:
        s = np.full(100, 0.3)
    y = (np.arange(s.size) % 3 == 0).astype(int)
    cal = calibrators.get("scaling_binning", n_bins=5).fit(s, y)
    test = np.unique(np.r_[ODD, s, np.nextafter(cal.cuts_, 0.0), cal.cuts_])
    p = cal.predict(test)
    assert np.all(np.isfinite(p)) and np.all((p >= 0) & (p <= 1))
    assert np.all(np.isfinite(cal.levels_)) and np.all(np.isfinite(cal.cuts_))
    con = duckdb.connect()
    con.register("t", pd.DataFrame({"rid": np.arange(test.size), "score": test}))
    got = con.sql(sql.to_sql(cal).select("t", ["rid"])).df().sort_values("rid")["calibrated"].to_numpy()
    np.testing.assert_array_equal(got, p)
    con.close()


def test_odd_data_row_order_few_distinct_scores_and_a_heavy_weight(rows):
    """The odd-input contracts: the rows' order changes the map only by rounding; one or two distinct
    scores fit; a weight of 1e5 is 1e5 repeated rows."""
    s, y = rows
    grid = np.r_[ODD, np.linspace(0, 1, 1001)]
    perm = np.random.default_rng(8).permutation(s.size)
    a = calibrators.get("scaling_binning").fit(s, y).predict(grid)
    b = calibrators.get("scaling_binning").fit(s[perm], y[perm]).predict(grid)
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-13)
    one = calibrators.get("scaling_binning").fit(np.full(40, 0.4), np.tile([0, 1], 20))
    np.testing.assert_allclose(one.predict(grid), 0.5, atol=1e-12)     # one bin, Platt at the base rate
    two = calibrators.get("scaling_binning").fit(np.r_[[0.3] * 20, [0.7] * 20],
                                                 np.r_[[0] * 15, [1] * 5, [0] * 5, [1] * 15])
    assert two.cuts_.tolist() == [0.5] and np.all(np.isfinite(two.predict(grid)))
    s3, y3 = np.array([0.2, 0.5, 0.8, 0.3]), np.array([0, 1, 1, 0])
    heavy = calibrators.get("scaling_binning").fit(s3, y3, sample_weight=[1e5, 1, 1, 1])
    rep = calibrators.get("scaling_binning").fit(np.r_[np.full(100_000, 0.2), s3[1:]],
                                                 np.r_[np.zeros(100_000, int), y3[1:]])
    np.testing.assert_array_equal(heavy.cuts_, rep.cuts_)
    np.testing.assert_allclose(heavy.predict(grid), rep.predict(grid), rtol=1e-9, atol=1e-12)


def test_sql_is_a_step_map_and_export_round_trips_exactly(rows):
    s, y = rows
    cal = calibrators.get("scaling_binning", n_bins=12).fit(s, y)
    form = cal.sql_map()
    assert isinstance(form, StepMap)
    text = export.dumps(cal)
    loaded = export.loads(text)
    assert isinstance(loaded, ScalingBinningCalibrator) and loaded.get_params() == {"n_bins": 12}
    assert set(export.read_model(text).calibrator._export_state()) == {"cuts", "levels"}
    grid = np.r_[np.linspace(0, 1, 1001), cal.cuts_, np.nextafter(cal.cuts_, 0)]
    np.testing.assert_array_equal(loaded.predict(grid), cal.predict(grid))
    assert sql.to_sql(text).expression == sql.to_sql(cal).expression
    doc = json.loads(text)
    doc["state"]["levels"][0] = 1.5
    with pytest.raises(DataError, match="'levels' must lie in"):
        export.loads(json.dumps(doc))


def test_explanation_shows_both_bin_values_and_refuses_other_rows(rows):
    s, y = rows
    cal = calibrators.get("scaling_binning", n_bins=8).fit(s, y)
    ex = explain(cal, s, y)
    b = ex.bins
    np.testing.assert_array_equal(b["estimate"].to_numpy(), cal.levels_)
    hist = calibrators.get("histogram", n_bins=8).fit(s, y)
    np.testing.assert_allclose(b["frequency"].to_numpy(), hist.estimates_, rtol=1e-12)
    assert b["count"].sum() == s.size and b["positives"].sum() == y.sum()
    platt = calibrators.get("platt").fit(s, y)
    assert (ex.A, ex.B) == (platt.a_, platt.b_)
    np.testing.assert_array_equal(ex.curve["platt"].to_numpy(), platt.predict(ex.curve["score"].to_numpy()))
    loaded = export.loads(export.dumps(cal))                  # a model read from its file explains alike
    pd.testing.assert_frame_equal(explain(loaded, s, y).bins, b)
    with pytest.raises(ProgrammingError, match="not the ones"):
        explain(cal, s, np.roll(y, 1))
    (title, fig), = figures.inner_figures(ex)
    assert "8 equal-count bins" in title
    step = [t for t in fig.data if t.meta == "map"][0]
    np.testing.assert_array_equal(np.asarray(step.y, float)[:-1], cal.levels_)


def test_weighted_explanation_uses_the_weights(rows):
    s, y = rows
    w = np.random.default_rng(2).uniform(0.5, 2.0, s.size)
    cal = calibrators.get("scaling_binning").fit(s, y, sample_weight=w)
    ex = explain(cal, s, y, sample_weight=w)
    assert ex.bins["count"].sum() == pytest.approx(w.sum())
    with pytest.raises(ProgrammingError):
        explain(cal, s, y)                                    # the unit-weight steps give other bins


def test_bad_bin_count_is_a_settings_error(rows):
    s, y = rows
    with pytest.raises(SettingsError, match="n_bins"):
        calibrators.get("scaling_binning", n_bins=0).fit(s, y)


def test_declares_itself():
    """Registered, ordered, coloured and SQL-able by its own file alone."""
    cls = calibrators.get_class("scaling_binning")
    assert "scaling_binning" in calibrators.available()
    assert figures.color_of("scaling_binning") == cls.color
    assert "scaling_binning" in sql_methods()
