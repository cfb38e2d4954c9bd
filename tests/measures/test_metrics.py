"""Metrics: hand-computed cases, the BBQ authors' published figures, invariants."""
import math

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import brier_score_loss, log_loss as sk_log_loss, roc_auc_score

from calibdash.measures import calibration as M, mvce as MV
from calibdash.core.errors import DataError, SettingsError
from tests.conftest import shared_file

P4 = np.array([0.1, 0.4, 0.35, 0.8])
Y4 = np.array([0, 0, 1, 1])


def test_ece_mce_uniform_hand_computed():
    # 2 bins: [0, .5) holds .1 .4 .35 (mean .28333, observed 1/3); [.5, 1] holds .8 (observed 1)
    assert M.ece(P4, Y4, n_bins=2, strategy="uniform") == pytest.approx(0.75 * (1 / 3 - 0.85 / 3) + 0.25 * 0.2)
    assert M.mce(P4, Y4, n_bins=2, strategy="uniform") == pytest.approx(0.2)


def test_one_default_binning_everywhere():
    """ECE, MCE, the reliability table and summary all default to 10 equal-count bins, and say so."""
    rng = np.random.default_rng(3)
    p = rng.uniform(size=997)
    y = (rng.uniform(size=997) < p ** 2).astype(int)
    assert (M.DEFAULT_N_BINS, M.DEFAULT_STRATEGY) == (10, "quantile")
    q = M.ece(p, y, 10, "quantile")
    assert q != M.ece(p, y, 10, "uniform")            # the choice matters on this data
    assert M.ece(p, y) == q and M.summary(p, y)["ECE"] == q
    assert M.mce(p, y) == M.mce(p, y, 10, "quantile") == M.summary(p, y)["MCE"]
    assert M.reliability_table(p, y)["count"].tolist() == [100] * 7 + [99] * 3
    assert M.binning_label() == "10 equal-count bins"
    assert M.binning_label(15, "uniform") == "15 equal-width bins"


def test_quantile_bins_spread_remainder_over_first_bins():
    ids = M.bin_assignments(np.linspace(0, 1, 7), n_bins=3, strategy="quantile")
    assert ids.tolist() == [0, 0, 0, 1, 1, 2, 2]


def test_quantile_ece_hand_computed():
    # sorted: .1 .35 | .4 .8 -> gaps |.225 - .5| and |.6 - .5|
    assert M.ece(P4, Y4, n_bins=2, strategy="quantile") == pytest.approx(0.5 * 0.275 + 0.5 * 0.1)
    assert M.mce(P4, Y4, n_bins=2, strategy="quantile") == pytest.approx(0.275)


def test_uniform_last_bin_holds_one():
    assert M.bin_assignments(np.array([0.0, 0.999, 1.0]), 10, "uniform").tolist() == [0, 9, 9]


def test_reproduces_bbq_authors_quadratic_svm_block():
    """Raw quadratic-SVM scores: RMSE .1263 AUC .9999 ACC .9910 MCE .2463 ECE .0495 (output.txt).

    Our values agree to within one unit of the published 4th decimal (RMSE 0.126354 and
    ECE 0.049556 print as .1263 / .0495 there, which looks like truncation).
    """
    p = np.loadtxt(shared_file("svm-quadratic-scores", "test_data_y.csv"))
    y = np.loadtxt(shared_file("svm-quadratic-scores", "test_data_z.csv")).astype(int)
    auc = M.auc(p, y)
    got = {"RMSE": M.rmse(p, y), "AUC": max(auc, 1 - auc), "ACC": M.accuracy(p, y),
           "MCE": M.mce(p, y, 10, "quantile"), "ECE": M.ece(p, y, 10, "quantile")}
    want = {"RMSE": .1263, "AUC": .9999, "ACC": .9910, "MCE": .2463, "ECE": .0495}
    for k in want:
        assert abs(got[k] - want[k]) <= 1e-4, (k, got[k], want[k])
    # equal-width bins give a clearly different MCE: the binning strategy matters
    assert abs(M.mce(p, y, 10, "uniform") - .2463) > 1e-2


def test_auc_matches_sklearn_with_ties():
    rng = np.random.default_rng(0)
    p = np.round(rng.uniform(size=500), 1)
    y = (rng.uniform(size=500) < p).astype(int)
    assert M.auc(p, y) == pytest.approx(roc_auc_score(y, p))


def test_auc_one_class_is_nan():
    assert math.isnan(M.auc([0.2, 0.3], [1, 1]))


def test_brier_logloss_rmse_accuracy():
    assert M.brier(P4, Y4) == pytest.approx(brier_score_loss(Y4, P4))
    assert M.log_loss(P4, Y4) == pytest.approx(sk_log_loss(Y4, P4))
    assert M.rmse(P4, Y4) == pytest.approx(math.sqrt(brier_score_loss(Y4, P4)))


def test_accuracy_threshold_hand_computed():
    # .1 -> 0 right, .4 -> 0 right, .35 -> 0 wrong (label 1), .8 -> 1 right
    assert M.accuracy(P4, Y4) == 0.75
    assert M.accuracy([0.5, 0.49], [1, 0]) == 1.0      # 0.5 counts as positive


def test_pud_hand_computed():
    assert M.pud([0.2, 0.2, 0.1], [1, 0, 0]) == pytest.approx(1 / 0.5)


def test_mvce_single_bin_is_global_gap():
    p = np.array([0.2, 0.4, 0.6, 0.9])
    y = np.array([0, 1, 1, 1])
    assert M.mvce(p, y, bin_size=4, n_views=7) == pytest.approx(abs(p.mean() - y.mean()))


def test_mvce_matches_manual_views():
    rng = np.random.default_rng(3)
    p = rng.uniform(size=103)
    y = (rng.uniform(size=103) < p).astype(int)
    views = np.random.default_rng(11)
    manual = []
    for _ in range(5):
        perm = views.permutation(103)
        d = (p - y)[perm]
        ids = np.minimum(np.arange(103) // 10, 9)         # 10 bins of 10, the last takes the remainder 3
        gaps = [abs(d[ids == b].mean()) for b in range(10)]
        manual.append(np.sqrt(np.mean(np.square(gaps))))
    assert M.mvce(p, y, bin_size=10, n_views=5, p=2, seed=11) == pytest.approx(np.mean(manual))


def test_mvce_bounds_global_gap_from_above(noisy):
    s, y = noisy
    assert M.mvce(s, y) >= abs(s.mean() - y.mean()) - 1e-12


def test_reliability_table_counts_and_gaps():
    t = M.reliability_table(P4, Y4, n_bins=4, strategy="uniform")
    assert t["count"].tolist() == [1, 2, 0, 1]
    assert np.isnan(t.loc[2, "obs_freq"]) and np.isnan(t.loc[2, "ci_low"])
    assert t.loc[1, "mean_pred"] == pytest.approx(0.375)
    assert t.loc[1, "gap"] == pytest.approx(0.5 - 0.375)
    assert t.loc[1, "pud"] == pytest.approx(1 / 0.75)


def test_wilson_and_clopper_pearson_known_values():
    p = np.full(10, 0.5)
    y = np.array([1] * 5 + [0] * 5)
    w = M.reliability_table(p, y, n_bins=1)
    assert w.loc[0, "ci_low"] == pytest.approx(0.2366, abs=1e-4)
    assert w.loc[0, "ci_high"] == pytest.approx(0.7634, abs=1e-4)
    cp = M.reliability_table(p, y, n_bins=1, interval="clopper-pearson")
    assert cp.loc[0, "ci_low"] == pytest.approx(0.1871, abs=1e-4)
    assert cp.loc[0, "ci_high"] == pytest.approx(0.8129, abs=1e-4)


def test_quantile_table_edges_are_bin_extremes():
    t = M.reliability_table(P4, Y4, n_bins=2, strategy="quantile")
    assert t["lower"].tolist() == [0.1, 0.4] and t["upper"].tolist() == [0.35, 0.8]


def test_summary_has_every_metric(noisy):
    s, y = noisy
    out = M.summary(s, y)
    assert list(out) == list(M.METRIC_NAMES)
    assert out["ECE"] == pytest.approx(M.ece(s, y, 10, "quantile"))


@pytest.mark.parametrize("probs,labels,match", [
    ([0.2, 1.2], [0, 1], r"\[0, 1\]"),
    ([0.2, np.nan], [0, 1], "missing"),
    ([0.2, 0.3], [0, 1, 1], "labels has 3"),
    ([0.2, 0.3, 0.4], [0, 1, 2], "3 distinct labels"),
    ([], [], "empty"),
])
def test_bad_input_raises_data_error(probs, labels, match):
    with pytest.raises(DataError, match=match):
        M.ece(probs, labels)


# ---------------------------------------------------------------------------
# weights: a row of weight w counts as w rows (score cells)
# ---------------------------------------------------------------------------
def _tied(n=3000, seed=1, decimals=2):
    """Scores rounded to ``decimals`` (many tied groups with both labels), labels drawn with P = s**1.3."""
    rng = np.random.default_rng(seed)
    s = np.round(rng.beta(2, 3, n), decimals)
    y = (rng.random(n) < s ** 1.3).astype(int)
    return s, y


def _counts(n, seed=2):
    """Whole weights 0 .. 3, zeros included."""
    return np.random.default_rng(seed).integers(0, 4, n)


def _cells(s, y):
    """Rows -> (score, label, count) cells, in an order unrelated to the rows'."""
    t = pd.DataFrame({"s": s, "y": y}).value_counts().reset_index()
    return t["s"].to_numpy(), t["y"].to_numpy(), t["count"].to_numpy()


#: every scalar metric with the settings it is checked under
SCALARS = [(name, {}) for name in ("brier", "rmse", "log_loss", "auc", "accuracy", "pud")] + [
    (name, {"n_bins": b, "strategy": st}) for name in ("ece", "mce") for st in ("uniform", "quantile")
    for b in (1, 7, 10, 40)]


@pytest.mark.parametrize("name,kw", SCALARS + [("mvce", {"n_views": 7, "seed": 4})])
def test_whole_weights_equal_repeated_rows(name, kw):
    s, y = _tied()
    k = _counts(s.size)
    assert (k == 0).any()
    weighted = getattr(M, name)(s, y, sample_weight=k, **kw)
    assert weighted == pytest.approx(getattr(M, name)(np.repeat(s, k), np.repeat(y, k), **kw), rel=0, abs=1e-12)


@pytest.mark.parametrize("name,kw", SCALARS)
def test_cells_equal_their_rows(name, kw):
    s, y = _tied(seed=6)
    cs, cy, cn = _cells(s, y)
    assert cs.size < s.size / 5                                 # the cells really compress
    assert getattr(M, name)(cs, cy, sample_weight=cn, **kw) == pytest.approx(getattr(M, name)(s, y, **kw),
                                                                           rel=0, abs=1e-12)


@pytest.mark.parametrize("strategy,interval", [("quantile", "wilson"), ("uniform", "clopper-pearson")])
def test_reliability_table_of_weights_equals_repeated_rows_and_cells(strategy, interval):
    s, y = _tied(seed=8)
    k = _counts(s.size, seed=9)
    t = M.reliability_table(s, y, 10, strategy, interval, sample_weight=k)
    pd.testing.assert_frame_equal(t, M.reliability_table(np.repeat(s, k), np.repeat(y, k), 10, strategy, interval),
                                  rtol=0, atol=1e-12)
    cs, cy, cn = _cells(s, y)
    pd.testing.assert_frame_equal(M.reliability_table(cs, cy, 10, strategy, interval, sample_weight=cn),
                                  M.reliability_table(s, y, 10, strategy, interval), rtol=0, atol=1e-12)


def test_summary_of_weights_equals_repeated_rows_and_of_cells_equals_rows():
    s, y = _tied(seed=10)
    k = _counts(s.size, seed=11)
    weighted, repeated = M.summary(s, y, sample_weight=k), M.summary(np.repeat(s, k), np.repeat(y, k))
    assert weighted == pytest.approx(repeated, rel=0, abs=1e-12)           # MVCE included: same rows, same seed
    cs, cy, cn = _cells(s, y)
    by_cells, by_rows = M.summary(cs, cy, sample_weight=cn), M.summary(s, y)
    # MVCE shuffles rows: the cells' rows come in another order, so only its distribution is shared
    assert {m: by_cells[m] for m in M.METRIC_NAMES[:-1]} == pytest.approx(
        {m: by_rows[m] for m in M.METRIC_NAMES[:-1]}, rel=0, abs=1e-12)


def test_quantile_bin_assignments_of_weights_equal_repeated_rows():
    s, y = _tied(seed=12)
    k = _counts(s.size, seed=13)
    ids = M.bin_assignments(s, 10, "quantile", sample_weight=k)
    assert np.array_equal(np.repeat(ids, k), M.bin_assignments(np.repeat(s, k), 10, "quantile"))


def test_unit_weights_change_nothing():
    s, y = _tied(seed=14)
    ones = np.ones(s.size)
    assert M.summary(s, y, sample_weight=ones) == pytest.approx(M.summary(s, y), rel=0, abs=1e-12)


# ---------------------------------------------------------------------------
# equal-count bins: tied groups split proportionally, independent of row order
# ---------------------------------------------------------------------------
# cells: (0.1, 0) x2, (0.3, 1) x1, (0.3, 0) x3, (0.8, 1) x1, (0.8, 0) x1 -- N = 8, two bins of 4.
# The 0.3 group fills [2, 6): half of it (weight 2, 0.5 positive, prediction sum 0.6) in each bin.
# bin 0: sum p = .2 + .6 = .8, positives .5 -> |.3| / 4;  bin 1: sum p = .6 + 1.6 = 2.2, positives 1.5 -> |.7| / 4
CELL_P = np.array([0.1, 0.3, 0.3, 0.8, 0.8])
CELL_Y = np.array([0, 1, 0, 1, 0])
CELL_W = np.array([2, 1, 3, 1, 1])


def test_quantile_splits_a_straddling_tied_group_proportionally_by_hand():
    assert M.ece(CELL_P, CELL_Y, 2, sample_weight=CELL_W) == pytest.approx((0.3 + 0.7) / 8, abs=1e-15)
    assert M.mce(CELL_P, CELL_Y, 2, sample_weight=CELL_W) == pytest.approx(0.7 / 4, abs=1e-15)
    t = M.reliability_table(CELL_P, CELL_Y, 2, sample_weight=CELL_W)
    assert t["count"].tolist() == [4, 4]
    assert t["mean_pred"].tolist() == pytest.approx([0.2, 0.55], abs=1e-15)
    assert t["obs_freq"].tolist() == pytest.approx([0.125, 0.375], abs=1e-15)
    assert t["lower"].tolist() == [0.1, 0.3] and t["upper"].tolist() == [0.3, 0.8]


def test_the_rank_cut_depends_on_row_order_and_quantile_does_not():
    # the same 8 rows; the rank cut puts the first two 0.3 rows in bin 0, so their labels decide it
    p = np.repeat(CELL_P, CELL_W)
    y_pos_first = np.repeat(CELL_Y, CELL_W)                       # 0.3 rows: 1, 0, 0, 0
    y_pos_last = y_pos_first.copy()
    y_pos_last[2:6] = [0, 0, 0, 1]
    # bin 0 holds positives 1 or 0: (|.8 - 1| + |2.2 - 1|) / 8 and (|.8 - 0| + |2.2 - 2|) / 8
    assert M.ece(p, y_pos_first, 2, "rank") == pytest.approx(1.4 / 8, abs=1e-15)
    assert M.ece(p, y_pos_last, 2, "rank") == pytest.approx(1.0 / 8, abs=1e-15)
    assert M.ece(p, y_pos_first, 2) == M.ece(p, y_pos_last, 2) == pytest.approx(1.0 / 8, abs=1e-15)


def test_one_tied_group_gives_its_own_gap_for_any_number_of_bins():
    # ten rows at 0.4, three positive: bins of 4, 3, 3 each get 3/10 of the positives
    p, y = np.full(10, 0.4), np.r_[1, 1, 1, np.zeros(7, int)]
    for n_bins in (1, 3, 7, 10, 25):
        assert M.ece(p, y, n_bins) == pytest.approx(0.1, abs=1e-15)
        assert M.mce(p, y, n_bins) == pytest.approx(0.1, abs=1e-15)
    t = M.reliability_table(p, y, 3)
    assert t["count"].tolist() == [4, 3, 3] and t["obs_freq"].tolist() == pytest.approx([0.3] * 3, abs=1e-15)


def test_quantile_metrics_do_not_depend_on_row_order():
    s, y = _tied(seed=15)
    k = _counts(s.size, seed=16)
    perm = np.random.default_rng(17).permutation(s.size)
    for w in (None, k):
        wp = None if w is None else w[perm]
        for n_bins in (7, 10):
            assert M.ece(s[perm], y[perm], n_bins, sample_weight=wp) == pytest.approx(
                M.ece(s, y, n_bins, sample_weight=w), rel=0, abs=1e-12)
            assert M.mce(s[perm], y[perm], n_bins, sample_weight=wp) == pytest.approx(
                M.mce(s, y, n_bins, sample_weight=w), rel=0, abs=1e-12)
    # while the rank cut moves: the tied groups' labels fall in the bins by row order (ECE may not show it
    # here: every bin over-estimates, and then ECE is the global gap whatever the split)
    assert abs(M.mce(s[perm], y[perm], 10, "rank") - M.mce(s, y, 10, "rank")) > 1e-3


@pytest.mark.parametrize("n,n_bins", [(7, 3), (100, 10), (997, 10), (5000, 15), (9, 20)])
def test_quantile_equals_the_rank_cut_without_ties(n, n_bins):
    rng = np.random.default_rng(n)
    p = rng.uniform(size=n)
    y = (rng.uniform(size=n) < p).astype(int)
    assert np.unique(p).size == n
    assert np.array_equal(M.bin_assignments(p, n_bins, "quantile"), M.bin_assignments(p, n_bins, "rank"))
    for name in ("ece", "mce"):
        assert getattr(M, name)(p, y, n_bins, "quantile") == pytest.approx(getattr(M, name)(p, y, n_bins, "rank"),
                                                                           rel=0, abs=1e-14)
    pd.testing.assert_frame_equal(M.reliability_table(p, y, n_bins, "quantile"),
                                  M.reliability_table(p, y, n_bins, "rank"), rtol=0, atol=1e-14)


def test_quantile_bin_assignment_of_a_tied_group_is_the_bin_of_its_middle():
    # 0.1 | 0.3 x4 | 0.8 x3, two bins of 4: the 0.3 group fills [1, 5), its middle 3 lies in bin 0
    p = np.r_[0.1, np.full(4, 0.3), np.full(3, 0.8)]
    assert M.bin_assignments(p, 2).tolist() == [0] * 5 + [1] * 3
    # weighted: the 0.1 row weighs 3 and pushes the group's middle (3 + 2 = 5) past the edge at 5 of 10
    assert M.bin_assignments(p, 2, sample_weight=[3, 1, 1, 1, 1, 1, 1, 1]).tolist() == [0] + [1] * 7


def test_fractional_weights_make_equal_shares_and_scale_freely():
    # total 7.5 in 3 bins of 2.5: 0.2 weighs 3 (negative), 0.6 weighs 4.5 (positive); bin 1 holds 0.5 of the
    # 0.2 cell and 2 of the 0.6 cell: mean (0.1 + 1.2) / 2.5, observed 2 / 2.5
    t = M.reliability_table([0.2, 0.6], [0, 1], 3, sample_weight=[3.0, 4.5])
    assert t["count"].tolist() == [2.5, 2.5, 2.5]
    assert t["mean_pred"].tolist() == pytest.approx([0.2, 0.52, 0.6], abs=1e-15)
    assert t["obs_freq"].tolist() == pytest.approx([0.0, 0.8, 1.0], abs=1e-15)
    # so scaling fractional weights changes nothing (weights that sum to 1 still make ten bins)
    s, y = _tied(seed=20)
    w = np.random.default_rng(21).exponential(size=s.size)
    for c in (1 / w.sum(), 7.3):
        assert M.ece(s, y, sample_weight=c * w) == pytest.approx(M.ece(s, y, sample_weight=w), rel=1e-12)
        assert M.mce(s, y, sample_weight=c * w) == pytest.approx(M.mce(s, y, sample_weight=w), rel=1e-12)
    assert M.reliability_table(s, y, sample_weight=w / w.sum())["count"].tolist() == pytest.approx([0.1] * 10,
                                                                                                 rel=1e-12)


def test_weighted_intervals_use_the_weight_sum_as_trials():
    # five positive and five negative rows as two cells: the known 10-trial intervals
    w = M.reliability_table([0.5, 0.5], [1, 0], n_bins=1, sample_weight=[5, 5])
    assert w.loc[0, "count"] == 10
    assert w.loc[0, "ci_low"] == pytest.approx(0.2366, abs=1e-4)
    assert w.loc[0, "ci_high"] == pytest.approx(0.7634, abs=1e-4)
    cp = M.reliability_table([0.5, 0.5], [1, 0], n_bins=1, interval="clopper-pearson", sample_weight=[5, 5])
    assert cp.loc[0, "ci_low"] == pytest.approx(0.1871, abs=1e-4)


# ---------------------------------------------------------------------------
# AUC: Mann-Whitney with weights and ties
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["whole", "fractional"])
def test_weighted_auc_matches_sklearn(kind):
    s, y = _tied(seed=18, decimals=1)                           # about ten tied groups
    rng = np.random.default_rng(19)
    w = rng.integers(0, 5, s.size) if kind == "whole" else rng.exponential(size=s.size)
    assert M.auc(s, y, sample_weight=w) == pytest.approx(roc_auc_score(y, s, sample_weight=w), rel=0, abs=1e-12)


def test_weighted_auc_hand_computed():
    # positives: 0.2 (w 2), 0.5 (w 1); negatives: 0.5 (w 3), 0.1 (w 1)
    # pairs: 0.2 beats 0.1 (2*1), loses to 0.5 (0); 0.5 beats 0.1 (1*1), ties 0.5 (1*3/2) -> 4.5 / (3 * 4)
    assert M.auc([0.2, 0.5, 0.5, 0.1], [1, 1, 0, 0], sample_weight=[2, 1, 3, 1]) == pytest.approx(4.5 / 12)


def test_auc_is_nan_when_one_class_has_no_weight():
    assert math.isnan(M.auc([0.2, 0.3, 0.4], [1, 0, 1], sample_weight=[1, 0, 2]))


# ---------------------------------------------------------------------------
# refusals
# ---------------------------------------------------------------------------
def test_rank_cut_refuses_weights():
    with pytest.raises(SettingsError, match="rank"):
        M.ece(P4, Y4, 2, "rank", sample_weight=[1, 1, 1, 1])
    with pytest.raises(SettingsError, match="rank"):
        M.bin_assignments(P4, 2, "rank", sample_weight=[1, 1, 1, 1])
    assert M.binning_label(10, "rank") == "10 rank-cut equal-count bins"
    assert "rank" not in M.STRATEGIES                          # not offered to users


@pytest.mark.parametrize("bad, words", [([1, 1, -1, 1], "negative"), ([1, 1, 1], "3 values"),
                                        ([0, 0, 0, 0], "sums to zero"), ([1, np.nan, 1, 1], "missing")])
def test_bad_weights_raise_data_error(bad, words):
    with pytest.raises(DataError, match=words):
        M.summary(P4, Y4, sample_weight=bad)


def test_mvce_refuses_fractional_weights():
    with pytest.raises(DataError, match="whole row counts; row 1"):
        M.mvce(P4, Y4, sample_weight=[1, 0.5, 2, 1])


# ---------------------------------------------------------------------------
# MVCE above max_rows: a uniform sample of the weighted rows
# ---------------------------------------------------------------------------
def _score_cells(n_scores, seed, exponent):
    """Score cells of about 1000 rows per distinct score; positives drawn with P = score**exponent."""
    rng = np.random.default_rng(seed)
    v = rng.beta(2, 3, n_scores)
    n = rng.integers(500, 1500, n_scores)
    pos = rng.binomial(n, v ** exponent)
    return np.r_[v, v], np.r_[np.ones(n_scores, int), np.zeros(n_scores, int)], np.r_[pos, n - pos]


@pytest.mark.parametrize("exponent, bin_size", [(1.15, None), (1.0, None), (1.0, 5_000)])
def test_mvce_of_cells_above_max_rows_is_distributed_as_the_rows_views(exponent, bin_size):
    """Above max_rows the bins' residual sums are drawn with the exact moments of a random partition.

    On miscalibrated (every bin's gap of one sign) and calibrated (MVCE is bin noise) cells of about
    1e6 rows, with ten bins per view and with bins of 5,000 rows, the cells' value matches the mean
    of the row-level views within three standard errors of the two means, and its views spread as
    the rows' views do.
    """
    s, y, w = _score_cells(1000, seed=5, exponent=exponent)
    rows_p, rows_y = np.repeat(s, w), np.repeat(y, w)
    n = int(w.sum())
    m = n // 10 if bin_size is None else bin_size
    rows = MV.row_views(rows_p, rows_y, m, 60, 1.0, 3)
    cells = MV.partition_views(s - y, w, m, 400, 1.0, 4)
    se = np.sqrt(rows.var(ddof=1) / rows.size + cells.var(ddof=1) / cells.size) + 1e-12
    assert abs(cells.mean() - rows.mean()) < 3 * se + 1e-9, (cells.mean(), rows.mean(), se)
    assert cells.std() == pytest.approx(rows.std(), rel=0.35, abs=1e-9)
    assert M.mvce(s, y, bin_size=bin_size, sample_weight=w, max_rows=n - 1) == pytest.approx(cells.mean(),
                                                                                             abs=4 * se + 1e-9)


def test_mvce_above_max_rows_costs_the_cells_not_the_rows():
    s, y, w = _score_cells(1000, seed=5, exponent=1.15)
    big = w * 10_000                                              # ten billion rows
    value = M.mvce(s, y, sample_weight=big)
    assert value == pytest.approx(M.mvce(s, y, sample_weight=w, max_rows=1), rel=1e-3)
