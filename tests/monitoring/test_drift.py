"""Calibration over time (calibdash.monitoring.drift), its drawing (calibdash.figures.charts.drift) and the drift sample."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from calibdash import calibrators
from calibdash.measures import calibration as metrics
from calibdash.monitoring import drift as D
from calibdash.core.errors import DataError, SettingsError
from calibdash.figures.charts import drift as fd
from calibdash.samples import drifting_score as sample


@pytest.fixture(scope="module")
def frame():
    return sample.make_drift()


@pytest.fixture(scope="module")
def stale(frame):
    return D.staleness(frame["score"], frame["label"], frame["date"], "isotonic", column="date")


# -- the sample --------------------------------------------------------------------------------------------------
def test_drift_sample_is_deterministic_and_shaped_as_documented(frame):
    assert list(frame.columns) == ["date", "segment", "score", "label"] and len(frame) == 20_000
    pd.testing.assert_frame_equal(frame, sample.make_drift())
    assert not sample.make_drift(seed=1).equals(frame)
    d = pd.to_datetime(frame["date"])
    assert d.min() == pd.Timestamp("2025-01-01") and d.max() == pd.Timestamp("2025-12-31") and d.is_monotonic_increasing
    assert sorted(frame["segment"].unique()) == sorted(sample.SEGMENTS)
    assert frame["score"].between(0, 1).all() and set(frame["label"].unique()) == {0, 1}
    np.testing.assert_allclose(frame["segment"].value_counts(normalize=True)[list(sample.SEGMENTS)],
                               sample.SEGMENT_P, atol=0.015)


def test_drift_sample_truth_is_the_documented_shift(frame):
    """A logistic fit of the labels on logit(score) and the documented shift recovers slope 1 and offset 0."""
    from sklearn.linear_model import LogisticRegression

    z = np.log(frame["score"] / (1 - frame["score"])).to_numpy()
    month = pd.to_datetime(frame["date"]).dt.month.to_numpy() - 1
    shift = sample.true_logit_shift(month, frame["segment"].to_numpy())
    x = np.column_stack([z, shift])
    lr = LogisticRegression(C=1e6, max_iter=1000).fit(x, frame["label"])
    np.testing.assert_allclose(lr.coef_[0], [1.0, 1.0], atol=0.12)
    assert abs(lr.intercept_[0]) < 0.12


# -- periods -----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("start, days, freq, n", [("2021-01-01", 10, "D", 10), ("2021-01-04", 91, "W", 13),
                                                  ("2021-01-01", 365, "M", 12), ("2021-01-01", 5 * 365, "Q", 20),
                                                  ("2021-01-01", 40 * 365, "Y", 40)])
def test_the_period_is_the_finest_giving_at_most_30_periods(start, days, freq, n):
    dates = pd.Timestamp(start) + pd.to_timedelta(np.arange(days), unit="D")
    per = D.to_periods(pd.Series(dates.strftime("%Y-%m-%d")), name="day")
    assert per.freq == freq and len(per.labels) == n
    assert (np.diff(per.codes) >= 0).all() and per.codes[0] == 0 and per.codes[-1] == n - 1     # in time order


def test_periods_label_and_order_rows():
    values = ["2025-03-14", "2025-01-02", None, "2025-02-28"] * 20 + ["not a date"] * 5
    per = D.to_periods(pd.Series(values), "M", "when")
    assert per.labels == ["2025-01", "2025-02", "2025-03"]
    assert list(per.codes[:4]) == [2, 0, -1, 1] and per.n_left_out == 25
    assert any("25 rows have no readable date" in n for n in per.notes)
    with pytest.raises(DataError, match="does not hold dates"):      # under 90% of the entries read as dates
        D.to_periods(pd.Series(values + ["junk"] * 10), "M", "when")
    week = D.to_periods(pd.Series(["2025-03-12", "2025-03-16", "2025-03-17"]), "W")
    assert week.labels == ["2025-03-10", "2025-03-17"] and list(week.codes) == [0, 0, 1]     # weeks start on Monday


def test_other_period_columns():
    ymd = D.to_periods(pd.Series([20250105, 20250210, 20250320] * 5), "M", name="ymd")
    assert ymd.labels == ["2025-01", "2025-02", "2025-03"] and "YYYYMMDD" in ymd.notes[0]
    codes = D.to_periods(pd.Series([3, 1, 2, 12, 1]), name="month")
    assert codes.freq == "given" and codes.labels == ["1", "2", "3", "12"] and list(codes.codes) == [2, 0, 1, 3, 0]
    dt = D.to_periods(pd.Series(pd.to_datetime(["2025-01-01 10:30", "2025-01-01 23:59", "2025-01-03 00:01"])), "D")
    assert dt.labels == ["2025-01-01", "2025-01-03"] and list(dt.codes) == [0, 0, 1]


def test_columns_without_dates_are_refused():
    with pytest.raises(DataError, match="does not hold dates"):
        D.to_periods(pd.Series(["web", "app", "store"] * 10), name="segment")
    with pytest.raises(DataError, match="does not hold dates"):
        D.to_periods(pd.Series(np.linspace(0, 1, 50)), name="score")
    with pytest.raises(DataError, match="does not hold dates"):
        D.to_periods(pd.Series(np.arange(500)), name="id")          # too many codes to be periods
    with pytest.raises(SettingsError, match="choose a longer period"):
        D.to_periods(pd.Series(pd.date_range("2025-01-01", periods=365).strftime("%Y-%m-%d")), "D")
    with pytest.raises(SettingsError, match="freq"):
        D.to_periods(pd.Series(["2025-01-01"]), "fortnight")


# -- over time ---------------------------------------------------------------------------------------------------
def test_each_period_is_measured_as_its_own_subset(frame):
    rep = D.over_time(frame["score"], frame["label"], frame["date"], n_boot=30, column="date")
    month = pd.to_datetime(frame["date"]).dt.month.to_numpy()
    assert list(rep.table.index) == [f"2025-{m:02d}" for m in range(1, 13)]
    s, y = frame["score"].to_numpy(), frame["label"].to_numpy()
    for k, lab in enumerate(rep.table.index, start=1):
        m = month == k
        row = rep.table.loc[lab]
        assert row["rows"] == m.sum()
        assert row["ECE"] == pytest.approx(metrics.ece(s[m], y[m]), abs=1e-12)
        assert row["LogLoss"] == pytest.approx(metrics.log_loss(s[m], y[m]), abs=1e-12)
        assert row["positive_rate"] == pytest.approx(y[m].mean(), abs=1e-12)
        assert row["ECE_low"] < row["ECE_high"] and row["LogLoss_low"] <= row["LogLoss"] <= row["LogLoss_high"]
    assert rep.table["start"].iloc[0] == pd.Timestamp("2025-01-01")
    # the sample's score drifts: ECE rises over the year while the mean score stays put
    assert stats.spearmanr(np.arange(12), rep.table["ECE"]).statistic > 0.9
    assert rep.table["ECE_low"].iloc[-1] > rep.table["ECE_high"].iloc[0]
    assert rep.table["mean_score"].max() - rep.table["mean_score"].min() < 0.03


def test_one_class_period_has_nan_metrics_and_a_note():
    rng = np.random.default_rng(0)
    dates = np.repeat(["2025-01-15", "2025-02-15", "2025-03-15"], 200)
    s = rng.uniform(size=600)
    y = (rng.uniform(size=600) < s).astype(int)
    y[200:400] = 0
    rep = D.over_time(s, y, dates, freq="M", n_boot=20)
    assert np.isnan(rep.table.loc["2025-02", "ECE"]) and np.isnan(rep.table.loc["2025-02", "LogLoss"])
    assert rep.table.loc["2025-02", "positive_rate"] == 0
    assert np.isfinite(rep.table.loc["2025-01", "ECE"])
    assert any("2025-02" in n and "one class only" in n for n in rep.notes)
    st = D.staleness(s, y, dates, "platt", freq="M")
    assert st.matrix.loc["2025-02"].isna().all()                          # nothing fitted on February
    assert np.isnan(st.table.loc["2025-02", D.STALE_COL])                 # nor judged there
    # refitted "on the period before" falls back on January for March
    assert st.table.loc["2025-03", D.FRESH_COL] == pytest.approx(st.matrix.loc["2025-01", "2025-03"])
    assert any("No calibrator is fitted on 2025-02" in n for n in st.notes)


# -- staleness ---------------------------------------------------------------------------------------------------
def test_staleness_matrix_entries_are_held_out_fits(frame, stale):
    month = pd.to_datetime(frame["date"]).dt.month.to_numpy()
    s, y = frame["score"].to_numpy(), frame["label"].to_numpy()
    fit, judge = month == 3, month == 9
    model = calibrators.get_class("isotonic")().fit(s[fit], y[fit])
    expected = metrics.ece(model.predict(s[judge]), y[judge])
    assert stale.matrix.loc["2025-03", "2025-09"] == pytest.approx(expected, abs=1e-12)
    z = stale.matrix.to_numpy()
    assert np.isnan(z[np.tril_indices(12)]).all() and np.isfinite(z[np.triu_indices(12, 1)]).all()


def test_stale_calibrator_gets_worse_and_refitting_fixes_it(stale):
    t = stale.table
    assert list(t.index) == [f"2025-{m:02d}" for m in range(2, 13)] and list(t["age"]) == list(range(1, 12))
    # never refitted: held-out ECE rises with the calibrator's age ...
    assert stats.spearmanr(t["age"], t[D.STALE_COL]).statistic > 0.9
    assert t[D.STALE_COL].iloc[-1] > 3 * t[D.STALE_COL].iloc[0]
    # ... refitted every month it stays low, and better than the stale one from the third month on
    assert t[D.FRESH_COL].max() < 0.06
    assert (t[D.FRESH_COL].iloc[2:] < t[D.STALE_COL].iloc[2:]).all()
    assert t[D.FRESH_COL].iloc[-1] < 0.3 * t[D.STALE_COL].iloc[-1]
    # the same picture over every pair of periods: mean held-out ECE grows with age
    assert (np.diff(stale.by_age["ECE"].to_numpy()) > 0).all()
    assert list(stale.by_age["pairs"]) == list(range(11, 0, -1))


def test_staleness_weights_count_as_repeated_rows():
    rng = np.random.default_rng(3)
    n = 900
    dates = np.repeat(["2025-01-10", "2025-02-10", "2025-03-10"], n // 3)
    s = rng.uniform(0.05, 0.95, n)
    y = (rng.uniform(size=n) < s ** 1.3).astype(int)
    w = rng.integers(1, 4, n)
    a = D.staleness(s, y, dates, "platt", sample_weight=w.astype(float))
    b = D.staleness(np.repeat(s, w), np.repeat(y, w), np.repeat(dates, w), "platt")
    np.testing.assert_allclose(a.matrix.to_numpy(), b.matrix.to_numpy(), atol=1e-6, equal_nan=True)
    with pytest.raises(DataError, match="two or more"):
        D.staleness(s, y, np.repeat("2025-01-10", n))


# -- figures -----------------------------------------------------------------------------------------------------
def test_figures_draw_the_report(frame, stale):
    rep = D.over_time(frame["score"], frame["label"], frame["date"], n_boot=10)
    fig = fd.drift_chart(rep)
    ece = next(t for t in fig.data if t.name == "ECE" and t.mode == "lines+markers")
    assert list(ece.x) == list(rep.table.index)
    np.testing.assert_allclose(np.asarray(ece.y, dtype=float), rep.table["ECE"])
    assert {t.name for t in fig.data} >= {"ECE", "log-loss", "positive rate", "mean score", "rows"}
    chart = fd.staleness_chart(stale, labels={"isotonic": "Isotonic"})
    assert [t.name for t in chart.data] == ["uncalibrated", "Isotonic fitted on 2025-01 (never refitted)",
                                            "Isotonic refitted on the period before"]
    np.testing.assert_allclose(np.asarray(chart.data[1].y, dtype=float), stale.table[D.STALE_COL])
    heat = fd.staleness_heatmap(stale)
    assert list(heat.data[0].y) == [f"2025-{m:02d}" for m in range(1, 12)]       # the last period fits nothing later
    assert list(heat.data[0].x) == [f"2025-{m:02d}" for m in range(2, 13)]
