"""Calibration by group (calibdash.monitoring.groups) and its drawing (calibdash.figures.charts.groups)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from calibdash import data as cdata
from calibdash.measures import calibration as metrics
from calibdash.monitoring import group_metrics, groups as G
from calibdash.core.errors import DataError, SettingsError
from calibdash.evaluation.holdout import Scheme, evaluate
from calibdash.figures.charts import groups as fg
from calibdash.samples.drifting_score import make_drift


@pytest.fixture(scope="module")
def drift():
    return make_drift()


def _data(n=3000, seed=1):
    rng = np.random.default_rng(seed)
    s = rng.uniform(0.02, 0.98, n)
    g = rng.choice(["a", "b", "c"], n, p=[0.5, 0.3, 0.2])
    shift = pd.Series(g).map({"a": 0.0, "b": -0.15, "c": 0.1}).to_numpy()
    y = (rng.uniform(size=n) < np.clip(s + shift, 0, 1)).astype(int)
    return s, y, g


def test_each_group_is_measured_as_its_own_subset():
    s, y, g = _data()
    rep = G.by_group(s, y, g, n_boot=20)
    assert list(rep.table.index) == ["a", "b", "c"]
    for name in "abc":
        m = g == name
        row = rep.table.loc[name]
        assert row["rows"] == m.sum() and row["weight"] == m.sum()
        assert row["positive_rate"] == pytest.approx(y[m].mean(), abs=1e-12)
        assert row["mean_score"] == pytest.approx(s[m].mean(), abs=1e-12)
        assert row["ECE"] == pytest.approx(metrics.ece(s[m], y[m]), abs=1e-12)
        assert row["Brier"] == pytest.approx(metrics.brier(s[m], y[m]), abs=1e-12)
        assert row["LogLoss"] == pytest.approx(metrics.log_loss(s[m], y[m]), abs=1e-12)
        assert row["AUC"] == pytest.approx(metrics.auc(s[m], y[m]), abs=1e-12)
        pd.testing.assert_frame_equal(rep.reliability[name], metrics.reliability_table(s[m], y[m]))
        for stat in G.STATS:
            assert row[f"{stat}_low"] < row[f"{stat}_high"], stat
            if stat != "ECE":      # a percentile interval of the upward-biased binned ECE may lie above a small ECE
                assert row[f"{stat}_low"] <= row[stat] <= row[f"{stat}_high"], stat
    assert rep.overall["ECE"] == pytest.approx(metrics.ece(s, y), abs=1e-12)
    # group b is over-estimated by 0.15, c under-estimated by 0.1, a calibrated: ECE orders them
    assert rep.worst() == "b"
    assert rep.table.loc["b", "ECE_low"] > rep.table.loc["a", "ECE_high"]


def test_hand_computed_ece_of_a_tiny_group():
    # two equal-count bins: {0.2, 0.2} observed 1/2 (gap 0.3), {0.8, 0.8} observed 1 (gap 0.2) -> ECE 0.25
    s = np.array([0.2, 0.2, 0.8, 0.8, 0.5, 0.5, 0.5, 0.5])
    y = np.array([0, 1, 1, 1, 0, 1, 0, 1])
    g = np.array(["x"] * 4 + ["y"] * 4)
    rep = G.by_group(s, y, g, n_bins=2, n_boot=0, min_rows=0)
    assert rep.table.loc["x", "ECE"] == pytest.approx(0.25)
    assert rep.table.loc["y", "ECE"] == pytest.approx(0.0)
    assert rep.table.loc["x", "Brier"] == pytest.approx((0.04 + 0.64 + 0.04 + 0.04) / 4)
    assert np.isnan(rep.table.loc["x", "ECE_low"])           # n_boot=0: no interval


def test_whole_weights_count_as_repeated_rows():
    s, y, g = _data(600, seed=2)
    w = np.random.default_rng(3).integers(1, 4, s.size)
    weighted = G.by_group(s, y, g, sample_weight=w, n_boot=0)
    repeated = G.by_group(np.repeat(s, w), np.repeat(y, w), np.repeat(g, w), n_boot=0)
    cols = ["weight", "positives"] + list(G.STATS)
    pd.testing.assert_frame_equal(weighted.table[cols], repeated.table[cols], atol=1e-10)
    for name in "abc":
        pd.testing.assert_frame_equal(weighted.reliability[name], repeated.reliability[name], atol=1e-10)


def test_fractional_weights_are_measured_with_those_weights():
    s, y, g = _data(900, seed=4)
    w = np.full(s.size, 0.5)
    half = G.by_group(s, y, g, sample_weight=w, n_boot=40)
    plain = G.by_group(s, y, g, n_boot=40)
    for stat in ("positive_rate", "mean_score", "Brier", "LogLoss", "AUC"):     # unchanged by scaling weights
        np.testing.assert_allclose(half.table[stat], plain.table[stat], atol=1e-10)
    for name in "abc":
        m = g == name
        assert half.table.loc[name, "ECE"] == pytest.approx(metrics.ece(s[m], y[m], sample_weight=w[m]), abs=1e-12)
        assert half.table.loc[name, "weight"] == pytest.approx(0.5 * m.sum())
    for stat in G.STATS:
        assert np.all(half.table[f"{stat}_high"] > half.table[f"{stat}_low"])
        if stat != "ECE":
            assert np.all(half.table[f"{stat}_low"] <= half.table[stat] + 1e-12)
            assert np.all(half.table[f"{stat}_high"] >= half.table[stat] - 1e-12)


def test_intervals_cover_the_population_values():
    """60 groups of 400 rows: the 95% intervals hold the true value about 95% of the time (at least 85%)."""
    rng = np.random.default_rng(7)
    hits = {"positive_rate": 0, "mean_score": 0, "ECE": 0, "Brier": 0}
    reps = 60
    for r in range(reps):
        s = rng.uniform(0.2, 1.0, 400)
        y = (rng.uniform(size=400) < s - 0.15).astype(int)      # every bin over-estimated by 0.15
        row = G.group_stats(s, y, n_boot=200, seed=r)
        truth = {"positive_rate": 0.6 - 0.15, "mean_score": 0.6, "ECE": 0.15,
                 # E[(s - y)^2] = E[p(1 - p)] + 0.15^2 with p = s - 0.15 ~ U(0.05, 0.85)
                 "Brier": (0.45 - (0.85 ** 3 - 0.05 ** 3) / 3 / 0.8) + 0.15 ** 2}
        for k in hits:
            hits[k] += row[f"{k}_low"] <= truth[k] <= row[f"{k}_high"]
    for k, h in hits.items():
        assert h / reps >= 0.85, (k, h)


def test_small_groups_are_pooled_into_other():
    g = np.array(["big"] * 200 + ["mid"] * 120 + ["small"] * 30 + ["tiny"] * 10)
    labels, order, notes, pooled = G.make_groups(g, min_rows=50)
    assert order == ["big", "mid", G.OTHER] and pooled == ["small", "tiny"]
    assert (labels == G.OTHER).sum() == 40
    assert any("pooled into 'other'" in n and "'other' itself is still under 50" in n for n in notes)
    # a real group named "other" is not mixed with the pooled ones
    g2 = np.where(g == "mid", "other", g)
    _, order2, _, _ = G.make_groups(g2, min_rows=50)
    assert order2 == ["big", "other", "other (pooled)"]
    # pooling counts weight, not rows: 30 rows of weight 2 are not small
    w = np.where(g == "small", 2.0, 1.0)
    _, order3, _, pooled3 = G.make_groups(g, w, min_rows=50)
    assert order3 == ["big", "mid", "small", G.OTHER] and pooled3 == ["tiny"]


def test_missing_values_are_a_group_of_their_own():
    g = pd.Series(["a"] * 100 + [None] * 60 + ["b"] * 80)
    labels, order, notes, _ = G.make_groups(g)
    assert order == ["a", "b", G.MISSING] and (labels == G.MISSING).sum() == 60
    assert any("60 rows have no value" in n for n in notes)


def test_too_many_groups_is_refused_with_a_hint():
    g = np.repeat([f"shop{i:02d}" for i in range(25)], 60)
    with pytest.raises(SettingsError, match="Bin the column"):
        G.make_groups(g, name="shop")
    s, y, _ = _data(g.size)
    with pytest.raises(SettingsError, match="25 distinct values, 25 groups"):
        G.by_group(s, y, g)


def test_numeric_column_with_many_values_is_cut_into_quantile_groups():
    x = np.arange(1000, dtype=float)[::-1]                    # 1000 distinct values
    labels, order, notes, _ = G.make_groups(pd.Series(x), n_quantiles=5, name="age")
    assert order == ["[0, 199.8)", "[199.8, 399.6)", "[399.6, 599.4)", "[599.4, 799.2)", "[799.2, 999]"]
    assert all((labels == o).sum() == 200 for o in order)
    assert labels[0] == "[799.2, 999]" and labels[-1] == "[0, 199.8)"
    assert any("cut into 5 equal-count quantile groups" in n for n in notes)
    # few distinct whole numbers: one group each, in numeric order (2 before 10)
    _, order2, notes2, _ = G.make_groups(pd.Series([10, 2, 2, 10, 3] * 60))
    assert order2 == ["2", "3", "10"] and not notes2


def test_weighted_quantile_groups_hold_equal_weight():
    x = np.arange(100, dtype=float)
    w = np.where(x < 50, 3.0, 1.0)                            # the low half weighs 150, the high half 50
    labels, order, _, _ = G.make_groups(pd.Series(x), w, max_groups=10, n_quantiles=4, min_rows=0)
    weight = pd.Series(w).groupby(labels).sum()
    assert len(order) == 4
    np.testing.assert_allclose(weight[order].to_numpy(), 50.0, atol=3.0)


def test_one_class_group_has_no_metrics_and_says_so():
    s, y, g = _data(900, seed=5)
    y = y.copy()
    y[g == "c"] = 0
    rep = G.by_group(s, y, g, n_boot=30)
    row = rep.table.loc["c"]
    for m in G.METRICS:
        assert np.isnan(row[m]) and np.isnan(row[f"{m}_low"])
    assert row["positive_rate"] == 0 and "one class only" in row["note"]
    assert row["mean_score"] == pytest.approx(s[g == "c"].mean())
    assert any("'c' holds one class only" in n for n in rep.notes)
    assert rep.worst() in {"a", "b"}


def test_fix_groups_matches_evaluate_and_mbct_fixes_the_bad_segment(drift):
    s, y, seg = drift["score"].to_numpy(), drift["label"].to_numpy(), drift["segment"]
    fix = G.fix_groups(s, y, seg, Scheme(), "isotonic", n_boot=20)
    feats = pd.DataFrame({"segment": pd.Categorical(seg, categories=["app", "partner", "store", "web"])})
    ev = evaluate(s, y, {"isotonic": {}, "mbct": fix.mbct_params}, Scheme(), features=feats)
    np.testing.assert_array_equal(fix.rows, ev.rows)
    np.testing.assert_allclose(fix.predictions["isotonic"], ev.predictions["isotonic"], atol=1e-12)
    np.testing.assert_allclose(fix.predictions["mbct"], ev.predictions["mbct"], atol=1e-12)
    t = fix.table
    assert list(t.columns) == ["uncalibrated", "isotonic", "mbct"]
    assert list(t.index) == ["app", "partner", "store", "web", G.ALL_ROWS]
    m = np.asarray(seg)[fix.rows] == "partner"
    assert t.loc["partner", "mbct"] == pytest.approx(metrics.ece(fix.predictions["mbct"][m], y[fix.rows][m]))
    # the score-only calibrator fixes the average, not the partner segment; MBCT on the segment fixes both
    assert t.loc[G.ALL_ROWS, "isotonic"] < 0.5 * t.loc[G.ALL_ROWS, "uncalibrated"]
    assert t.loc["partner", "isotonic"] > 2 * t.loc["app", "isotonic"]
    assert t.loc["partner", "mbct"] < 0.5 * t.loc["partner", "isotonic"]
    with pytest.raises(SettingsError, match="score alone"):
        G.fix_groups(s, y, seg, method="mbct")


def test_fix_groups_weights_pass_to_the_fits():
    s, y, g = _data(1200, seed=6)
    w = np.random.default_rng(8).integers(1, 3, s.size).astype(float)
    a = G.fix_groups(s, y, g, Scheme(kind="insample"), "platt", sample_weight=w, n_boot=0, mbct_params={"bin_size": 60})
    b = G.fix_groups(np.repeat(s, w.astype(int)), np.repeat(y, w.astype(int)), np.repeat(g, w.astype(int)),
                     Scheme(kind="insample"), "platt", n_boot=0, mbct_params={"bin_size": 60})
    assert a.table.loc[G.ALL_ROWS, "platt"] == pytest.approx(b.table.loc[G.ALL_ROWS, "platt"], abs=1e-6)


def test_column_for_rows_follows_the_dropped_rows():
    df = pd.DataFrame({"score": [0.1, None, 0.3, 0.4, "abc", 0.6] * 10,
                       "label": [0, 1, None, 1, 0, 1] * 10,
                       "segment": list("uvwxyz") * 10})
    ss = cdata.build_score_set(df, score="score", label="label")
    col = G.column_for_rows(ss, "segment")
    assert ss.n_rows == 30 and list(col[:3]) == ["u", "x", "z"]
    assert len(col) == ss.n_rows
    with pytest.raises(DataError, match="not in"):
        G.column_for_rows(ss, "nope")
    ss.scores = ss.scores[::-1].copy()                       # rows that no longer match are refused
    with pytest.raises(DataError, match="cannot be matched"):
        G.column_for_rows(ss, "segment")


def test_figures_draw_one_panel_per_group_and_a_point_per_group():
    s, y, g = _data(1500, seed=9)
    rep = G.by_group(s, y, g, n_boot=20)
    grid = fg.group_reliability_grid(rep, cols=2)
    own = [t for t in grid.data if t.name == "this group"]
    assert len(own) == 3
    np.testing.assert_allclose(np.asarray(own[1].y, dtype=float), rep.reliability["b"]["obs_freq"], equal_nan=True)
    assert [a.text.split("<br>")[0] for a in grid.layout.annotations][:3] == ["<b>a</b>", "<b>b</b>", "<b>c</b>"]
    forest = fg.ece_forest(rep)
    assert list(forest.layout.yaxis.ticktext) == ["a", "b", "c"]
    np.testing.assert_allclose(np.asarray(forest.data[0].x, dtype=float), rep.table["ECE"])
    np.testing.assert_allclose(np.asarray(forest.data[0].error_x.array, dtype=float),
                               rep.table["ECE_high"] - rep.table["ECE"])
    fix = G.fix_groups(s, y, g, n_boot=10, mbct_params={"bin_size": 50})
    many = fg.ece_forest(fix.reports)
    assert [t.name for t in many.data] == ["uncalibrated", "isotonic", "mbct"]


# -- large groups: the bootstrap resamples runs of the group's cells --------------------------------------------------
def test_coarse_cells_keep_each_runs_label_counts_and_score_sum():
    rng = np.random.default_rng(3)
    s = np.sort(rng.uniform(size=5000))
    y = (rng.uniform(size=5000) < s).astype(np.int8)
    w = rng.integers(1, 5, 5000).astype(float)
    cs, cy, cw = group_metrics.coarse_cells(s, y, w, 64)
    assert cw.sum() == w.sum() and cw[cy == 1].sum() == w[y == 1].sum()
    # the weighted mean score is kept (each run at its own weighted mean): equal up to the sums' rounding
    assert np.dot(cs, cw) == pytest.approx(np.dot(s, w), rel=1e-12)
    assert np.unique(cs).size <= 64 and np.all(np.diff(np.unique(cs)) > 0)


def test_a_large_group_is_resampled_on_runs_with_intervals_like_every_cells(monkeypatch):
    """Above BOOT_CELLS pairs the intervals come from runs, moved by the coarsening's bias: their ends agree with
    the bootstrap of every cell to within the Monte-Carlo noise of 400 resamples (a quarter of the width)."""
    rng = np.random.default_rng(4)
    n = 20_000
    s = rng.beta(2, 5, n)
    y = (rng.uniform(size=n) < np.clip(1.2 * s, 0, 1)).astype(np.int8)
    coarse = group_metrics.group_stats(s, y, n_boot=400, seed=1)
    monkeypatch.setattr(group_metrics, "BOOT_CELLS", 10 * n)
    full = group_metrics.group_stats(s, y, n_boot=400, seed=1)
    for name in group_metrics.STATS:
        assert coarse[name] == full[name]                    # point values are always on every cell
        width = full[f"{name}_high"] - full[f"{name}_low"]
        assert width > 0
        assert abs(coarse[f"{name}_low"] - full[f"{name}_low"]) < 0.25 * width, name
        assert abs(coarse[f"{name}_high"] - full[f"{name}_high"]) < 0.25 * width, name
