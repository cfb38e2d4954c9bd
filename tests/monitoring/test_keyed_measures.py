"""The Groups & time measures of keyed cells (calibdash.monitoring.keyed.per_key) against the row functions.

Tolerances. Counts and positives are whole numbers, exact in floats in any order. A weighted metric of a
cell's weighted rows sums the same terms as the metric of its rows, grouped differently (``w * term`` for ``w``
equal terms), so the two differ by the rounding of sums of at most 2e4 terms in [0, 1], a few 1e-13 at worst
(log-loss terms reach ``-log(1e-15) = 35``: 1e-11); 1e-10 holds with a margin. The intervals are the same
Poisson draws (the bootstrap merges and sorts a group's (score, label) cells before drawing, from the same
seed), so their percentiles are those of values equal to the same rounding. Isotonic and MBCT fits on the cells
are the fits on the rows (``tests/test_weights.py``: maps equal to 1e-15 for PAV; MBCT merges identical rows).
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from calibdash.monitoring import drift as D, groups as G
from calibdash.evaluation.cells import parts_for
from calibdash.core.errors import DataError, SettingsError
from calibdash.monitoring.grouping import make_groups
from calibdash.monitoring.keyed import Key, KeyedCells
from calibdash.monitoring.keyed import per_key as KM
from calibdash.monitoring.keyed.from_rows import keyed_cells
from calibdash.samples.drifting_score import MISCALIBRATED, make_drift
from calibdash.evaluation.scheme import Scheme

ATOL = 1e-10                     # see the module docstring
STATS = ["rows", "weight", "positives"] + [f"{s}{e}" for s in G.STATS for e in ("", "_low", "_high")]


def _keyed(s, y, values, key: Key, part=None) -> KeyedCells:
    """Exact keyed cells of rows (:func:`calibdash.monitoring.keyed.from_rows.keyed_cells`), checked to be exact."""
    kc = keyed_cells(s, y, values, key, part)
    assert kc.cells.exact
    return kc


def _data(n=3000, seed=1):
    rng = np.random.default_rng(seed)
    s = np.round(rng.uniform(0.02, 0.98, n), 2)               # ties: the cells compress
    g = rng.choice(["a", "b", "c"], n, p=[0.5, 0.3, 0.2])
    shift = pd.Series(g).map({"a": 0.0, "b": -0.15, "c": 0.1}).to_numpy()
    y = (rng.uniform(size=n) < np.clip(s + shift, 0, 1)).astype(int)
    return s, y, g


@pytest.fixture(scope="module")
def drift():
    return make_drift()


def _same_table(keyed, rows, cols=STATS):
    assert list(keyed.index) == list(rows.index)
    pd.testing.assert_frame_equal(keyed[cols], rows[cols], check_dtype=False, atol=ATOL, rtol=0)


# -- groups ------------------------------------------------------------------------------------------------------
def test_by_key_equals_by_group_values_intervals_and_reliability():
    s, y, g = _data()
    kc = _keyed(s, y, g, Key("g"))
    assert len(kc) < s.size / 4                                 # cells, not rows
    rep, ref = KM.by_key(kc, n_boot=60, seed=4), G.by_group(s, y, g, n_boot=60, seed=4, column="g")
    _same_table(rep.table, ref.table)
    assert rep.table["rows"].tolist() == [int((g == k).sum()) for k in "abc"]      # real rows, not weighted rows
    assert rep.overall["rows"] == s.size
    for k in "abc":
        pd.testing.assert_frame_equal(rep.reliability[k], ref.reliability[k], check_dtype=False, atol=ATOL)
    pd.testing.assert_frame_equal(rep.overall_reliability, ref.overall_reliability, check_dtype=False, atol=ATOL)
    assert rep.column == "g" and rep.notes == ref.notes and rep.worst() == ref.worst()


def test_row_order_is_irrelevant_for_rows_and_cells():
    s, y, g = _data(1500, seed=5)
    order = np.random.default_rng(0).permutation(s.size)
    a = G.by_group(s, y, g, n_boot=40, seed=1)
    b = G.by_group(s[order], y[order], g[order], n_boot=40, seed=1)
    _same_table(a.table, b.table)                               # intervals too: the draws follow the content
    c = KM.by_key(_keyed(s[order], y[order], g[order], Key("g")), n_boot=40, seed=1)
    _same_table(c.table, a.table)


def test_cells_count_as_repeated_rows():
    s, y, g = _data(800, seed=2)
    w = np.random.default_rng(3).integers(1, 4, s.size)
    weighted = G.by_group(s, y, g, sample_weight=w.astype(float), n_boot=30, seed=2)
    kc = _keyed(np.repeat(s, w), np.repeat(y, w), np.repeat(g, w), Key("g"))
    keyed = KM.by_key(kc, n_boot=30, seed=2)
    cols = [c for c in STATS if c != "rows"]
    _same_table(keyed.table, weighted.table, cols)
    assert keyed.table["rows"].tolist() == [int(w[g == k].sum()) for k in "abc"]


def test_keyed_intervals_cover_the_population_values():
    """40 groups of 400 rows in one set of keyed cells: the 95% intervals hold the truth at least 85% of the time."""
    rng = np.random.default_rng(7)
    n, reps = 400, 40
    s = np.round(rng.uniform(0.2, 1.0, n * reps), 2)
    y = (rng.uniform(size=s.size) < s - 0.15).astype(int)      # every score over-estimates by 0.15
    g = np.repeat([f"g{r:02d}" for r in range(reps)], n)
    rep = KM.by_key(_keyed(s, y, g, Key("g", max_groups=reps)), n_boot=200, seed=0)
    # scores uniform on the grid 0.20..1.00 (its ends half as likely): mean 0.6; Brier = E[p(1 - p)] + 0.15^2
    # with p = s - 0.15, within 1e-5 of the continuous value (the grid's variance term 0.01^2 / 12)
    truth = {"positive_rate": 0.45, "mean_score": 0.6, "ECE": 0.15,
             "Brier": (0.45 - (0.85 ** 3 - 0.05 ** 3) / 3 / 0.8) + 0.15 ** 2}
    t = rep.table
    for k, v in truth.items():
        share = float(((t[f"{k}_low"] <= v) & (v <= t[f"{k}_high"])).mean())
        assert share >= 0.85, (k, share)


def test_fix_keys_equals_fix_groups_on_the_same_parts(drift):
    s, y, seg = drift["score"].to_numpy(), drift["label"].to_numpy(), drift["segment"].to_numpy()
    part = parts_for(s.size, "split", seed=0, test_size=0.3)
    kc = _keyed(s, y, seg, Key("segment"), part)
    fix = KM.fix_keys(kc, "isotonic", Scheme(), n_boot=0)
    ref = G.fix_groups(s, y, seg, Scheme(kind="column", train_value="fit"), "isotonic",
                       split=np.where(part == 0, "fit", "test"), n_boot=0, column="segment")
    assert fix.mbct_params == ref.mbct_params
    pd.testing.assert_frame_equal(fix.table, ref.table, atol=1e-9)    # same fits (see the docstring), same ECE
    for key in ref.reports:
        assert fix.reports[key].table["rows"].tolist() == ref.reports[key].table["rows"].tolist()


def test_mbct_on_keyed_cells_fixes_the_drift_samples_bad_segment(drift):
    """The figure of the Groups & time page on cells: judged by 5-fold cross-fitting (every row judged once; a
    single hashed 70/30 split judges about 600 partner rows, where a binned ECE's noise is near MBCT's gain)."""
    s, y, seg = drift["score"].to_numpy(), drift["label"].to_numpy(), drift["segment"].to_numpy()
    kc = _keyed(s, y, seg, Key("segment"), parts_for(s.size, "kfold", seed=0, k=5))
    t = KM.fix_keys(kc, "isotonic", Scheme(kind="kfold"), n_boot=0).table
    # the score-only calibrator fixes the average, not the partner segment; MBCT on the segment fixes both
    assert t.loc[G.ALL_ROWS, "isotonic"] < 0.2 * t.loc[G.ALL_ROWS, "uncalibrated"]
    assert t.loc[MISCALIBRATED, "isotonic"] > 4 * t.loc["app", "isotonic"]
    assert t.loc[MISCALIBRATED, "mbct"] < 0.5 * t.loc[MISCALIBRATED, "isotonic"]


def test_fix_keys_kfold_judges_every_row_once_by_the_fit_on_the_other_folds():
    s, y, g = _data(2400, seed=9)
    part = parts_for(s.size, "kfold", seed=3, k=3)
    fix = KM.fix_keys(_keyed(s, y, g, Key("g"), part), "platt", Scheme(kind="kfold", n_folds=3), n_boot=0,
                      mbct_params={"bin_size": 100})
    pairs = [(np.flatnonzero(part != f), np.flatnonzero(part == f)) for f in range(3)]
    names, order, _, _ = make_groups(g)
    ref = G.fix_made_groups(s, y, np.ones(s.size), False, names, order, "g", pairs, Scheme(kind="kfold", n_folds=3),
                            "platt", mbct_params={"bin_size": 100}, n_boot=0)
    # Platt's Newton fit stops at the floating-point limit (test_weights: maps agree to 1e-9 relative)
    pd.testing.assert_frame_equal(fix.table, ref.table, atol=1e-8)
    assert fix.reports["uncalibrated"].overall["rows"] == s.size


def test_wrong_keys_and_parts_are_refused_with_reasons():
    s, y, g = _data(600)
    kc = _keyed(s, y, g, Key("g"))
    with pytest.raises(SettingsError, match="keyed by a period"):
        KM.over_periods(kc)
    with pytest.raises(DataError, match="split scheme"):
        KM.fix_keys(kc)                                        # every cell in part 0: nothing held out
    with pytest.raises(DataError, match="3-fold"):
        KM.fix_keys(_keyed(s, y, g, Key("g"), parts_for(s.size, "kfold", k=5)), scheme=Scheme(kind="kfold",
                                                                                                n_folds=3))
    with pytest.raises(SettingsError, match="score alone"):
        KM.fix_keys(_keyed(s, y, g, Key("g"), parts_for(s.size, "split")), "mbct")


# -- periods -----------------------------------------------------------------------------------------------------
def test_over_periods_equals_over_time(drift):
    kc = _keyed(drift["score"], drift["label"], drift["date"], Key("date", "period", "M"))
    rep = KM.over_periods(kc, n_boot=20, seed=2)
    ref = D.over_time(drift["score"], drift["label"], drift["date"], freq="M", n_boot=20, seed=2, column="date")
    _same_table(rep.table, ref.table)
    assert (rep.table["start"] == ref.table["start"]).all() and rep.table["rows"].sum() == len(drift)
    assert rep.periods.labels == ref.periods.labels and rep.notes == ref.notes
    for k in ref.reliability:
        pd.testing.assert_frame_equal(rep.reliability[k], ref.reliability[k], check_dtype=False, atol=ATOL)


def test_rows_without_a_date_are_left_out_and_counted():
    s, y, _ = _data(900, seed=3)
    dates = np.where(np.arange(900) % 10 == 0, "", np.repeat(["2025-01-05", "2025-02-05", "2025-03-05"], 300))
    rep = KM.over_periods(_keyed(s, y, dates, Key("d", "period", "M")), n_boot=0)
    assert rep.periods.n_left_out == 90 and rep.table["rows"].sum() == 810


def test_staleness_of_equals_staleness_and_the_january_calibrator_goes_stale(drift):
    kc = _keyed(drift["score"], drift["label"], drift["date"], Key("date", "period", "M"))
    st = KM.staleness_of(kc, "isotonic")
    ref = D.staleness(drift["score"], drift["label"], drift["date"], "isotonic", freq="M", column="date")
    # PAV maps equal to 1e-15, ECE sums to rounding (see the docstring)
    np.testing.assert_allclose(st.matrix.to_numpy(), ref.matrix.to_numpy(), atol=ATOL, equal_nan=True)
    pd.testing.assert_frame_equal(st.table, ref.table, atol=ATOL)
    pd.testing.assert_frame_equal(st.by_age, ref.by_age, atol=ATOL)
    stale, fresh = st.table[D.STALE_COL], st.table[D.FRESH_COL]
    assert 0.15 < stale.iloc[-1] < 0.21 and fresh.max() < 0.06        # January's calibrator by December: ~0.18
    with pytest.raises(SettingsError, match="keyed by a period"):
        KM.staleness_of(_keyed(*_data(300)[:2], _data(300)[2], Key("g")))
